"""The plan stage: a checked spec in, an immutable `Plan` out (see `build_plan`)."""

from gpustack.plan.model import Plan
from gpustack.plan.planner import build_plan

__all__ = ["Plan", "build_plan"]
