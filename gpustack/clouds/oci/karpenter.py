"""OKE with Oracle's Karpenter provider (KPO): per pool a `karpenter.sh/v1` NodePool and its
`oci.oraclecloud.com/v1beta1` OCINodeClass.

The NodePool and its checks are Karpenter's (`gpustack.clouds.karpenter`); this module adds what is
OKE's: the OCINodeClass (the pinned OKE GPU image, the boot volume sized by the plan's disk and grown
onto, the subnet, the nodes' compartment, freeform tags, the reservation filter of a reserved floor),
KPO's preemptible shapes, its zone spelling, and what KPO's Karpenter core (v1.6.2) lacks: no
NodeOverlay, no `Balanced` consolidation. `backend` is `karpenter_backend.py`.

Facts are from oracle/karpenter-provider-oci at tag v1.0.0 (de2166eb420429501ee7c302b5cce2bc8f6ec873,
which pins sigs.k8s.io/karpenter v1.6.2 in go.mod), each next to the file it is read from.
"""

from __future__ import annotations

import base64
import dataclasses
from typing import TYPE_CHECKING, Any

from gpustack.clouds.dra import DraSupport
from gpustack.clouds import karpenter as core
from gpustack.clouds.base import Feature
from gpustack.clouds.karpenter import ZONE, KarpenterDocs, KarpenterPool, KarpenterProvisioner, Requirement
from gpustack.clouds.oci import facts

if TYPE_CHECKING:
    from gpustack.catalog import InstanceType
    from gpustack.plan.model import Pool
    from gpustack.spec.model import Target

RELEASE = "v1.0.0"
COMMIT = "de2166eb420429501ee7c302b5cce2bc8f6ec873"
_REPO = f"https://github.com/oracle/karpenter-provider-oci/blob/{COMMIT}"
FEATURES_DOC = f"{_REPO}/docs/guide/features.md"
ADVANCED_DOC = f"{_REPO}/docs/guide/advanced-use-cases.md"
NODECLASS_DOC = f"{_REPO}/docs/guide/ocinodeclass.md"
FAQS_DOC = f"{_REPO}/docs/guide/faqs.md"
INSTANCE_TYPES = f"{_REPO}/pkg/providers/instancetype/provider.go"
IMAGES = f"{_REPO}/pkg/providers/image/provider.go"
DRIFT = f"{_REPO}/pkg/cloudprovider/drift.go"
SHAPE_META = f"{_REPO}/chart/config/oci-shape-meta.json"
NODECLASS_TYPES = f"{_REPO}/pkg/apis/v1beta1/ocinodeclass_types.go"
NODEPOOL_CRD = f"{_REPO}/pkg/apis/crds/karpenter.sh_nodepools.yaml"
NODECLASS_CRD = f"{_REPO}/pkg/apis/crds/oci.oraclecloud.com_ocinodeclasses.yaml"
# KPO's Karpenter core (go.mod: sigs.k8s.io/karpenter v1.6.2), documented with the AWS provider's
# v1.6.2 pages (the core's docs live there).
CORE_RELEASE = "v1.6.2"
_CORE_DOCS = f"https://github.com/aws/karpenter-provider-aws/blob/{CORE_RELEASE}/website/content/en/docs"
DISRUPTION_DOC = f"{_CORE_DOCS}/concepts/disruption.md"
DOCS = KarpenterDocs(nodepools=f"{_CORE_DOCS}/concepts/nodepools.md", disruption=DISRUPTION_DOC,
                     scheduling=f"{_CORE_DOCS}/concepts/scheduling.md",
                     overlay="https://github.com/kubernetes-sigs/karpenter/blob/v1.7.0/pkg/apis/v1alpha1/nodeoverlay.go",
                     nodepool_crd=NODEPOOL_CRD)
# ReservedCapacity is on by default in core v1.6.2 (pkg/operator/options/options.go, DefaultFeatureGates;
# https://github.com/kubernetes-sigs/karpenter/blob/a29df2ab6d2a29d96444e11aa2a3967216c3d8d2/pkg/operator/options/options.go),
# and KPO's chart sets only SpotToSpotConsolidation and NodeRepair (chart/templates/deployment.yaml).
RESERVED_CAPACITY_GATE = ("https://github.com/kubernetes-sigs/karpenter/blob/a29df2ab6d2a29d96444e11aa2a3967216c3d8d2/"
                          "pkg/operator/options/options.go")

