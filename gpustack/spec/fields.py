"""The keys of a workload as one table: how each is read, its default, the kinds it applies to and what
the README says of it.

`_SpecReader.workload` (gpustack/spec/load.py) runs down `WORKLOAD_FIELDS` in order, so the order of the
rows is the order of the checks (and of their problems) and of the keys named by "allowed here". A row
whose key is read together with another (the size forms with `gpus`, `block` and `flex` with `capacity`)
has no reader of its own: the row named by `read_with` reads it. A new key is one row, and usually one
reader function beside it.

`reference_rows()` renders the rows as the README's spec reference for workloads; tests/test_fields.py
fails when the README and the table differ (`make golden` rewrites the README's rows).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpustack.errors import one_of
from gpustack.spec import units
from gpustack.spec.alternatives import read_gpus
from gpustack.spec.autostop import read_autostop
from gpustack.spec.availability import read_availability
from gpustack.spec.idle import read_idle
from gpustack.spec.model import (
    CAPACITIES, HOURS_PER_MONTH, JOB_KINDS, KINDS, SCHEDULABLE_KINDS, SHAREABLE_KINDS, SHARING_MODES,
    TIMEBOXED_CAPACITIES,
)
from gpustack.spec.timebox import check_timebox
from gpustack.spec.yamlsource import Path

if TYPE_CHECKING:
    from gpustack.spec.load import _SpecReader

MAX_GPUS_PER_REPLICA = 64
MIN_GPU_FRACTION = 0.01
# Namespaces a workload may not live in: the cluster's own (Kubernetes reserves the `kube-` prefix,
# https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/#initial-namespaces)
# and those of what gpustack installs (the GPU Operator's, the alerts'). The auto-stop job gets a
# Role in its workloads' namespaces; there it would sit next to the cluster's controllers.
SYSTEM_NAMESPACE_PREFIX = "kube-"
INSTALLED_NAMESPACES = ("gpu-operator", "gpustack-system")


class WorkloadRead:
    """One workload being read: its mapping as given, its place, and the values read so far (by key)."""

    def __init__(self, reader: _SpecReader, path: Path, given: Mapping[str, Any]):
        self.reader = reader
        self.path = path
        self.given = given
        self.paths = {row.key: path + (row.key,) for row in WORKLOAD_FIELDS}
        self.values: dict[str, Any] = {}

    @property
    def kind(self) -> Any:
        return self.values.get("kind")

    @property
    def gpu(self) -> Any:
        """The catalog's model (BAD when the name was not one)."""
        return self.values.get("gpu")

    def read(self, row: WorkloadField) -> None:
        if row.read is None:  # read by the row named in `read_with`
            return
        if row.key in self.given or row.always:
            self.values[row.key] = row.read(self.reader, self, self.given.get(row.key, row.default))
        else:
            self.values[row.key] = row.default
        self.check_kind(row)

    def check_kind(self, row: WorkloadField) -> None:
        """The "applies only to kinds K" rule of `row`, when its key is given."""
        kind = self.kind
        if row.kinds is not None and row.key in self.given and kind and kind not in row.kinds:
            self.reader.problem(self.paths[row.key], row.not_for.format(key=row.key, kind=kind))

    def attributes(self) -> dict[str, Any]:
        """The `Workload` keyword arguments of the values read."""
        out: dict[str, Any] = {}
        for row in WORKLOAD_FIELDS:
            value = self.values[row.key]
            if isinstance(row.attribute, tuple):
                out.update(zip(row.attribute, value, strict=True))
            else:
                out[row.attribute or row.key] = value
        out["gpu"] = out["gpu"].name
        return out


Read = Callable[["_SpecReader", WorkloadRead, Any], Any]


@dataclass(frozen=True)
class WorkloadField:
    key: str
    read: Read | None  # None: read by the row `read_with`
    doc: str  # the README's text; "" when the row before documents it with its own
    default: Any = None  # the value when the key is absent
    always: bool = False  # read the default too when absent (its reader checks it against other keys)
    kinds: frozenset[str] | tuple[str, ...] | None = None  # the kinds it applies to; None: every kind
    not_for: str = ""  # the problem when given for another kind ({key}, {kind})
    required: bool = False
    attribute: str | tuple[str, ...] = ""  # the `Workload` field(s) it fills; "": the key
    heading: str = ""  # the README's key column; "": the key
    read_with: str = ""


