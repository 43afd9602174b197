"""The registry of clouds: the one list of clouds gpustack knows.

Adding a cloud
--------------
1. Make its bundle, the package `gpustack/clouds/<name>/` (subpackages here are discovered, so
   nothing else lists the cloud), with the modules of `BUNDLE_PARTS` (`gpustack/clouds/base.py`):
   `facts.py` holds a `Cloud` subclass registered by the decorator::

       @CLOUDS.register
       class Lambda(Cloud):
           name = "lambda"
           aliases = ("lambdalabs",)
           display_name = "Lambda"
           example = ExampleTarget(region="us-west-1", cluster="ml", settings={"project": "p"},
                                   provider_config={"lambda:region": "us-west-1"})
           settings = (Setting("project", True, "string", r"[a-z][a-z0-9-]{0,29}", "a project id"),)
           # Node-pool names: at most 40 characters ... <doc URL>
           pool_names = NameRule(40, r"[a-z][a-z0-9-]*", "-", "<doc URL>")
           unsupported = {Feature.SPOT: "Lambda sells no spot capacity"}

   and `__init__.py` imports it; `backend.py` declares the Pulumi resources, `readers.py` reads
   them back for the guardrails, `mocks.py` answers the Pulumi mocks.
2. Add its instance types to `gpustack/catalog/data/<name>.csv` (one file per cloud), with their source.
3. Add its golden cases. `tests/test_cloud_bundles.py` fails until every registered cloud has all of
   these, and while shared code names a cloud.

`tests/fakecloud/` is a worked example, a fifth cloud kept in the test suite: `tests/test_fake_cloud.py`
registers it inside `CLOUDS.scoped()` (a bundle outside this package is registered by whoever loads
it) and takes a spec for it through validate, plan, render, the Pulumi program and the guardrails.

Shared code asks the cloud object for facts (`cloud.pool_names`, `cloud.supports(...)`); it never
compares a cloud's name.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
from collections.abc import Iterator

from gpustack.clouds.base import Cloud, Feature, NameRule, Setting
from gpustack.errors import did_you_mean

__all__ = ["CLOUDS", "Cloud", "Feature", "NameRule", "Setting"]


class CloudRegistry:
    def __init__(self) -> None:
        self._clouds: dict[str, Cloud] = {}
        self._aliases: dict[str, str] = {}
        self._loaded = False
        # Changes with every registration: what is cached over all clouds is keyed by it.
        self.generation = 0

    def register(self, cls: type[Cloud]) -> type[Cloud]:
        for key in (cls.name, *cls.aliases):
            if key in self._clouds or key in self._aliases:
                raise ValueError(f"cloud {key!r} is already registered")
        self._clouds[cls.name] = cls()
        for alias in cls.aliases:
            self._aliases[alias] = cls.name
        self.generation += 1
        return cls

    @contextlib.contextmanager
    def scoped(self) -> Iterator[CloudRegistry]:
        """Clouds registered inside the block are gone after it. A bundle outside gpustack/clouds (the
        test suite's own cloud, tests/fakecloud) is registered this way, by whoever loads it: its
        `Cloud` subclass is passed to `register`, and its parts are imported from its own package."""
        self._load()
        clouds, aliases = dict(self._clouds), dict(self._aliases)
        try:
            yield self
        finally:
            self._clouds, self._aliases = clouds, aliases
            self.generation += 1

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            for bundle in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg):
                importlib.import_module(f"{__name__}.{bundle}")

    def names(self) -> tuple[str, ...]:
        self._load()
        return tuple(sorted(self._clouds))

    def aliases(self) -> dict[str, str]:
        self._load()
        return dict(sorted(self._aliases.items()))

    def get(self, name: str) -> Cloud:
        self._load()
        canonical = self._aliases.get(name, name)
        if canonical not in self._clouds:
            raise KeyError(f"{name!r} is not a cloud{did_you_mean(name, self._clouds)}; "
                           f"known: {', '.join(self.names())}")
        return self._clouds[canonical]

    def __iter__(self) -> Iterator[Cloud]:
        self._load()
        return iter(self._clouds[name] for name in sorted(self._clouds))


CLOUDS = CloudRegistry()
