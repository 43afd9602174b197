"""What every cloud declares: its facts, its limits and its capability gaps, as data.

A cloud is one bundle, the package `gpustack.clouds.<name>`, with one module per concern:

    facts.py    the `Cloud` subclass (registered), its enums and limits, each next to its source
    <name>.py   each provisioner of `Cloud.provisioners` (`gpustack.clouds.provisioner`), e.g. managed.py
    backend.py  the Pulumi resources (imported only by the Pulumi program: the SDK lives there)
    readers.py  the guardrail readers: Pulumi resource props -> pool views, native schedules
    mocks.py    what the Pulumi mocks answer for this cloud's data sources and computed outputs
    prices.py   the price feed `gpustack catalog refresh` reads (optional: a cloud without one is not refreshed)

`Cloud.part(name)` imports one of them on first use. The facts hold no provider SDK import: they
are read while a spec is validated and planned.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import importlib
import re
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

from gpustack.clouds.kubelet import TIERED, KubeletReservation

if TYPE_CHECKING:  # the plan imports the clouds; the clouds only name the plan's types
    from gpustack.catalog import InstanceType
    from gpustack.clouds.provisioner import Provisioner
    from gpustack.plan.model import Pool


class Feature(enum.Enum):
    """Things a plan may need that a cloud may lack; gaps are reported when a spec is validated."""

    MIG = "MIG partitions of a node pool's GPUs"
    MIG_MIXED_LAYOUTS = "different MIG profiles on the GPUs of one node pool"
    NATIVE_SCHEDULE = "scaling a node pool on a timetable with a cloud resource"
    SPOT = "spot / preemptible capacity"
    FRACTIONAL_SHARING = "enforced GPU fractions (HAMi's device plugin and scheduler)"
    INSTANCE_TYPE_ALTERNATIVES = "several instance types in one spot node pool"
    # Capacity bought for a fixed window (docs/capacity.md): a cloud that sells neither lists both with
    # what it offers instead.
    CAPACITY_BLOCK = "capacity blocks: GPU instances reserved for a fixed window, paid up front"
    FLEX_START = "flex-start capacity: GPUs obtained when available, for a bounded run, at a discount"


@dataclasses.dataclass(frozen=True)
class BlockTerms:
    """What a cloud sells as a capacity block (`capacity: block`), with its source."""

    seller: str  # who sells it, for messages
    days: tuple[int, ...]  # the durations sold
    days_rule: str  # the same in words
    max_instances: int  # per block
    reservation_id: str  # regex of the id of a block held
    offering_id: str  # regex of the id of an offering to buy
    reclaim_minutes: int  # the instances are taken back this long before the block ends
    reclaim_source: str
    source: str


# The plan's capacity -> the feature a cloud must have to sell it.
TIMEBOXED_FEATURES = {"block": Feature.CAPACITY_BLOCK, "flex": Feature.FLEX_START}


@dataclasses.dataclass(frozen=True)
class Setting:
    """One key of a target's `settings` for this cloud."""

    name: str
    required: bool
    kind: str  # "string" | "strings" (a non-empty list of strings)
    pattern: str | None = None  # regex each whole string must match (fullmatch)
    rule: str = ""  # the pattern in words, for messages
    # The cloud API's own pattern for the value, where it publishes one, and where: every string
    # `pattern` accepts must be one the API accepts (a property test checks it).
    api_pattern: str | None = None
    api_source: str = ""


# Keys of every target's `settings` for the in-cluster layer (docs/autostop.md, "Idle GPUs acted on"):
# who scales scheduled and idle workloads (the built-in CronJobs, or KEDA where the cluster runs it), and
# the in-cluster Prometheus both read GPU utilisation from. The URL reaches YAML and a program's argv
# only, and the NetworkPolicy opens exactly its port.
AUTOSTOP_CHOICES = ("cronjob", "keda")
# Who admits the target's training and fine-tuning Jobs (docs/kueue.md): unset, the Jobs start as they are
# created; `kueue`, Kueue's ClusterQueues per team hold them until their quota and flavors allow.
QUEUE_CHOICES = ("kueue",)
PROMETHEUS_URL = (r"https?://[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?){0,9}"
                  r"(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?"
                  r"(/[-a-z0-9_.]{1,63}){0,4}")
