"""`gpustack diff`: what a change to the spec does to the pools and the monthly cost of each target."""

from gpustack.diff.compare import diff_plans
from gpustack.diff.model import FieldChange, PlanDiff, PoolChange, TargetDiff
from gpustack.diff.sources import load_plan

__all__ = ["FieldChange", "PlanDiff", "PoolChange", "TargetDiff", "diff_plans", "load_plan"]