NODECLASS_GROUP = "oci.oraclecloud.com"
NODECLASS_VERSION = "v1beta1"
# The consolidation policies of KPO's NodePool CRD (core v1.6.2: no `Balanced`, which core added later).
CONSOLIDATION_POLICIES = frozenset({"WhenEmpty", "WhenEmptyOrUnderutilized"})
# The labels KPO registers as well known (pkg/apis/v1beta1/labels.go, init): a pod may select them.
WELL_KNOWN_LABELS = frozenset({f"{NODECLASS_GROUP}/{name}" for name in (
    "baremetal-shape", "gpu-shape", "denseio-shape", "fault-domain", "instance-shape", "capacity-reservation-id",
    "flex-shape")})
# Every GPU shape's instance type requires gpu-shape In [true], bare-metal ones baremetal-shape In [true]
# (INSTANCE_TYPES, finalizeRequirements: "node pools that need use these special shapes need explicitly
# define them"); GPU shapes are offered only to NodePools tainted nvidia.com/gpu:NoSchedule
# (INSTANCE_TYPES, ListInstanceTypes), which every gpustack GPU pool is.
GPU_SHAPE = f"{NODECLASS_GROUP}/gpu-shape"
BM_SHAPE = f"{NODECLASS_GROUP}/baremetal-shape"
# KPO offers a spot (preemptible) offering only for the shapes its shape metadata lists as preemptible
# (prefix match, INSTANCE_TYPES isPreemptibleShape; the chart mounts SHAPE_META as a ConfigMap), only to
# NodePools tainted oci.oraclecloud.com/oke-is-preemptible:NoSchedule, and never with a capacity
# reservation in the node class (setOfferings). The GPU shapes of v1.0.0's list:
PREEMPTIBLE_GPU_SHAPES = ("VM.GPU2.1", "VM.GPU3.1", "VM.GPU3.2", "VM.GPU3.4")
# A node's topology.kubernetes.io/zone is the availability domain without its tenancy prefix:
# "Uocm:US-ASHBURN-AD-1" -> "US-ASHBURN-AD-1" (INSTANCE_TYPES, finalizeRequirements: strings.Split(ad, ":")[1]).
# The image type of OKE's prebaked images, which KPO bootstraps with /etc/oke/oke-install.sh
# (NODECLASS_TYPES, ImageType; pkg/providers/instancemeta/provider.go, buildUserDataForPreBakedImage).
IMAGE_TYPES = frozenset({"OKEImage"})
IMAGE_TYPE = "OKEImage"
# The freeform tag a reserved floor's capacity reservation carries; its OCINodeClass selects it with a
# capacityReservationFilter (NODECLASS_TYPES: a filter must match exactly one reservation; ADVANCED_DOC).
# Without a period or slash: OCI's tag keys may contain neither in tag key definitions
# (https://docs.oracle.com/en-us/iaas/roving-edge-infrastructure/cmn/iam-local/creating-a-tag-key-definition.htm), and no
# page says freeform keys may, so the key is spelled to satisfy both.
RESERVATION_TAG = "gpustack-pool"
IMAGE_GAP = (f"KPO's imageFilter selects an image by operating system and version only ({IMAGES}, filterImage), "
             "so it cannot be told to take an OKE GPU image (with the NVIDIA driver) for GPU shapes; set "
             "settings.image_id to the OKE GPU image for the cluster's Kubernetes version (`oci ce node-pool-options "
             "get --node-pool-option-id <cluster OCID>` lists them, names with -GPU-)")


@dataclasses.dataclass(frozen=True)
class OCIKarpenterPool(KarpenterPool):
    """A pool's NodePool and its OCINodeClass."""

    image_type: str
    image_id: str  # settings.image_id (required: IMAGE_GAP)
    subnet_id: str
    compartment_id: str  # of the nodes (nodeCompartmentId) and of the floor's reservation
    boot_volume_gb: int
    pre_bootstrap: str  # the script KPO runs before OKE's bootstrap: grow the root filesystem onto the volume
    freeform_tags: tuple[tuple[str, str], ...]
    reservation_tags: tuple[tuple[str, str], ...]  # () unless a reserved floor
    reserved_nodes: int

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update(freeform_tags=dict(self.freeform_tags), reservation_tags=dict(self.reservation_tags))
        return out


def preemptible_refusal(instance_type: str) -> str | None:
    """Why KPO v1.0.0 offers no spot for `instance_type` (None: it does)."""
    if instance_type.startswith("BM."):
        return None  # the cloud's own rule says it (OKE.spot_available)
    if instance_type.startswith(PREEMPTIBLE_GPU_SHAPES) or not instance_type.startswith(("VM.GPU", "BM.GPU")):
        return None
    return (f"KPO {RELEASE} offers spot only for the shapes its shape metadata lists as preemptible "
            f"({', '.join(PREEMPTIBLE_GPU_SHAPES)} among GPU shapes; {SHAPE_META}, read by {INSTANCE_TYPES} "
            f"isPreemptibleShape), not {instance_type}; add it to the chart's config/oci-shape-meta.json "
            "preemptibleShapes where OCI sells it preemptible")