# An IPv4 CIDR as net.ParseCIDR reads it (what the API server checks in a NetworkPolicy's ipBlock.cidr).
_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
API_SERVER_CIDR = rf"{_OCTET}(\.{_OCTET}){{3}}/(3[0-2]|[12]?[0-9])"
IN_CLUSTER_SETTINGS = (
    Setting("autostop", False, "string", "|".join(AUTOSTOP_CHOICES), "cronjob (default) or keda"),
    Setting("queue", False, "string", "|".join(QUEUE_CHOICES),
            "kueue (team quotas for training and fine-tuning Jobs; unset: no queue)"),
    Setting("prometheus_url", False, "string", PROMETHEUS_URL,
            "an in-cluster Prometheus URL such as http://prometheus-operated.monitoring.svc:9090 (lowercase "
            "host name, optional port and path, no query)"),
    # The control plane's addresses are the cluster's (gpustack cannot know them when it renders): given,
    # the jobs' NetworkPolicies allow the API server's ports at those addresses only.
    # How pods get GPUs: extended resources of NVIDIA's device plugin, or ResourceClaims of its DRA driver
    # (docs/dra.md); whether the target's provisioner can run DRA is its `Provisioner.dra`.
    Setting("gpu_allocation", False, "string", "device-plugin|dra", "device-plugin (default) or dra"),
    Setting("api_server_cidrs", False, "strings", API_SERVER_CIDR,
            "the API server's addresses as IPv4 CIDRs, e.g. 10.0.0.0/16 (kubectl get endpointslices -n default "
            "-l kubernetes.io/service-name=kubernetes)"),
)


@dataclasses.dataclass(frozen=True)
class NameRule:
    """A cloud's limit on node-pool names, with the source that states it."""

    max_len: int
    pattern: str  # full-match regex
    punctuation: str  # characters allowed besides a-z and 0-9 in generated names: "-" or ""
    source: str

    def fits(self, name: str) -> bool:
        return len(name) <= self.max_len and re.fullmatch(self.pattern, name) is not None

    def make(self, identity: str, readable: str, compact: str = "") -> str:
        """A valid, stable name: `readable` when it fits, else a shortened form with a hash of `identity`.

        The hash is of the full identity (not of the shortened text), so two long names that share a
        prefix, or differ only in case or punctuation, still get different names. Under 20
        characters the `compact` form (when given) leads the name, as it says more in fewer letters.
        """
        sep = self.punctuation[:1]
        clean = re.sub(f"[^a-z0-9{re.escape(self.punctuation)}]+", sep, readable.lower()).strip("-_")
        if self.fits(clean) and clean == readable:
            return clean
        short = self.max_len < 20
        if short and compact:
            clean = re.sub(f"[^a-z0-9{re.escape(self.punctuation)}]+", sep, compact.lower()).strip("-_")
        digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[: 6 if short else 8]
        head = clean[: self.max_len - len(digest) - len(sep)].rstrip("-_")
        if not head or not head[0].isalpha():
            head = ("p" + head)[: self.max_len - len(digest) - len(sep)]
        name = f"{head}{sep}{digest}"
        assert self.fits(name), (name, self)
        return name


    def descriptive(self, identity: str, tokens: tuple[str, ...], min_digest: int = 3, max_digest: int = 4) -> str:
        """As much meaning as the limit allows, then a digest of `identity` in letters (so it does not run
        into the digits of a GPU model): `tokens` in order, each kept whole while it fits, e.g. inference
        reserved A100 3g -> `inra1003gkqf`. Stable: it depends on the pool's own identity only."""
        digest = _letters(hashlib.sha256(identity.encode("utf-8")).digest())
        room = self.max_len - min_digest
        head = ""
        for token in (re.sub(r"[^a-z0-9]", "", t.lower()) for t in tokens):
            if token and len(head) + len(token) <= room:
                head += token
        if not head or not head[0].isalpha():
            head = ("p" + head)[:room]
        name = head + digest[: max(min_digest, min(max_digest, self.max_len - len(head)))]
        assert self.fits(name), (name, self)
        return name


def _letters(data: bytes) -> str:
    """Bytes as lowercase letters (base 26), for digests that read apart from digits."""
    number = int.from_bytes(data, "big")
    out = []
    while number:
        number, rest = divmod(number, 26)
        out.append(chr(ord("a") + rest))
    return "".join(out)


