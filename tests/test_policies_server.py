"""policies/__main__.py serves the pack as the Pulumi engine runs it: a child process that prints its port
and answers the analyzer's gRPC calls. The engine's side is played here (no Pulumi CLI needed)."""

from __future__ import annotations

import subprocess
import sys

import grpc
import pytest
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from conftest import ROOT

EKS = "aws:eks/nodeGroup:NodeGroup"
UNTAINTED = {"instanceTypes": ["p5.48xlarge"], "capacityType": "ON_DEMAND",
             "labels": {"team": "ml", "environment": "prod", "gpustack.dev/kind": "training"},
             "scalingConfig": {"minSize": 0, "maxSize": 2, "desiredSize": 0}}


@pytest.fixture(scope="module")
def analyzer():
    pack = subprocess.Popen([sys.executable, "__main__.py"], cwd=ROOT / "policies", stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        port = int(pack.stdout.readline().strip() or 0)  # the engine reads the port from the first line
        assert port, pack.stderr.read()
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield analyzer_pb2_grpc.AnalyzerStub(channel)
    finally:
        pack.terminate()
        pack.wait(timeout=30)


def analyze(stub, props: dict, protect: bool = True) -> list[tuple[str, str]]:
    """Diagnostics for an EKS node group; protected, so the replacement advisory stays out of the way."""
    request = analyzer_pb2.AnalyzeRequest(type=EKS, properties=json_format.ParseDict(props, struct_pb2.Struct()),
                                          urn=f"urn:pulumi:prod::ml::{EKS}::train", name="train",
                                          options=analyzer_pb2.AnalyzerResourceOptions(protect=protect))
    return [(d.policyName, d.message) for d in stub.Analyze(request).diagnostics]


def test_the_engine_sees_every_policy_with_its_level_and_schema(analyzer):
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == "gpustack-guardrails"
    policies = {p.name: p for p in info.policies}
    assert sorted(policies) == sorted(["gpu-pool-taint", "gpu-pool-attribution-labels", "spot-gpu-pool-checkpointing",
                                       "inference-pool-not-spot-only", "dev-pool-auto-stop", "stack-gpu-budget",
                                       "node-pool-replacement", "inference-floor-spread"])
    assert policies["node-pool-replacement"].enforcementLevel == analyzer_pb2.ADVISORY
    assert policies["gpu-pool-taint"].enforcementLevel == analyzer_pb2.MANDATORY
    schema = json_format.MessageToDict(policies["stack-gpu-budget"].configSchema.properties)
    assert schema["maxGpus"]["type"] == "integer"


def test_a_resource_is_judged_through_the_engine_protocol(analyzer):
    found = analyze(analyzer, UNTAINTED)
    assert [name for name, _ in found] == ["gpu-pool-taint"]
    assert "[gpu-pool-taint] prod, pool train: GPU pool without the nvidia.com/gpu NoSchedule taint" in found[0][1]
    exposed = analyze(analyzer, UNTAINTED, protect=False)
    assert [name for name, _ in exposed] == ["gpu-pool-taint"]  # replacements are judged per stack


def test_a_value_unknown_in_preview_is_skipped_not_a_crash(analyzer):
    from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE

    assert analyze(analyzer, {**UNTAINTED, "taints": UNKNOWN_ARRAY_VALUE}) == []


def test_a_stack_is_judged_through_the_engine_protocol(analyzer):
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

    def resource(token: str, name: str, props: dict, **links) -> analyzer_pb2.AnalyzerResource:
        return analyzer_pb2.AnalyzerResource(type=token, name=name, urn=f"urn:pulumi:dev::ml::{token}::{name}",
                                             properties=json_format.ParseDict(props, struct_pb2.Struct()), **links)

    notebook = {**UNTAINTED, "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
                "labels": {**UNTAINTED["labels"], "gpustack.dev/kind": "notebook"}}
    group = resource(EKS, "lab", notebook)
    schedule_token = "aws:autoscaling/schedule:Schedule"
    stop = resource(schedule_token, "lab-stop", {"autoscalingGroupName": UNKNOWN_STRING_VALUE},
                    dependencies=[group.urn],
                    propertyDependencies={"autoscalingGroupName": analyzer_pb2.AnalyzerPropertyDependencies(
                        urns=[group.urn])})
    found = analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=[group, stop])).diagnostics
    # The unprotected pool gets the one advisory of the stack about replacements, nothing mandatory.
    assert [(d.policyName, d.enforcementLevel) for d in found] == [("node-pool-replacement", analyzer_pb2.ADVISORY)]
    found = analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=[group])).diagnostics
    mandatory = [(d.policyName, d.urn) for d in found if d.enforcementLevel == analyzer_pb2.MANDATORY]
    assert mandatory == [("dev-pool-auto-stop", group.urn)]
    assert any("[dev-pool-auto-stop] dev, pool lab: notebook pool has no auto-stop schedule" in d.message
               for d in found)


def test_the_config_the_engine_sends_is_applied(analyzer):  # last: it reconfigures the running pack
    labels = struct_pb2.Struct()
    labels.update({"labels": ["team", "cost-center"]})
    analyzer.Configure(analyzer_pb2.ConfigureAnalyzerRequest(policyConfig={
        "gpu-pool-attribution-labels": analyzer_pb2.PolicyConfig(enforcementLevel=analyzer_pb2.ADVISORY,
                                                                 properties=labels),
        "gpu-pool-taint": analyzer_pb2.PolicyConfig(enforcementLevel=analyzer_pb2.DISABLED)}))
    found = analyze(analyzer, UNTAINTED)
    assert [name for name, _ in found] == ["gpu-pool-attribution-labels"]
    assert "attribution label cost-center" in found[0][1]
