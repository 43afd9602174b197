"""What the Pulumi mocks answer for FKS: no data sources, nothing computed beyond the ids."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CALLS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}
OUTPUTS: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {}
