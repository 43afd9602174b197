"""The subcommands of `gpustack`, one module each, discovered here (no hand-kept list).

A command module defines:

    NAME = "plan"                 # the subcommand
    HELP = "one line for --help"
    ORDER = 20                    # position in --help
    def add_arguments(parser: argparse.ArgumentParser) -> None: ...
    def run(args: argparse.Namespace) -> int: ...   # the exit code

Import heavy modules inside `run`, so every command starts fast.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def commands() -> list[ModuleType]:
    found = [importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__)
             if not m.name.startswith("_")]
    return sorted(found, key=lambda module: (module.ORDER, module.NAME))
