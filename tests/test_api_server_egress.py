"""`settings.api_server_cidrs`: the in-cluster jobs' NetworkPolicies allow the API server's ports at the
API server's addresses only, judged by NetworkPolicy's own egress rules."""

from __future__ import annotations

import ipaddress
import json

import pytest
import yaml

from conftest import EVERY_CLOUD, spec_text
from gpustack.clouds import CLOUDS
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.render import in_cluster
from gpustack.spec import load_text
from test_autostop import notebook
from test_cost import gpus_sold
from test_render import validate

API_SERVER = "10.20.0.15"


def spec_with(cidrs: object, cloud: str = "aws") -> str:
    spec = yaml.safe_load(spec_text([notebook("nb", "team-a", gpu=gpus_sold(cloud)[0])], (cloud,)))
    spec["targets"][0].setdefault("settings", {})["api_server_cidrs"] = cidrs
    return yaml.safe_dump(spec, sort_keys=False)


def policies(cidrs: object, cloud: str = "aws") -> list[dict]:
    plan = build_plan(load_text(spec_with(cidrs, cloud), "spec.yaml"))
    return [o for o in in_cluster(plan, plan.targets[0]).objects if o["kind"] == "NetworkPolicy"]


def egress_allowed(policy: dict, ip: str, port: int) -> bool:
    """NetworkPolicy egress (networking.k8s.io/v1 NetworkPolicySpec): rules are ORed; a rule matches when
    its `ports` hold the port (none: every port) and one of its `to` peers holds the address (none: any)."""
    for rule in policy["spec"]["egress"]:
        ports = rule.get("ports")
        if ports and not any(p.get("protocol", "TCP") == "TCP" and p["port"] == port for p in ports):
            continue
        peers = rule.get("to")
        if not peers or any("ipBlock" in p and ipaddress.ip_address(ip) in ipaddress.ip_network(p["ipBlock"]["cidr"],
                                                                                                 strict=False)
                            for p in peers):
            return True
    return False


def test_given_the_api_servers_addresses_the_jobs_reach_it_and_nothing_else_on_its_ports():
    [policy] = policies(["10.20.0.0/24"])
    validate(policy)
    assert egress_allowed(policy, API_SERVER, 443)
    assert not egress_allowed(policy, "52.95.110.1", 443)  # any other HTTPS server: refused
    assert not egress_allowed(policy, API_SERVER, 80)


@pytest.mark.parametrize("cloud", EVERY_CLOUD)
def test_the_jobs_reach_the_api_server_on_the_port_of_its_endpoint_and_no_other(cloud):
    """NetworkPolicy implementations judge a connection to the `kubernetes` Service after its 443 is
    translated to the endpoint's port: the cloud's `api_server_ports`, and nothing else is opened."""
    [policy] = policies(["10.20.0.0/24"], cloud)
    ports = CLOUDS.get(cloud).api_server_ports
    assert all(egress_allowed(policy, API_SERVER, port) for port in ports)
    assert not any(egress_allowed(policy, API_SERVER, port) for port in {443, 6443} - set(ports))


# What each cloud's `kubernetes` Service endpoint serves on (the sources are next to the facts).
ENDPOINT_PORTS = {"aws": (443,), "azure": (443,), "gcp": (443,), "oci": (6443,)}


@pytest.mark.parametrize("cloud", EVERY_CLOUD)
def test_oke_opens_6443_and_eks_aks_gke_443(cloud):
    assert CLOUDS.get(cloud).api_server_ports == ENDPOINT_PORTS[cloud]  # a new cloud: add its port here


def test_without_them_the_ports_are_open_to_any_address_as_before():
    plan = build_plan(load_text(spec_text([notebook("nb", "team-a")], ("aws",)), "spec.yaml"))
    [policy] = [o for o in in_cluster(plan, plan.targets[0]).objects if o["kind"] == "NetworkPolicy"]
    assert egress_allowed(policy, "52.95.110.1", 443) and not egress_allowed(policy, API_SERVER, 80)


def test_the_plan_json_carries_them():
    plan = build_plan(load_text(spec_with(["10.20.0.0/24", "10.21.0.7/32"]), "spec.yaml"))
    [target] = json.loads(json.dumps(plan.to_dict()))["targets"]
    assert target["api_server_cidrs"] == ["10.20.0.0/24", "10.21.0.7/32"]


@pytest.mark.parametrize("bad", ["10.20.0.0", "10.20.0.0/33", "256.1.1.1/32", "10.0.0.0/8\n", "fd00::/8", "any"])
def test_a_value_that_is_no_ipv4_cidr_is_a_located_error(bad):
    with pytest.raises(SpecError) as caught:
        build_plan(load_text(spec_with([bad]), "spec.yaml"))
    message = str(caught.value)
    assert "targets[0].settings.api_server_cidrs[0]" in message
    assert ("IPv4 CIDR" if "\n" not in bad else "control character") in message