# A pod asking for a MIG device fits no shape Karpenter v1.6.2 knows (no NodeOverlay can say a node offers
# one), so KPO would never launch a node for it: MIG is planned as time-slicing at the same share.
MIG_GAP = (f"KPO {RELEASE} runs Karpenter {CORE_RELEASE}, which has no NodeOverlay (alpha since v1.7; {FEATURES_DOC}): "
           "it sees no shape offering a MIG device and would launch no node for a pod asking for one")


class OKEKarpenter(KarpenterProvisioner):
    name = "karpenter"
    description = f"Oracle's Karpenter provider {RELEASE} (Karpenter {CORE_RELEASE}) NodePools and OCINodeClasses on OKE"
    dra = DraSupport(refusal="Oracle's Karpenter provider documents no DRA support: Karpenter's DRA support (settings.enableDRA) is documented for its AWS provider only (https://karpenter.sh/docs/tasks/dra/; core tracking issue https://github.com/kubernetes-sigs/karpenter/issues/1231), so no node is launched for pods with ResourceClaims",
                     source="https://karpenter.sh/docs/tasks/dra/")
    backend = "karpenter_backend"
    release = RELEASE
    docs = DOCS
    compiled_type = OCIKarpenterPool
    node_class_group = NODECLASS_GROUP
    node_class_kind = "OCINodeClass"
    node_class_version = NODECLASS_VERSION
    provider_well_known_labels = WELL_KNOWN_LABELS
    # KPO's NodePool CRD restricts only karpenter.sh in template labels (NODEPOOL_CRD, CEL rules).
    provider_label_domains = ()
    # Karpenter v1.6.2 has no NodeOverlay (alpha since v1.7): the pools get none, and the plan warns.
    writes_overlays = False
    overlay_condition = (f"and KPO {RELEASE} runs Karpenter {CORE_RELEASE}, which has no NodeOverlay (alpha since "
                         f"v1.7; {FEATURES_DOC}) to tell it more, so gpustack writes none; keep MIG and time-sliced "
                         "work on a target with OKE's managed node pools")
    unsupported = {Feature.NATIVE_SCHEDULE: core.schedule_gap(DISRUPTION_DOC), Feature.MIG: MIG_GAP}
    required_settings = {"image_id": IMAGE_GAP}
    # KPO offers spot shapes only to NodePools with OKE's preemptible taint (FAQS_DOC, "Spot / preemptible
    # nodes"; INSTANCE_TYPES setOfferings checks key and effect).
    spot_taint = facts.SPOT_TAINT
    fallback_mechanism = core.weight_fallback(DOCS.scheduling, "run KPO (the NodePools' weights do the ranking)")
    # Nothing KPO declares is replaced: the NodeClaims drift (DRIFT: compartment, image, capacity
    # reservation, subnet, boot volume; the NodePool's template hash: labels, taints, requirements).
    drifting_changes = {
        **core.drift_changes(DISRUPTION_DOC),
        "settings.image_id": f"the OCINodeClass's image changes: its nodes drift (imageMismatch, {DRIFT})",
        "settings.subnet_id": f"the OCINodeClass's subnet changes: its nodes drift (network drift, {DRIFT})",
        "settings.compartment_id": f"the OCINodeClass's nodeCompartmentId changes: its nodes drift "
                                   f"(instanceCompartmentMismatch, {DRIFT})",
    }

    # -- capacity ----------------------------------------------------------------------------------
    def spot_available(self, instance_type: str) -> str | None:
        return super().spot_available(instance_type) or preemptible_refusal(instance_type)

    def capacity_refusal(self, row: InstanceType, capacity: str) -> str | None:
        if capacity == "spot" and (refusal := preemptible_refusal(row.name)):
            return refusal
        return super().capacity_refusal(row, capacity)

    # -- the NodePool ------------------------------------------------------------------------------
    def instance_type_requirements(self, pool: Pool) -> tuple[Requirement, ...]:
        special = [Requirement(GPU_SHAPE, "In", ("true",))] if pool.gpus_per_node else []
        if pool.instance_type.startswith("BM."):
            special.append(Requirement(BM_SHAPE, "In", ("true",)))
        return (*super().instance_type_requirements(pool), *special)

    def compile(self, pool: Pool, target: Target) -> KarpenterPool:
        compiled = super().compile(pool, target)
        # KPO's zone label drops the tenancy prefix of an availability domain.
        requirements = tuple(Requirement(r.key, r.operator, tuple(v.split(":", 1)[-1] for v in r.values))
                             if r.key == ZONE else r for r in compiled.requirements)
        return dataclasses.replace(compiled, requirements=requirements)

    # -- the OCINodeClass --------------------------------------------------------------------------
    def node_class_fields(self, pool: Pool, target: Target) -> dict[str, Any]:
        grow = f"#!/bin/bash\n{facts.GROW_ROOT_FILESYSTEM}\n"
        return dict(
            image_type=IMAGE_TYPE,
            image_id=str(target.setting("image_id") or ""),
            subnet_id=str(target.setting("subnet_id") or ""),
            compartment_id=str(target.setting("compartment_id") or ""),
            boot_volume_gb=pool.disk_gib,
            pre_bootstrap=base64.b64encode(grow.encode("utf-8")).decode("ascii"),
            freeform_tags=tuple(sorted(pool.attribution.items())),
            reservation_tags=((RESERVATION_TAG, pool.cloud_name),) if pool.reserved_nodes else (),
            reserved_nodes=pool.reserved_nodes,
        )

    def check_node_class(self, pool: Pool) -> list[str]:
        c = pool.compiled
        assert isinstance(c, OCIKarpenterPool)
        problems = []
        if c.image_type not in IMAGE_TYPES:
            problems.append(f"image type {c.image_type!r} is not one KPO bootstraps ({', '.join(sorted(IMAGE_TYPES))})")
        if c.consolidation_policy not in CONSOLIDATION_POLICIES:
            problems.append(f"consolidationPolicy {c.consolidation_policy!r} is not in KPO's NodePool CRD "
                            f"({', '.join(sorted(CONSOLIDATION_POLICIES))}; {NODEPOOL_CRD})")
        if c.requirement(core.CAPACITY_TYPE) == "spot" and c.reservation_tags:
            problems.append(f"a preemptible pool cannot use a capacity reservation ({INSTANCE_TYPES}, setOfferings)")
        return problems

    def node_class_spec(self, pool: Pool) -> dict[str, Any]:
        c = pool.compiled
        assert isinstance(c, OCIKarpenterPool)
        spec: dict[str, Any] = {
            "nodeCompartmentId": c.compartment_id,
            "volumeConfig": {"bootVolumeConfig": {"imageConfig": {"imageType": c.image_type, "imageId": c.image_id},
                                                  "sizeInGBs": c.boot_volume_gb}},
            "networkConfig": {"primaryVnicConfig": {"subnetConfig": {"subnetId": c.subnet_id}}},
            "preBootstrapInitScript": c.pre_bootstrap,
        }
        if c.reservation_tags:
            spec["capacityReservationConfigs"] = [{"capacityReservationFilter": {
                "compartmentId": c.compartment_id, "freeformTags": dict(c.reservation_tags)}}]
        if c.freeform_tags:
            spec["freeformTags"] = dict(c.freeform_tags)
        return spec

    def pool_notes(self, pool: Pool) -> tuple[str, ...]:
        reserved = (f"Launches only into the capacity reservation tagged {RESERVATION_TAG}={pool.cloud_name} in the "
                    "nodes' compartment (the Pulumi program declares it; with `gpustack render`, tag yours so, exactly "
                    f"one): KPO maps capacity type reserved to the reservations its OCINodeClass names ({ADVANCED_DOC}), "
                    f"and the ReservedCapacity gate is on by default in Karpenter {CORE_RELEASE} "
                    f"({RESERVED_CAPACITY_GATE}).",) if pool.reserved_nodes else ()
        return (*super().pool_notes(pool), *reserved)

    def target_notes(self) -> list[str]:
        return [f"Oracle's Karpenter provider (KPO) {RELEASE}, on Karpenter {CORE_RELEASE}, provisions the pools: one "
                "NodePool and OCINodeClass each, spot (preemptible) tried before on-demand by spec.weight, nodes on the "
                "pinned settings.image_id; a new image, subnet or compartment drifts the nodes, replaced within each "
                f"NodePool's disruption budgets ({DRIFT}), reserved floors excepted (their floor-upgrade warnings); docs/karpenter.md says what the cluster needs (KPO's Helm "
                "chart, its workload-identity policies and the nodes' dynamic group)."]


PROVISIONER = OKEKarpenter