@dataclasses.dataclass(frozen=True)
class FallbackMechanism:
    """How the cloud's autoscaler is made to grow a spot pool first and its on-demand fallback pool only
    when spot capacity is short (by default nothing does: the Cluster Autoscaler's `random` expander
    picks either), and what of it is outside gpustack's reach."""

    kind: str  # PRIORITY_EXPANDER | COMPUTE_CLASS | NODEPOOL_WEIGHT | CLASS_PRIORITIES
    # PRIORITY_EXPANDER: the autoscaler's id of a pool's node group as a regex, `{pool}` standing for the
    # pool's cloud name (RE2 and Python agree on the syntax used); None when the id exists only once the
    # pool does (an OCID), so only the Pulumi program can name it.
    node_group: str | None = None
    node_group_example: str = ""  # a documented id of that shape, `{pool}` for the cloud name (tests)
    # PRIORITY_EXPANDER: the namespace the autoscaler reads its priority ConfigMap from.
    namespace: str | None = None
    # COMPUTE_CLASS, CLASS_PRIORITIES: the node label and taint key that tie a pool to its class, and the
    # class's apiVersion.
    pool_marker: str | None = None
    api_version: str | None = None
    user_action: str = ""  # what the user must set, which gpustack does not own
    source: str = ""


@dataclasses.dataclass(frozen=True)
class ExampleTarget:
    """A target of this cloud for `gpustack new` and the docs: a region whose catalog has the example's
    GPUs, placeholder references in the formats the cloud validates, and the provider's stack config."""

    region: str
    cluster: str
    settings: Mapping[str, str | tuple[str, ...]]
    provider_config: Mapping[str, str]


@dataclasses.dataclass(frozen=True)
class PreviewLogin:
    """How the generated `pulumi preview` job logs in to this cloud with a read-only identity: an action
    of templates/project/github/actions.yaml with its inputs (OIDC, bound to the preview environment),
    or, with no such action, environment variables of the preview step. Values name the environment's
    secrets; `secrets` lists them for the README."""

    title: str
    secrets: tuple[str, ...]
    action: str | None = None
    inputs: Mapping[str, str] = dataclasses.field(default_factory=dict)
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    note: str = ""
    source: str = ""


# The modules of a cloud's bundle (see the module docstring); `facts` registers the cloud.
BUNDLE_PARTS = ("facts", "backend", "readers", "mocks")


@dataclasses.dataclass(frozen=True)
class FloorUpgradeRule:
    """How the cloud upgrades a reserved floor's nodes without creating one beyond the reservation."""

    settings: tuple[tuple[str, object], ...]  # the cloud's fields and values, as the backend sends them
    max_surge: int
    max_unavailable: int
    default_surge: Callable[[int], int]  # nodes the cloud's default settings surge for a floor of n nodes
    source: str


PRIORITY_EXPANDER = "priority-expander"
COMPUTE_CLASS = "compute-class"
NODEPOOL_WEIGHT = "nodepool-weight"  # Karpenter: spot NodePools carry a higher spec.weight
# The pools that carry one workload are the priorities of one class object, tried in order (reserved
# floor, then spot, then on-demand); every pool is in exactly one class, named by `pool_marker`.
CLASS_PRIORITIES = "class-priorities"


