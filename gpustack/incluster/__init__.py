"""Programs that run inside the cluster, shipped as package data and mounted from a ConfigMap.

Each module here is a standalone script: in the cluster it imports only the Python standard library
(the image runs nothing else) and, for idle.py, auto-stop's program mounted beside it; never gpustack. The renderers read a module's source text with
`source(name)`; the tests import the module itself.
"""

from __future__ import annotations

from importlib import resources


def source(module: str) -> str:
    """The text of `gpustack/incluster/<module>.py`, as the ConfigMap carries it."""
    return resources.files(__name__).joinpath(f"{module}.py").read_text(encoding="utf-8")
