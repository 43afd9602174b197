"""OKE managed node pools with the Cluster Autoscaler add-on: the default provisioner of OKE.

`compile` spells each planned pool as the node-pool API takes it (`OkeNodePool`, stored in the plan),
from `facts.node_pool_enums`, with the `--register-with-taints` the autoscaler reads for a pool at zero
(`register_with_taints`); `check_pool` checks those values against `facts.ALLOWED`; `backend.py` maps
them to pulumi-oci arguments.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from gpustack.clouds.dra import DraSupport
from gpustack.clouds._enums import check_enums
from gpustack.clouds.base import PRIORITY_EXPANDER, FallbackMechanism, Feature
from gpustack.clouds.oci import facts
from gpustack.clouds.provisioner import Provisioner
from gpustack.clouds.compiled import CompiledPool

if TYPE_CHECKING:
    from gpustack.plan.model import Pool
    from gpustack.spec.model import Target

# The managed-node cloud-init: fetch OKE's own init script and pass kubelet arguments to it
# (https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengusingcustomcloudinitscripts.htm).
# OKE node pools have no taint field, so the kubelet registers the pool's taints itself.
_OKE_INIT = ('curl --fail -H "Authorization: Bearer Oracle" -L0 '
             "http://169.254.169.254/opc/v2/instance/metadata/oke_init_script | base64 --decode >/var/run/oke-init.sh")


@dataclasses.dataclass(frozen=True)
class OkeNodePool(CompiledPool):
    node_source_type: str
    preemption_action: str | None  # preemptible pools
    autoscaler_auth_type: str  # of the target's Cluster Autoscaler add-on
    cloud_init: str  # the node's cloud-init script (node_metadata.user_data, base64-encoded by the backend)
    kubelet_extra_args: str  # node_metadata kubelet-extra-args: the taints the autoscaler reads for a pool at zero

    def enums(self) -> dict[str, str | None]:
        values: dict[str, str | None] = {"node_source_type": self.node_source_type,
                                         "autoscaler_auth_type": self.autoscaler_auth_type}
        if self.preemption_action is not None:
            values["preemption_action"] = self.preemption_action
        return values


def register_with_taints(pool: Pool) -> str:
    """The kubelet argument that registers the pool's taints; in the node pool's `kubelet-extra-args`
    metadata (`facts.KUBELET_EXTRA_ARGS`) the autoscaler reads them for a pool at zero."""
    return "--register-with-taints=" + ",".join(f"{t.key}={t.value}:{t.effect}" for t in pool.taints)


def cloud_init(pool: Pool) -> str:
    """The node's cloud-init script: grow the root filesystem onto the whole boot volume, then OKE's
    init, with the kubelet registering the pool's taints."""
    return (f"#!/bin/bash\n{facts.GROW_ROOT_FILESYSTEM}\n{_OKE_INIT}\n"
            f'bash /var/run/oke-init.sh --kubelet-extra-args "{register_with_taints(pool)}"\n')


class ManagedNodePools(Provisioner):
    name = "managed"
    description = "OKE managed node pools, scaled by OKE's Cluster Autoscaler add-on"
    # DRA: node pools run NVIDIA's DRA driver; OKE's Cluster Autoscaler add-on (the upstream one's OCI provider)
    # cannot grow a pool at zero for a claim.
    dra = DraSupport(
        scale_from_zero=False,
        scale_from_zero_gap="the Cluster Autoscaler's OCI provider builds a node group's template node without ResourceSlices, so its scale-up simulation finds no device for a claim while the group is at zero (https://github.com/kubernetes/autoscaler/issues/7799; only the cluster-api provider models them, https://github.com/kubernetes/autoscaler/pull/7804)",
        source="https://github.com/kubernetes/autoscaler/issues/7799",
    )
    unsupported = {
        Feature.NATIVE_SCHEDULE: "OKE has no scheduled scaling of node pools; the in-cluster auto-stop covers it",
        Feature.INSTANCE_TYPE_ALTERNATIVES: "an OKE node pool has one shape (nodeShape, https://docs.oracle.com/"
                                            "en-us/iaas/api/#/en/containerengine/20180222/NodePool/); "
                                            "settings.provisioner: karpenter takes a list",
    }
    spot_taint = facts.SPOT_TAINT

    def compile(self, pool: Pool, target: Target) -> OkeNodePool:
        enums = facts.node_pool_enums(pool)
        return OkeNodePool(node_source_type=str(enums["node_source_type"]),
                           preemption_action=enums.get("preemption_action"),
                           autoscaler_auth_type=str(enums["autoscaler_auth_type"]),
                           cloud_init=cloud_init(pool), kubelet_extra_args=register_with_taints(pool))

    def check_pool(self, pool: Pool) -> list[str]:
        compiled = pool.compiled
        assert isinstance(compiled, OkeNodePool)
        problems = super().check_pool(pool)
        if pool.capacity == "spot" and (reason := self.spot_available(pool.instance_type)):
            problems.append(f"a preemptible pool cannot use {pool.instance_type}: {reason}")
        problems.extend(check_enums(compiled.enums(), facts.ALLOWED, self.cloud.display_name))
        return problems

    # Node-pool fields that are ForceNew in the Terraform provider pulumi-oci bridges (node_shape,
    # initial_node_labels and placement configs update in place); read by `gpustack diff`.
    _FORCENEW_NODE_POOL = ("https://github.com/oracle/terraform-provider-oci/blob/"
                           "0099227f65258820aa259e044f465748fda8a211/"
                           "internal/service/containerengine/containerengine_node_pool_resource.go")
    replacing_changes = {
        "cluster": f"cluster_id is ForceNew ({_FORCENEW_NODE_POOL})",
        "settings.compartment_id": f"compartment_id is ForceNew ({_FORCENEW_NODE_POOL})",
    }

    # Spot first: the Cluster Autoscaler add-on takes `expander` (default `random`; `price` unsupported:
    # docs.oracle.com .../configuration-arguments-cluster-autoscaler.htm), and its node groups are the
    # node pools by OCID (the `nodes` argument; nodePool.Id() in kubernetes/autoscaler
    # cluster-autoscaler/cloudprovider/oci/nodepools/oci_node_pool.go). An OCID exists only once the
    # pool does, so only the Pulumi program can write the priority ConfigMap, never `gpustack render`.
    fallback_mechanism = FallbackMechanism(
        PRIORITY_EXPANDER,
        node_group=None,
        node_group_example="ocid1.nodepool.oc1.iad.aaaaaaaaexamplenodepoolid",
        namespace="kube-system",  # unconfirmed for the add-on: the upstream autoscaler's namespace
        user_action="declare the in-cluster layer with Pulumi (gpustack:kubeconfig): the program then sets the "
                    "Cluster Autoscaler add-on's expander to priority and writes the ConfigMap with the pools' "
                    "OCIDs; without it (or with settings.cluster_autoscaler: none) set expander=priority and "
                    "create kube-system/cluster-autoscaler-priority-expander yourself from the OCIDs in "
                    "`pulumi stack output pools`",
        source="https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/configuration-arguments-cluster-autoscaler.htm",
    )


PROVISIONER = ManagedNodePools