# -- readers, one per row that reads ------------------------------------------------------------

def _name(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return r.dns_label(w.paths["name"], value)


def _kind(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return r.choice(w.paths["kind"], value, KINDS)


def _gpu(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    """One catalog model, or for training, fine-tuning and notebooks a list (gpustack/spec/alternatives.py)."""
    return read_gpus(r, r.gpu, w.paths["gpu"], value, w.kind)


def size_forms(given: Mapping[str, Any]) -> list[str]:
    """The size forms a workload gives, in the table's order."""
    return [key for key in SIZE_FORMS if key in given]


def _size(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    """gpus and the forms that replace it (one per replica): gpu_memory, mig, gpu_fraction."""
    forms = size_forms(w.given)
    if len(forms) > 1:
        r.problem(w.paths[forms[1]], f"give exactly one of {one_of(SIZE_FORMS)} per replica; "
                                     f"this workload gives {' and '.join(forms)}")
    for key in forms:
        w.check_kind(_ROWS[key])
    paths, given, gpu = w.paths, w.given, w.gpu
    gpus = r.integer(paths["gpus"], value, minimum=1, maximum=MAX_GPUS_PER_REPLICA) if "gpus" in given else 1
    gpu_memory = r.parsed(paths["gpu_memory"], given["gpu_memory"], units.parse_memory_gib) \
        if "gpu_memory" in given else None
    w.values["gpu_memory"] = gpu_memory
    w.values["gpu_fraction"] = _gpu_fraction(r, paths["gpu_fraction"], given["gpu_fraction"]) \
        if "gpu_fraction" in given else None
    mig = r.string(paths["mig"], given["mig"]) if "mig" in given else None
    if gpu and mig:
        mig = r.mig_profile(paths["mig"], gpu, mig)
    w.values["mig"] = mig
    if gpu and gpu_memory:
        r.gpu_memory_fits(paths["gpu_memory"], gpu, gpu_memory)
    return gpus


def _gpu_fraction(r: _SpecReader, path: Path, value: Any) -> Any:
    fraction = r.number(path, value, minimum=0, exclusive_minimum=True)
    if fraction and fraction > 1:
        return r.problem(path, f"{fraction:g} is more than one GPU; a fraction is at most 1 (use gpus: N for "
                               "whole GPUs)")
    if fraction and fraction < MIN_GPU_FRACTION:
        return r.problem(path, f"{fraction:g} is less than {MIN_GPU_FRACTION:g} of a GPU: no sharing mode "
                               f"divides a GPU among more than {round(1 / MIN_GPU_FRACTION)} replicas in a plan "
                               "gpustack would stand behind")
    return fraction


def _cpu(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return r.parsed(w.paths["cpu"], value, units.parse_cpu)


def _memory(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return r.parsed(w.paths["memory"], value, units.parse_memory_gib)


def _replicas(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return r.replicas(w.paths["replicas"], value, w.kind)


def _checkpointing(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return r.boolean(w.paths["checkpointing"], value)


def _schedule(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return r.schedule(w.paths["schedule"], value)


def _hours(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    path = w.paths["hours_per_month"]
    hours = r.number(path, value, minimum=0, exclusive_minimum=True, maximum=HOURS_PER_MONTH)
    if hours and w.values["schedule"]:
        r.problem(path, "give either a schedule or hours_per_month, not both")
    return hours


def _runs(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return r.number(w.paths["runs_per_month"], value, minimum=0, exclusive_minimum=True, maximum=1e6)


def _requests(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return r.number(w.paths["requests_per_hour"], value, minimum=0, exclusive_minimum=True, maximum=1e12)


def _labels(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return r.labels(w.paths["labels"], value)


def _capacity(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    """capacity, with the `block:` or `flex:` it needs (always read: those keys need a capacity)."""
    capacity = r.choice(w.paths["capacity"], value, CAPACITIES + TIMEBOXED_CAPACITIES) \
        if "capacity" in w.given else None
    w.values["block"], w.values["flex"] = check_timebox(r, w.paths, dict(w.given), w.kind, capacity,
                                                        w.values["checkpointing"] is True)
    if capacity == "reserved" and w.values["schedule"]:
        r.problem(w.paths["capacity"], "a reserved pool runs, and is billed, around the clock: it cannot follow a "
                                       "schedule; remove the schedule or the capacity")
    return capacity


def _sharing(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    sharing = r.choice(w.paths["sharing"], value, SHARING_MODES)
    if sharing and w.kind and w.gpu:
        r.sharing_fits(w.paths["sharing"], sharing, w.kind, w.gpu, size_forms(w.given), w.values["mig"])
    return sharing


def _namespace(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    namespace = r.dns_label(w.paths["namespace"], value)
    if isinstance(namespace, str) and (namespace.startswith(SYSTEM_NAMESPACE_PREFIX)
                                       or namespace in INSTALLED_NAMESPACES):
        r.problem(w.paths["namespace"], f"{namespace} is a system namespace (kube-* or one gpustack installs: "
                                        f"{', '.join(INSTALLED_NAMESPACES)}); put the workload in a namespace of "
                                        "its own, e.g. 'default' or the team's")
    return namespace


def _instance_types(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return r.instance_pins(w.paths["instance_types"], value, w.kind)


def _burst_share(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return r.number(w.paths["burst_share"], value, minimum=0, maximum=1)


def _disk(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return r.parsed(w.paths["disk"], value, units.parse_disk_gib)


def _idle(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return read_idle(r, w.paths["idle"], value, w.kind, w.values["replicas"])


def _autostop(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return read_autostop(r, w.paths["autostop"], value, w.kind, "schedule" in w.given, w.values["idle"] or None)


def _availability(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    return read_availability(r, w.paths["availability"], value, w.kind)


def _container(r: _SpecReader, w: WorkloadRead, value: Any) -> Any:
    # The GPU container of the workload's object (a container name is a DNS label, Kubernetes'
    # Container.name): the one the patches of `gpustack render --workloads` merge into.
    return r.dns_label(w.paths["container"], value)


# -- the table -----------------------------------------------------------------------------------

_WHOLE_GPUS = "{key} is for inference and notebook workloads; {kind} uses whole GPUs: give gpus: N"
_SIZE_DOC = (
    "`gpus: N` (default 1), or for inference and notebooks exactly one of `gpu_memory: 20Gi` (measured against "
    "the memory the driver reports: of the whole GPU when time-sliced, of the MIG device on MIG, e.g. 9.75 GiB for "
    "an A100 80GB's 1g.10gb, so 10Gi takes a 1g.20gb), `mig: 3g.40gb`, `gpu_fraction: 0.25` (0.01 to 1)")

WORKLOAD_FIELDS: tuple[WorkloadField, ...] = (
    WorkloadField("name", _name, "`name`, `kind` (`training`, `fine-tuning`, `inference`, `notebook`), `gpu` (a "
                  "catalog model: T4, L4, A10G, A10, L40S, V100, A100-40GB, A100-80GB, H100, H100-NVL, H200, B200; training, "
                  "fine-tuning and notebooks may list up to 4, e.g. `[A100-80GB, H100]`: the replicas are sized and the "
                  "pool packed and its fallback planned on the first, and the spot pool also launches, per later model "
                  "with at least the first's memory per GPU, its cheapest type with the pool's GPUs per node and at "
                  "least the first type's CPUs and memory, priced at the set's worst spot price, where the provisioner "
                  "takes several types (as `instance_types` lists; else a `capability-gap` warning); a model with no "
                  "such type is left out with a `gpu-model-left-out` warning; not with `mig`)",
                  required=True, heading="`workloads[]`"),
    WorkloadField("kind", _kind, "", required=True),
    WorkloadField("gpu", _gpu, "", required=True),
    WorkloadField("gpus", _size, _SIZE_DOC, default=1, always=True, heading="size per replica"),
    WorkloadField("gpu_memory", None, "", kinds=SHAREABLE_KINDS, not_for=_WHOLE_GPUS, attribute="gpu_memory_gib",
                  read_with="gpus"),
    WorkloadField("mig", None, "", kinds=SHAREABLE_KINDS, not_for=_WHOLE_GPUS, read_with="gpus"),
    WorkloadField("gpu_fraction", None, "", kinds=SHAREABLE_KINDS, not_for=_WHOLE_GPUS, read_with="gpus"),
    WorkloadField("cpu", _cpu, "per replica (`4`, `\"500m\"`; `16Gi`)", heading="`cpu`, `memory`"),
    WorkloadField("memory", _memory, "", attribute="memory_gib"),
    WorkloadField("replicas", _replicas, "an integer, or for inference `{min, max}`: `min` is the steady floor",
                  default=1, always=True),
    WorkloadField("checkpointing", _checkpointing, "training and fine-tuning: needed to run on spot", default=False,
                  kinds=JOB_KINDS, not_for="checkpointing applies to training and fine-tuning, not {kind}"),
    WorkloadField("schedule", _schedule,
                  "notebooks and fine-tuning: `{days: Mon-Fri, hours: \"08:00-18:00\", timezone: Europe/Berlin}`; "
                  "a window may cross midnight (`\"22:00-06:00\"`). `days`: a range (`Mon-Fri`; `Fri-Mon` wraps over "
                  "the weekend), a list (`Mon,Wed,Fri`), full names (`Monday-Friday`), or `daily`, `weekdays` (= "
                  "`Mon-Fri`), `weekends` (= `Sat-Sun`), in any case (`Weekdays`). `timezone` is an IANA zone name: "
                  "an abbreviation gets the zones that use it (`CEST`: `Europe/Berlin`, `Europe/Paris`, ...; never a "
                  "spelling match such as `EST`), an offset its fixed `Etc` zone with the sign explained (`UTC+1`: "
                  "`Etc/GMT-1`, as POSIX inverts the sign) or a city zone that follows daylight saving time "
                  "(`Europe/Berlin`)",
                  kinds=SCHEDULABLE_KINDS,
                  not_for=f"a schedule applies to {' and '.join(sorted(SCHEDULABLE_KINDS))} workloads, not {{kind}}"),
    WorkloadField("hours_per_month", _hours,
                  "hours a month, at most 730 (default: always on). training, fine-tuning: the hours the job runs; "
                  "inference: the hours the burst above `replicas.min` runs (the floor runs, and serves, all month); "
                  "notebooks: use a `schedule` instead"),
    WorkloadField("runs_per_month", _runs,
                  "unit costs: per training run; per 1,000 requests (inference: the requests of every hour it "
                  "serves, all month while a floor runs)", heading="`runs_per_month`, `requests_per_hour`",
                  kinds=JOB_KINDS, not_for="runs_per_month is for training and fine-tuning, not {kind}"),
    WorkloadField("requests_per_hour", _requests, "", kinds=("inference",),
                  not_for="requests_per_hour is for inference, not {kind}"),
    WorkloadField("labels", _labels,
                  "the workload's own labels (`{team: search}`), over the spec's `labels`: on its pods, and on its "
                  "pools' nodes where every workload of the pool gives the same pair", default={}, always=True),
    WorkloadField("capacity", _capacity,
                  "overrides: `spot`/`on-demand`/`reserved` (and `block`/`flex`, below); `none`/`time-slicing`/`mps`/"
                  "`mig`/`fractional` (`fractional`: the asked share enforced by HAMi, in whole percents; opt-in only, "
                  "never chosen in place of MIG or time-slicing; not on GKE; docs/sharing.md section 5). An explicit "
                  "`spot` is honoured with a warning where it risks work (no checkpointing, spot-only serving, "
                  "notebooks); `reserved` cannot take a `schedule`. A capacity the cloud refuses for every type that "
                  "fits (Azure reservations of ND-series, GCP on-demand `a3-highgpu-1g`, OCI preemptible bare metal: "
                  "docs/deploy.md, \"What the clouds accept\") is a located error when given here; the default choice "
                  "falls back instead, with a warning", always=True, heading="`capacity`, `sharing`"),
    WorkloadField("sharing", _sharing, ""),
    WorkloadField("namespace", _namespace,
                  "the Kubernetes namespace of the workload (default `default`); auto-stop stops the objects labelled "
                  "`gpustack.dev/workload: <name>` there (see `autostop`)", default="default"),
    WorkloadField("instance_types", _instance_types,
                  "optional pins per cloud, e.g. `{aws: p4de.24xlarge, gcp: a2-ultragpu-4g}`: without one, the "
                  "instance type is the cheapest for the replicas, so a new replica count can move the workload to "
                  "another type (a new node pool, shown by `gpustack diff`); a pin keeps it. Training, fine-tuning and "
                  "notebooks may give a list per cloud, e.g. `{aws: [g4dn.2xlarge, g4dn.4xlarge, g4dn.8xlarge]}` (at "
                  "most 20, each with the workload's GPU and the first one's GPU count): the first is the pin, and the "
                  "spot pool may launch any of them, so spot capacity is taken from several pools of the cloud. The "
                  "spot pool is packed on the first type and priced at the worst spot price of the set (the plan's "
                  "`price.source` and a pool note say which type), and the on-demand fallback keeps the first type. "
                  "EKS managed node groups take the list (`instanceTypes`; a warning when the types differ in CPU or "
                  "memory, which the cluster autoscaler cannot model), Karpenter NodePools (EKS, OKE) and AKS node "
                  "auto-provisioning a `node.kubernetes.io/instance-type In [...]` requirement, GKE ComputeClasses one "
                  "spot priority per type in the list's order; GKE node pools, AKS agent pools and OKE node pools have "
                  "one machine type, so there the pool keeps the first type and a `capability-gap` warning says so",
                  default=((), ()), attribute=("instance_types", "spot_alternatives")),
    WorkloadField("burst_share", _burst_share,
                  "inference: the share (0 to 1) of the burst's peak above `min_nodes` expected to run, for the low "
                  "end of the cost range (default 0.5)", kinds=("inference",),
                  not_for="burst_share is for inference (the burst above replicas.min), not {kind}"),
    WorkloadField("disk", _disk,
                  "optional root / boot volume per node, e.g. `300Gi` (at least 30Gi, within the cloud's limits); "
                  "default by GPU class: 150Gi below 32 GB of GPU memory, 300Gi below 64 GB, else 500Gi. A "
                  "non-default size gets its own pool (`...-disk300`), so it never resizes another workload's nodes",
                  attribute="disk_gib"),
    WorkloadField("idle", _idle,
                  "opt-in, `{below: 10%, for: 15m, action: scale-to-zero \\| alert}` (`below` 1% to 50%, `for` 5m to "
                  "24h, `action` default `alert`): `scale-to-zero` takes the workload's Deployment (inference) or "
                  "StatefulSet (notebook) to zero once its GPUs stay below `below` for `for` (docs/autostop.md, "
                  "\"Idle GPUs acted on\"). Refused on an inference floor (`replicas.min` above 0) unless `floors: "
                  "true`; not for training or fine-tuning (Jobs end by themselves). Without `idle`: the per-pool "
                  "alert only"),
    WorkloadField("autostop", _autostop,
                  "scheduled workloads: `{kind, name}`, what auto-stop stops outside the schedule: `kind` is "
                  "`deployment`, `statefulset` or `notebook` (a Kubeflow Notebook) or `jupyterhub` for notebooks, "
                  "`deployment`, `statefulset`, `job` or `cronjob` for fine-tuning; `name` (optional, not for "
                  "`jupyterhub`) is the one object, else every object of the kind labelled `gpustack.dev/workload: "
                  "<name>`. Default: detected by that label across the kinds of the workload's kind. What each kind "
                  "gets: docs/autostop.md, \"Dev auto-stop\""),
    WorkloadField("availability", _availability,
                  "inference: `{zones: 2, max_replicas_per_node: 1}` (either key; `zones` 1 to 6, default 1), for a "
                  "service that must survive a zone or a node. The workload gets pools of its own (named "
                  "`...-<workload>-z2n1`, so no other workload's pool is renamed), sized so that its replicas are "
                  "balanced over `zones` zones with at most `max_replicas_per_node` on a node; its reserved floor gets "
                  "one capacity reservation per zone: EKS one node group and reservation per subnet of "
                  "`settings.subnet_ids` (each subnet lies in one zone), AKS a zonal agent pool over `settings.zones` "
                  "(`[\"1\", \"2\"]`) with a zonal reservation group, GKE the first zones of `settings.node_locations` "
                  "that offer the GPU, OKE one placement per availability domain of `settings.availability_domains`, "
                  "each on its own reservation (under Karpenter the floor keeps one reservation, with a warning). The "
                  "plan names fewer zones than asked: a located error. Each spread pool shows what the spread costs "
                  "(`availability.extra_monthly_usd`, and a note); `render --workloads` gives the pods topology "
                  "spread constraints on `topology.kubernetes.io/zone` and `kubernetes.io/hostname`; without it, "
                  "`gpustack check` warns on an inference floor on one node or in one zone (`inference-floor-spread`)"),
    WorkloadField("container", _container,
                  "the name of the workload's GPU container in its object (a DNS label): the one container `gpustack "
                  "render --workloads` patches and `gpustack check --manifests` expects the GPU request on. Default: "
                  "the object's only container when `render --workloads --manifests` sees it, else the workload's "
                  "`name` (docs/workloads.md \"Which container is patched\")"),
    WorkloadField("block", None,
                  "training and fine-tuning with `checkpointing: true`, on targets whose cloud sells capacity blocks "
                  "(aws): `block: {zone, instance_type, instances, start, days, reservation_id \\| offering_id, "
                  "upfront_usd \\| usd_per_instance_hour}`. `days` as EC2 sells them (1 to 14, then 21 to 182 in steps "
                  "of 7), `instances` at most 64, `start` an ISO UTC time (`\"2026-12-07T11:30:00Z\"`), `zone` a zone "
                  "of the target's region. `reservation_id` (`cr-...`): the block you hold; `offering_id` (`cb-...`): "
                  "the Pulumi program buys it (`aws.ec2.CapacityBlockReservation`, protected; `pulumi destroy` never "
                  "refunds it, the plan warns `capacity-block-purchase`). Priced from `upfront_usd` (the offering's "
                  "upfront fee) or a declared `usd_per_instance_hour`, paid up front, non-refundable. The pool has the "
                  "block's instances, in its zone, backed by an on-demand fallback pool (docs/capacity.md)",
                  heading="`capacity: block`, `block`", read_with="capacity"),
    WorkloadField("flex", None,
                  "training and fine-tuning with `checkpointing: true`, on targets whose cloud sells flex-start (gcp): "
                  "`flex: {max_run_hours: 168, queued: false}` (optional; at most 168): flex-start node pools, with "
                  "`queued: true` through queued provisioning (ProvisioningRequests); under `provisioner: "
                  "compute-class` a `flexStart` priority. Priced at on-demand less `pricing.flex_discount` (declared), "
                  "else GKE's published \"up to 53%\" (warning `flex-discount-assumed`); backed by an on-demand "
                  "fallback pool (docs/capacity.md)", heading="`capacity: flex`, `flex`", read_with="capacity"),
)

_ROWS = {row.key: row for row in WORKLOAD_FIELDS}
WORKLOAD_KEYS = tuple(row.key for row in WORKLOAD_FIELDS if row.required)
WORKLOAD_OPTIONAL = tuple(row.key for row in WORKLOAD_FIELDS if not row.required)
SIZE_FORMS = ("gpus", *(row.key for row in WORKLOAD_FIELDS if row.read_with == "gpus"))


def reference_rows() -> list[str]:
    """The README's rows for workload keys (Markdown table rows): one per documented row, in table order."""
    return [f"| {row.heading or f'`{row.key}`'} | {row.doc} |" for row in WORKLOAD_FIELDS if row.doc]