class Cloud:
    """Base class of a cloud: facts as class attributes, each next to its source.

    Subclasses register with `@CLOUDS.register(...)` (see `gpustack.clouds`).
    """

    name: ClassVar[str]  # canonical name used in plans: aws, azure, gcp, oci
    aliases: ClassVar[tuple[str, ...]] = ()
    display_name: ClassVar[str]  # e.g. "EKS"
    example: ClassVar[ExampleTarget]
    preview_login: ClassVar[PreviewLogin | None] = None
    settings: ClassVar[tuple[Setting, ...]] = ()
    cluster_rule: ClassVar[tuple[str, str]] = (r".+", "a cluster name")  # (regex, fullmatch; in words)
    # The cloud API's own pattern for a cluster reference and its source (see Setting.api_pattern).
    cluster_api_rule: ClassVar[tuple[str, str] | None] = None
    # The attribute of the program's cluster resource that the node-pool API names the cluster by, so
    # `GpuPools(cluster=<resource>)` joins the cluster the program made whatever its physical name; None
    # where the backend must know the cluster before it declares anything (the spec's `cluster` then).
    cluster_attribute: ClassVar[str | None] = "name"
    # What `GpuPools(node_role=...)` gives the pools in place of the identity gpustack would create for
    # them (None: the cloud's pools take none of their own).
    node_identity: ClassVar[str | None] = None
    pool_names: ClassVar[NameRule]
    unsupported: ClassVar[Mapping[Feature, str]] = {}
    # Capacity blocks (where sold): what the cloud sells and when it takes the instances back.
    block_terms: ClassVar[BlockTerms | None] = None
    # Flex-start (where sold): the fraction off on-demand it publishes, in words, where and as of when
    # (an upper bound when that is all it publishes; `pricing.flex_discount` declares the real one), and
    # the longest a flex-start node runs (hours, source).
    flex_discount: ClassVar[tuple[float, str, str, str] | None] = None
    flex_max_run_hours: ClassVar[tuple[int, str] | None] = None
    # Label-key prefixes the cloud owns on nodes: never attribution labels, never cloud tags.
    own_label_prefixes: ClassVar[tuple[str, ...]] = ()
    # Whether the node images gpustack asks for carry the NVIDIA driver and the container toolkit (the
    # GPU Operator then installs neither); stated per cloud with its source.
    image_has_gpu_driver: ClassVar[bool]
    image_has_container_toolkit: ClassVar[bool]
    # The TCP port(s) a pod's connection to the API server has when a NetworkPolicy judges it: the
    # `kubernetes` Service's endpoint port, as NetworkPolicy implementations apply egress rules after
    # the Service's address and port are translated to the endpoint's (Calico: "normal" policy is
    # post-DNAT, https://docs.tigera.io/calico/latest/reference/host-endpoints/pre-dnat; GKE "translates
    # the Service virtual IP address (VIP) to backend Pod IP addresses before evaluating network policy
    # rules", https://cloud.google.com/kubernetes-engine/docs/how-to/fqdn-network-policies). The
    # in-cluster jobs' NetworkPolicies allow these and no other port to the API server.
    api_server_ports: ClassVar[tuple[int, ...]]
    # Labels the cloud puts on spot nodes by itself (the spot taint is the provisioner's).
    spot_node_label: ClassVar[tuple[str, str] | None] = None
    # Whether spot pools declare `spot_node_label` too: where the cloud's API reports the label on the pool,
    # an undeclared one shows as drift on every refresh.
    declare_spot_label: ClassVar[bool] = False
    # The provisioners a target may pick with settings.provisioner, the default first: each the
    # module `<bundle>/<name>.py` (dashes as underscores) with PROVISIONER (`gpustack.clouds.provisioner`).
    provisioners: ClassVar[tuple[str, ...]] = ("managed",)
    # Time-sliced clients per GPU the cloud's own sharing knob allows (None: no native knob).
    max_shared_clients_per_gpu: ClassVar[int | None] = None
    # Sharing modes the node pool itself configures (no NVIDIA device-plugin config needed).
    native_sharing: ClassVar[frozenset[str]] = frozenset()
    # The node pool creates MIG partitions itself (no mig-parted config needed).
    native_mig_partitioning: ClassVar[bool] = False
    # A setting a target needs once it has a reserved pool: (name, why).
    reservation_needs: ClassVar[tuple[str, str] | None] = None
    # What the kubelet of the default node image keeps of a node (gpustack.clouds.kubelet).
    kubelet_reservation: ClassVar[KubeletReservation] = TIERED
    # The root / boot volume sizes a node pool takes, GiB: (smallest, largest, source).
    disk_gib_range: ClassVar[tuple[int, int, str]] = (1, 65536, "")
    # The target setting that lists the zones (or availability domains) the pools launch in, if any.
    zone_setting: ClassVar[str | None] = None
    # The target setting whose entries a workload's `availability` spreads its floor over, one
    # reservation each (None: `zone_setting`); each entry must lie in a zone of its own.
    spread_setting: ClassVar[str | None] = None
    # Why a reserved floor is not spread over zones when `floor_spread` gives nothing: said in a plan
    # warning, since one zone outage can then take the whole floor (None: nothing to say).
    single_zone_floor: ClassVar[str | None] = None
    # The node label the cloud's Cluster Autoscaler takes as "this node has GPUs" (its provider's
    # GPULabel()), None where it has none; and whether gpustack must declare it on the nodes.
    gpu_label: ClassVar[str | None] = None
    gpu_label_declared: ClassVar[bool] = False
    # The MIG strategy of the cloud's own device plugin (None: the GPU Operator's, chosen per target).
    native_mig_strategy: ClassVar[str | None] = None
    # Upgrade settings for reserved floors (None: the cloud's defaults, which the plan cannot vouch for).
    floor_upgrade: ClassVar[FloorUpgradeRule | None] = None
    # Why the cloud's autoscaler cannot be shown extended resources on the template node of a pool at
    # zero (None: it can, through what the provisioner declares).
    template_resources_gap: ClassVar[str | None] = None

    # The continent of each area a region's name starts with (the part before its first "-", e.g. "ca"
    # of ca-west-1), for suggesting nearby regions: same area first, then same continent (not the
    # closest spelling: ca-west-1 is nearer ca-central-1 than us-west-1). Declared with its source.
    region_areas: ClassVar[Mapping[str, str]] = {}

    def region_geography(self, region: str) -> tuple[str, str]:
        """(area, continent) of a region's name; an empty part when the cloud does not know it."""
        area = region.split("-", 1)[0]
        return (area, self.region_areas.get(area, "")) if area in self.region_areas else ("", "")

    def declared_gpu_label(self, gpu: str) -> tuple[str, str] | None:
        """The GPU label gpustack declares on a pool's nodes, when the cloud does not set it itself."""
        if not (self.gpu_label and self.gpu_label_declared):
            return None
        return self.gpu_label, "nvidia-" + re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-")

    def template_gap(self, pool: Pool) -> str | None:
        """What the autoscaler gets wrong about a pool at zero because the cloud cannot be told better."""
        shape_only = (("nvidia.com/gpu", pool.gpus_per_node),)
        if self.template_resources_gap is None or pool.node_offers == shape_only:
            return None
        offers = ", ".join(f"{name}: {count}" for name, count in pool.node_offers)
        return (f"at zero nodes the {self.display_name} autoscaler sees only the shape's nvidia.com/gpu: "
                f"{pool.gpus_per_node}, not what a node offers ({offers}): {self.template_resources_gap}; "
                "pods asking for a MIG device cannot start its first node, time-sliced pods start one node "
                "per pod (up to max_nodes) until the first node reports; keep one node with a higher floor "
                "if that matters")

    @property
    def bundle(self) -> str:
        """The package holding everything of this cloud (`gpustack.clouds.<name>`)."""
        return type(self).__module__.rpartition(".")[0]

    def part(self, name: str) -> ModuleType:
        """A module of the cloud's bundle (`backend`, `readers`, `mocks`), imported on first use."""
        return importlib.import_module(f"{self.bundle}.{name}")

    @property
    def default_provisioner(self) -> str:
        return self.provisioners[0]

    def provisioner(self, name: str | None = None) -> Provisioner:
        """The provisioner called `name` (default: the cloud's default), made once per cloud."""
        chosen = name or self.default_provisioner
        if chosen not in self.provisioners:
            raise KeyError(f"{self.display_name} has no provisioner {chosen!r}; known: {', '.join(self.provisioners)}")
        made: dict[str, Provisioner] = self.__dict__.setdefault("_provisioners", {})
        if chosen not in made:
            made[chosen] = self.part(chosen.replace("-", "_")).PROVISIONER(self)
        return made[chosen]

    @property
    def target_settings(self) -> tuple[Setting, ...]:
        """The keys of a target's `settings` here: the cloud's own and `provisioner`."""
        # How the node pools are provisioned (default: the first of `provisioners`).
        choice = Setting("provisioner", False, "string",
                         f"^({'|'.join(re.escape(p) for p in self.provisioners)})$",
                         f"one of {', '.join(self.provisioners)}")
        return (*self.settings, choice, *IN_CLUSTER_SETTINGS)

    def supports(self, feature: Feature) -> bool:
        return feature not in self.unsupported

    def mig_profiles(self, gpu: str, mig_profiles: tuple[str, ...]) -> tuple[str, ...]:
        """The MIG profiles of `gpu` this cloud can create natively (default: all of them)."""
        del gpu  # same set for every GPU unless a cloud says otherwise
        return mig_profiles

    def gpu_gap(self, gpu: str) -> str | None:
        """Why this cloud cannot run `gpu` at all, with the source, or None when nothing says so (then a
        GPU missing from a region is a gap of the catalog, which a user catalog can fill)."""
        del gpu
        return None

    def spot_available(self, instance_type: str) -> str | None:
        """None when `instance_type` can run as spot here, else the reason it cannot."""
        del instance_type
        if not self.supports(Feature.SPOT):
            return self.unsupported[Feature.SPOT]
        return None

    def capacity_refusal(self, row: InstanceType, capacity: str) -> str | None:
        """None when the cloud accepts `row` on `capacity` (spot | on-demand | reserved), else why it
        refuses, with the source. The planner never chooses a refused pair: it picks another type, or
        another capacity with a warning, or reports a located error (`gpustack.plan.choices`)."""
        if capacity == "spot":
            return self.spot_available(row.name)
        if capacity in TIMEBOXED_FEATURES:
            return self.unsupported.get(TIMEBOXED_FEATURES[capacity])
        return None

    def target_notes(self, settings: Mapping[str, object]) -> list[str]:
        """What a person deploying a target of this cloud must know that the pools do not say: who owns
        the GPU driver, what the cluster must be (shown with the plan)."""
        del settings
        return []

    def zone_problems(self, region: str, zones: tuple[str, ...]) -> list[str]:
        """Why some of a target's `zones` (as its settings name them) cannot be used in `region`."""
        del region, zones
        return []

    def zones_offering(self, gpu: str, instance_type: str, zones: tuple[str, ...]) -> tuple[str, ...] | None:
        """The zones of `zones` that offer `instance_type` with `gpu`; None when the cloud publishes no
        per-zone list (every zone is then assumed to)."""
        del gpu, instance_type, zones
        return None

    def zones_in_region(self, gpu: str, region: str) -> tuple[str, ...]:
        """The zones of `region` that offer `gpu`, when the cloud publishes them (for messages)."""
        del gpu, region
        return ()

    def floor_spread(self, zones: tuple[str, ...], nodes: int) -> tuple[tuple[str, int], ...]:
        """A reserved floor of `nodes` split over `zones`, one reservation per zone, where the cloud
        and its backend can do it; () when the floor sits in one zone (`single_zone_floor` says why)."""
        del zones, nodes
        return ()

    def spread_units(self, settings: Mapping[str, object]) -> tuple[str | None, tuple[str, ...]]:
        """The setting a workload's `availability` spreads over, and its entries (zones, availability
        domains, or subnets that each fix a zone)."""
        setting = self.spread_setting or self.zone_setting
        value = settings.get(setting) if setting else None
        return setting, tuple(str(v) for v in value) if isinstance(value, (list, tuple)) else ()

    def availability_spread(self, units: tuple[str, ...], nodes: int) -> tuple[tuple[str, int], ...]:
        """A reserved floor of `nodes` under `availability`, balanced over `units` (one reservation, and on
        zonal node groups one group, each): the floors are sized as a multiple of the units' count."""
        base, extra = divmod(nodes, len(units))
        return tuple((unit, base + (1 if i < extra else 0)) for i, unit in enumerate(units) if base or i < extra)

    def check_pool(self, pool: Pool) -> list[str]:
        """Problems with a planned pool on this cloud, checked before anything is rendered because the
        provider SDKs do not check enum strings. Clouds extend this with their enums; the base checks
        what every cloud has: the pool's name against the cloud's rule, and its taints."""
        from gpustack.clouds._enums import check_taints

        problems = [] if self.pool_names.fits(pool.cloud_name) else [
            f"{self.display_name} pool name {pool.cloud_name!r} does not match ^{self.pool_names.pattern}$ "
            f"({self.pool_names.source})"]
        return problems + check_taints(pool.taints)

    def provisioning_request_class(self, pool: Pool) -> tuple[str, str] | None:
        """Where Kueue must ask the cloud for a pool's nodes before it admits a Job onto them (queued
        provisioning through a ProvisioningRequest): the provisioning class this cloud's autoscaler
        serves for `pool`, with its source; None (default) when its nodes are made as pods ask."""
        del pool
        return None

    def check_label(self, key: str, value: str) -> list[str]:
        """Problems with one attribution label of a pool as this cloud's tag or label (default: none).
        Checked per label, so the problem is reported once, where the label is written."""
        del key, value
        return []

    def pool_name(self, plan_pool_name: str, compact: str = "", terse: tuple[str, ...] = ()) -> str:
        """This cloud's name for a plan pool: the plan name when valid here, else shortened stably.
        `terse` (the pool's meaning in a few tokens) asks for `NameRule.descriptive` names."""
        if terse:
            return self.pool_names.descriptive(plan_pool_name, terse)
        return self.pool_names.make(plan_pool_name, plan_pool_name, compact)
