"""Guardrails that cannot be dodged: each way a security review slipped a pool past the policy pack
(or `gpustack check`) is caught."""

from __future__ import annotations

import base64
import dataclasses

from test_check import check, write
from test_policies import RENDER, TOKENS, Pool, pool_resource, urn, validate_resource, validate_stack

UNTAINTED = Pool(gpu_taint=False)


def validate_props(rule: str, cloud: str, props: dict) -> list[str]:
    from pulumi_policy import ResourceValidationArgs

    from test_policies import POLICIES

    token = TOKENS[cloud]
    args = ResourceValidationArgs(token, props, urn(token, "p"), "p", None, None)
    messages: list[str] = []
    POLICIES[rule].validate(args, lambda m, urn=None: messages.append(m))
    return messages


def test_an_eks_group_mixing_a_cpu_and_a_gpu_type_is_a_gpu_pool():
    props = RENDER["aws"](UNTAINTED)
    props["instanceTypes"] = ["m5.large", "p5.48xlarge"]
    assert validate_props("gpu-pool-taint", "aws", props)
    props["instanceTypes"] = ["p5.48xlarge", "m5.large"]
    assert validate_props("gpu-pool-taint", "aws", props)


def test_an_aks_vm_size_in_lower_case_is_still_a_gpu_size():
    props = RENDER["azure"](UNTAINTED)
    props["vmSize"] = "standard_nc24ads_a100_v4"
    assert validate_props("gpu-pool-taint", "azure", props)
    props["vmSize"] = "STANDARD_NC24ADS_A100_V4"
    assert validate_props("gpu-pool-taint", "azure", props)


def oke_script(lines: list[str]) -> str:
    return base64.b64encode(("#!/bin/bash\n" + "\n".join(lines) + "\n").encode()).decode()


def test_an_oke_taint_only_in_a_bash_comment_does_not_count():
    props = RENDER["oci"](Pool())
    assert validate_props("gpu-pool-taint", "oci", props) == []  # the real taint passes
    props["nodeMetadata"]["user_data"] = oke_script([
        '# bash /var/run/oke-init.sh --kubelet-extra-args "--register-with-taints=nvidia.com/gpu=present:NoSchedule"',
        "bash /var/run/oke-init.sh",
    ])
    assert validate_props("gpu-pool-taint", "oci", props)
    props["nodeMetadata"]["user_data"] = oke_script([
        'bash /var/run/oke-init.sh # --kubelet-extra-args "--register-with-taints=nvidia.com/gpu=present:NoSchedule"',
    ])
    assert validate_props("gpu-pool-taint", "oci", props)


def test_an_always_on_window_is_no_auto_stop(tmp_path, capsys):
    lab = {"name": "lab", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 2,
           "schedule": {"days": "Mon-Sun", "hours": "00:00-24:00", "timezone": "UTC"}}
    code, out, _ = check(capsys, write(tmp_path, [lab]))
    assert code == 1 and "dev-pool-auto-stop" in out
    lab["schedule"] = {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "UTC"}
    assert check(capsys, write(tmp_path, [lab]))[0] == 0


def test_a_nan_budget_is_refused_not_a_cap_that_passes_everything():
    big = pool_resource("aws", dataclasses.replace(Pool(), min_nodes=4, max_nodes=4))
    found = validate_stack("stack-gpu-budget", [big], {"maxMonthlyUsd": float("nan")})
    assert len(found) == 1 and "maxMonthlyUsd is nan, not a finite number" in found[0][0]
    found = validate_stack("stack-gpu-budget", [big], {"maxGpus": float("inf")})
    assert len(found) == 1 and "maxGpus is inf" in found[0][0]


def test_an_untainted_gpu_pool_fails_as_before():
    assert validate_resource("gpu-pool-taint", "aws", UNTAINTED)
