"""Run the Pulumi program under mocks and see what it declares: for tests, benchmarks and users.

    from gpustack.testing import run_program
    resources = run_program("stacks/gpustack.yaml", "aws-prod")
    for r in resources: print(r.type, r.name, r.inputs)

No Pulumi CLI, no cloud credentials: `pulumi.runtime.set_mocks` with the real provider SDKs
(https://www.pulumi.com/docs/iac/concepts/testing/unit/). `set_mocks` is process-wide, so each call
installs fresh mocks; inputs arrive with their wire (camelCase) names. What the mocks answer for a
cloud lives in its bundle (`gpustack/clouds/<cloud>/mocks.py`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections.abc import Callable
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc

from gpustack.clouds import CLOUDS


@dataclasses.dataclass(frozen=True)
class Declared:
    type: str
    name: str
    urn: str
    parent: str  # the parent's URN ('' for the stack)
    custom: bool  # False for components
    inputs: dict[str, Any]
    ignore_changes: tuple[str, ...] = ()  # the ignoreChanges option, in the engine's (camelCase) spelling
    dependencies: tuple[str, ...] = ()  # URNs the resource waits for (depends_on and its inputs' resources)
    provider: str = ""  # the provider reference (URN::id) of a custom resource
    aliases: tuple[str, ...] = ()  # its aliases as the SDK sends them (specs or URNs), for URN migrations
    protect: bool = False  # the protect option: `pulumi destroy` refuses to delete it


def auto_name(name: str) -> str:
    """The physical name Pulumi's auto-naming gives a resource declared without one: its logical name, a
    dash and seven random hex digits (https://www.pulumi.com/docs/iac/concepts/resources/names/#autonaming),
    here derived from the name so that runs compare equal."""
    return f"{name}-{hashlib.sha256(name.encode()).hexdigest()[:7]}"


Call = Callable[[dict[str, Any]], dict[str, Any]]
Computed = Callable[[str, dict[str, Any]], dict[str, Any]]


def calls() -> dict[str, Call]:
    """Canned answers for the data sources (invokes) backends call, keyed by token, over every cloud
    (`CALLS` of each bundle's `mocks.py`)."""
    return {token: answer for cloud in CLOUDS for token, answer in cloud.part("mocks").CALLS.items()}


def outputs() -> dict[str, Computed]:
    """Outputs the cloud computes, which the mocks must invent, keyed by resource type, over every
    cloud (`OUTPUTS` of each bundle's `mocks.py`)."""
    return {kind: make for cloud in CLOUDS for kind, make in cloud.part("mocks").OUTPUTS.items()}


class RecordingMocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.calls = calls()
        self.outputs = outputs()

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        computed = dict(args.inputs)
        if args.typ in self.outputs:
            computed.update(self.outputs[args.typ](args.name, dict(args.inputs)))
        return f"{args.name}-id", computed

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]] | None]:
        answer = self.calls.get(args.token)
        # No check failures: an empty list, as the SDK's monitor iterates it (its hint says Optional).
        return (answer(dict(args.args)) if answer else {}), []


class _RecordingMonitor(pulumi_mocks.MockMonitor):
    """The SDK's mock monitor, also noting each resource's parent and inputs."""

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.declared: list[Declared] = []
        self._lock = threading.Lock()

    def RegisterResource(self, request):  # type: ignore[no-untyped-def]
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            inputs = rpc.deserialize_properties(request.object)
            with self._lock:
                aliases = tuple(str(a).replace("\n", " ").strip() for a in request.aliases) + tuple(request.aliasURNs)
                self.declared.append(Declared(request.type, request.name, response.urn, request.parent,
                                              bool(request.custom), dict(inputs), tuple(request.ignoreChanges),
                                              tuple(request.dependencies), request.provider, aliases,
                                              bool(request.protect)))
        return response


def run_program(spec: str, target: str, program: Callable[[], None] | None = None,
                project: str = "gpustack", config: dict[str, str] | None = None) -> list[Declared]:
    """Everything the program declares for `target`, sorted by URN (stable across runs).

    `config` adds Pulumi config (full keys, e.g. {"gpustack:kubeconfig": "..."}; all kept secret)."""
    from gpustack.program import main

    mocks = RecordingMocks()
    monitor = _RecordingMonitor(mocks)
    # set_mocks keeps an existing root stack: drop the previous run's, or this run's resources
    # would be parented to the stack of the previous target.
    pulumi.runtime.settings.set_root_resource(None)  # type: ignore[arg-type]
    pulumi.runtime.set_mocks(mocks, project=project, stack=target, preview=False, monitor=monitor)
    extra = dict(config or {})
    pulumi.runtime.set_all_config({"gpustack:spec": spec, "gpustack:target": target, **extra},
                                  secret_keys=sorted(extra))

    @pulumi.runtime.test
    def run() -> None:
        (program or main)()

    run()
    return sorted(monitor.declared, key=lambda d: d.urn)
