"""The spec stage: YAML in, a checked `Spec` out (see `load_spec`)."""

from gpustack.spec.load import load_spec, load_text
from gpustack.spec.model import Spec

__all__ = ["Spec", "load_spec", "load_text"]
