"""The report's test week: what four workloads did on AWS us-east-1 from Mon 2026-11-23 to Mon 2026-11-30
(UTC), as the series kube-state-metrics and the DCGM exporter emit, and the report's figures computed
from those series by a second, deliberately plain implementation of the report's definitions.

What the week holds (spec: tests/data/report/week.yaml; UTC; Berlin is UTC+1 in November):
- chat (whole L4s, replicas min 4): 4 replicas by day, 2 on most nights (3 on two nights), so the measured
  floor is 2; a burst to 6 on weekdays 12:00-15:00 onto burst-pool nodes that exist 11:52-15:20; one pod
  deleted on Wednesday at 14:37 and replaced (Pending until 14:41), which shows there is no 5-minute
  lookback smear; idle spans of 40 and 60 minutes (counted), 10 minutes (too short), 20 minutes with a
  missing sample in the middle (two short runs), 30 minutes at exactly 10% (not below).
- embed (MIG 3g.40gb on an A100-80GB): 2 replicas all week, a pod replaced on Thursday at 10:00, both idle
  on Saturday 00:00-06:00; GR_ENGINE_ACTIVE and FB_USED per MIG instance; the node's 7 other GPUs report
  under the exporter's own pod (honorLabels), as unallocated GPUs do.
- notebooks (time-sliced T4, Mon-Fri 08:00-18:00 Berlin): 4 notebooks 07:00-17:00 UTC, stopped 30 minutes
  late on Monday; on Friday two are left running all weekend (auto-stop broken); idle at lunch for an hour
  (counted, idle.for 30m) and for 20 minutes in the afternoon (too short).
- sandbox (a time-sliced T4 without a schedule): up all week, busy only 13:00-15:00 on weekdays, so the
  report recommends a schedule, priced by the planner.
- ranker (enforced halves of one L4, HAMi): 2 replicas all week; HAMi's vGPU monitor reports per container
  (no DCGM series for it); one replica idle on Sunday 01:00-03:00 (counted) and 02:00-02:10 the other (too short).
- trainer (spot L4s): 2 pods Tuesday 09:00 to Thursday 21:00 (then Succeeded, deleted 10 minutes later);
  its pool has no DCGM exporter, so its idle and memory figures are unknown.

How the lookback is handled: every sample is written at the middle of its step (start + i*60 + 30) with
the scrape interval equal to the step, and the report reads each step with range functions over exactly
one step, so a series that stopped (backfilled data has no staleness markers) is not carried for the
5 minutes an instant selector would look back: the pod deleted at 14:37 stops counting at 14:37.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import uuid
import zoneinfo
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from prometheus_server import Labels, OpenMetricsWriter

SPEC = Path(__file__).resolve().parent / "data" / "report" / "week.yaml"
TARGET = "aws-week"
UNTIL = "2026-11-30T00:00:00Z"
SINCE = "7d"
END = datetime(2026, 11, 30, tzinfo=UTC)
START = END - timedelta(days=7)
STEP_S = 60
STEPS = 7 * 24 * 60
STEP_HOURS = STEP_S / 3600
START_S = int(START.timestamp())
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
KSM = (("instance", "10.0.0.5:8080"), ("job", "kube-state-metrics"))
MODEL_NAMES = {"L4": "NVIDIA L4", "A100-80GB": "NVIDIA A100-SXM4-80GB", "T4": "Tesla T4"}


def at(day: int, hour: int, minute: int = 0) -> int:
    """The step index of day (0 = Monday 2026-11-23) hh:mm UTC."""
    return (day * 24 + hour) * 60 + minute


def _digest(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()


def _suffix(*parts: object, length: int = 5) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"  # the characters Kubernetes' name generator uses
    number = int(_digest(*parts), 16)
    return "".join(alphabet[(number >> (5 * k)) % len(alphabet)] for k in range(length))


def noise(*parts: object, low: float, high: float) -> float:
    """A deterministic value in [low, high], rounded to 0.1."""
    fraction = int(_digest(*parts)[:8], 16) / 0xFFFFFFFF
    return round(low + (high - low) * fraction, 1)


@dataclasses.dataclass(frozen=True)
class Series:
    name: str
    labels: Labels  # sorted by name
    values: tuple[float | None, ...]  # one per step; None: no sample in that step

    def label(self, key: str) -> str:
        return dict(self.labels).get(key, "")

    def samples(self) -> Iterator[tuple[int, float]]:
        for i, value in enumerate(self.values):
            if value is not None:
                yield START_S + i * STEP_S + STEP_S // 2, value


def series(name: str, labels: dict[str, str], values: list[float | None]) -> Series:
    assert len(values) == STEPS
    return Series(name, tuple(sorted(labels.items())), tuple(values))


def span(first: int, end: int, value: float = 1.0) -> list[float | None]:
    return [value if first <= i < end else None for i in range(STEPS)]


@dataclasses.dataclass(frozen=True)
class Node:
    name: str
    pool: str
    first: int
    end: int


@dataclasses.dataclass(frozen=True)
class Gpu:
    """One device (or MIG instance) as the DCGM exporter labels it."""

    index: int
    model: str
    mig_instance: int | None = None  # GPU_I_ID
    mig_profile: str = ""

    def uuid(self, node: str) -> str:
        return "GPU-" + str(uuid.UUID(_digest("gpu", node, self.index)[:32]))


@dataclasses.dataclass(frozen=True)
class Pod:
    workload: str  # "" for pods of no gpustack workload (the exporter's own)
    namespace: str
    name: str
    node: str
    owner_kind: str
    owner_name: str
    container: str
    gpu_resource: str  # kube-state-metrics' sanitised resource name
    created: int
    running: int  # Pending before this step
    finished: int  # Running before this step
    end: int  # deleted at this step (Succeeded between finished and end)
    gpu: Gpu | None = None
    util: Callable[[int], float | None] | None = None  # per running step
    memory_mib: Callable[[int], float | None] | None = None
    exporter: str = "dcgm"  # or "hami": HAMi's vGPU monitor (fractional pools)

    @property
    def uid(self) -> str:
        return str(uuid.UUID(_digest("uid", self.namespace, self.name, self.created)[:32]))

    def phase(self, i: int) -> str | None:
        if not self.created <= i < self.end:
            return None
        return "Pending" if i < self.running else "Running" if i < self.finished else "Succeeded"


@dataclasses.dataclass(frozen=True)
class PlanFacts:
    """What the week needs from the plan: pool names per role, GPUs per replica, prices."""

    chat_reserved: str
    chat_burst: str
    embed_pool: str
    notebook_pool: str
    sandbox_pool: str
    ranker_pool: str
    trainer_pool: str
    gpus_per_replica: dict[str, float]
    usd_per_node_hour: dict[str, float]
    monthly_cost_usd: dict[str, float]
    reserved_pools: frozenset[str]
    min_nodes: dict[str, int]
    sharing: dict[str, str]  # per workload: its pool's sharing mode


def plan_facts() -> PlanFacts:
    from gpustack.plan import build_plan
    from gpustack.spec import load_spec

    target = build_plan(load_spec(SPEC)).target(TARGET)

    def pool(workload: str, capacity: str) -> str:
        [name] = [p.name for p in target.pools if workload in [pl.workload for pl in p.placements]
                  and p.capacity == capacity]
        return name

    shares = {pl.workload: pl.gpu_share for p in target.pools for pl in p.placements}
    return PlanFacts(
        chat_reserved=pool("chat", "reserved"), chat_burst=pool("chat", "on-demand"),
        embed_pool=pool("embed", "reserved"), notebook_pool=pool("notebooks", "on-demand"),
        sandbox_pool=pool("sandbox", "on-demand"),
        ranker_pool=pool("ranker", "reserved"),
        trainer_pool=pool("trainer", "spot"), gpus_per_replica=shares,
        usd_per_node_hour={p.name: p.price.usd_per_node_hour for p in target.pools},
        monthly_cost_usd={p.name: p.monthly_cost_usd for p in target.pools},
        reserved_pools=frozenset(p.name for p in target.pools if p.capacity == "reserved"),
        min_nodes={p.name: p.min_nodes for p in target.pools},
        sharing={pl.workload: p.sharing.mode for p in target.pools for pl in p.placements})


# --- the week's cluster -------------------------------------------------------------------------


def _chat_util(pod_key: str) -> Callable[[int], float | None]:
    def util(i: int) -> float | None:
        hour = (i // 60) % 24
        busy = noise("chat", pod_key, i, low=35, high=75) if 8 <= hour < 20 else noise(
            "chat", pod_key, i, low=15, high=40)
        if pod_key == "a":
            if at(1, 2) <= i < at(1, 2, 40):
                return 3.0  # 40 minutes: an idle span
            if at(2, 3) <= i < at(2, 3, 10):
                return 4.0  # 10 minutes: shorter than idle.for
            if at(4, 4) <= i < at(4, 4, 30):
                return 10.0  # at the threshold, not below it
        if pod_key == "b" and at(3, 1) <= i < at(3, 1, 20):
            return None if i == at(3, 1, 10) else 2.0  # a missed scrape splits 20 minutes in two
        if pod_key == "d0" and at(0, 18) <= i < at(0, 19):
            return 5.0  # an hour: an idle span
        return busy
    return util


def _embed_util(pod_key: str) -> Callable[[int], float | None]:
    def util(i: int) -> float | None:
        if at(5, 0) <= i < at(5, 6):
            return 0.03  # Saturday night: six idle hours on both instances
        return noise("embed", pod_key, i, low=0.25, high=0.6)
    return util


def _notebook_util(i: int) -> float | None:
    """The shared T4's utilisation (all notebooks together), the same in every sharer's series."""
    day, minute_of_day = divmod(i, 1440)
    if day >= 5 or (day == 4 and minute_of_day >= 17 * 60):
        return 0.0  # left running over the weekend, nobody at the keyboard
    if 11 * 60 <= minute_of_day < 12 * 60:
        return 1.0  # lunch: an hour, counted (idle.for 30m)
    if 15 * 60 <= minute_of_day < 15 * 60 + 20:
        return 2.0  # 20 minutes: shorter than idle.for
    return noise("notebook-device", i, low=20, high=60)


def _notebook_memory(i: int) -> float | None:
    day, minute_of_day = divmod(i, 1440)
    if day >= 5 or (day == 4 and minute_of_day >= 17 * 60):
        return 2200.0
    return float(int(noise("notebook-fb", i, low=3000, high=9000)))


def _sandbox_util(i: int) -> float | None:
    day, minute_of_day = divmod(i, 1440)
    if day < 5 and 13 * 60 <= minute_of_day < 15 * 60:
        return noise("sandbox", i, low=30, high=70)
    return 1.0


def cluster(facts: PlanFacts) -> tuple[list[Node], list[Pod]]:
    """The week's nodes and pods."""
    nodes: list[Node] = []
    pods: list[Pod] = []
    l4 = Gpu(0, "L4")

    reserved = [f"ip-10-0-1-{11 + k}.ec2.internal" for k in range(4)]
    nodes += [Node(name, facts.chat_reserved, 0, STEPS) for name in reserved]
    exporter_pods = {name: f"nvidia-dcgm-exporter-{_suffix('exporter', name)}" for name in reserved}
    for name, exporter in exporter_pods.items():  # a DaemonSet pod on every node: no workload of the spec
        pods.append(Pod("", "gpu-operator", exporter, name, "DaemonSet", "nvidia-dcgm-exporter",
                        "nvidia-dcgm-exporter", "", 0, 0, STEPS, STEPS))

    def chat_pod(key: str, node: str, created: int, running: int, end: int) -> Pod:
        name = f"chat-7d9f8b6c5d-{_suffix('chat', key)}"
        memory = (lambda i, k=key: float(int(noise("chat-fb", k, i, low=14000, high=18000))))
        return Pod("chat", "serving", name, node, "ReplicaSet", "chat-7d9f8b6c5d", "server", "nvidia_com_gpu",
                   created, running, end, end, l4, _chat_util(key), memory)

    pods.append(chat_pod("a", reserved[0], 0, 0, STEPS))
    pods.append(chat_pod("b", reserved[1], 0, 0, at(2, 14, 37)))  # deleted mid-step-run on Wednesday
    pods.append(chat_pod("b2", reserved[1], at(2, 14, 37), at(2, 14, 41), STEPS))
    for day in range(7):
        if day not in (3, 4):  # Wednesday's third replica stays up two nights
            end = at(4, 20) if day == 2 else at(day, 20)
            pods.append(chat_pod(f"c{day}", reserved[2], at(day, 8), at(day, 8, 2), end))
        pods.append(chat_pod(f"d{day}", reserved[3], at(day, 8), at(day, 8, 2), at(day, 20)))
    for day in range(5):  # the weekday lunch burst onto on-demand nodes
        for k in range(2):
            node = f"ip-10-0-2-{20 + 2 * day + k}.ec2.internal"
            nodes.append(Node(node, facts.chat_burst, at(day, 11, 52), at(day, 15, 20)))
            pods.append(chat_pod(f"burst{day}{k}", node, at(day, 12), at(day, 12, 3), at(day, 15)))

    mig_node = "ip-10-0-3-30.ec2.internal"
    nodes.append(Node(mig_node, facts.embed_pool, 0, STEPS))
    exporter = f"nvidia-dcgm-exporter-{_suffix('exporter', mig_node)}"
    pods.append(Pod("", "gpu-operator", exporter, mig_node, "DaemonSet", "nvidia-dcgm-exporter",
                    "nvidia-dcgm-exporter", "", 0, 0, STEPS, STEPS))

    def embed_pod(key: str, instance: int, created: int, running: int, end: int) -> Pod:
        name = f"embed-5c8d7f9b4a-{_suffix('embed', key)}"
        memory = (lambda i, k=key: float(int(noise("embed-fb", k, i, low=11000, high=13500))))
        return Pod("embed", "serving", name, mig_node, "ReplicaSet", "embed-5c8d7f9b4a", "server",
                   "nvidia_com_mig_3g_40gb", created, running, end, end,
                   Gpu(0, "A100-80GB", instance, "3g.40gb"), _embed_util(key), memory)

    pods.append(embed_pod("g", 1, 0, 0, STEPS))
    pods.append(embed_pod("h", 2, 0, 0, at(3, 10)))
    pods.append(embed_pod("h2", 2, at(3, 10), at(3, 10, 1), STEPS))

    t4 = Gpu(0, "T4")
    for day in range(5):
        node = f"ip-10-0-4-{40 + day}.ec2.internal"
        node_end = STEPS if day == 4 else at(day, 17, 40 if day == 0 else 10)
        nodes.append(Node(node, facts.notebook_pool, at(day, 6, 55), node_end))
        for k in range(4):
            end = at(0, 17, 30) if day == 0 else STEPS if (day == 4 and k < 2) else at(day, 17)
            pods.append(Pod("notebooks", "research", f"notebooks-{k}", node, "StatefulSet", "notebooks",
                            "notebook", "nvidia_com_gpu", at(day, 7), at(day, 7, 3), end, end, t4,
                            _notebook_util, _notebook_memory))

    sandbox_node = "ip-10-0-6-60.ec2.internal"
    nodes.append(Node(sandbox_node, facts.sandbox_pool, 0, STEPS))
    pods.append(Pod("sandbox", "research", "sandbox-0", sandbox_node, "StatefulSet", "sandbox", "notebook",
                    "nvidia_com_gpu", 0, 0, STEPS, STEPS, t4, _sandbox_util,
                    lambda i: float(int(noise("sandbox-fb", i, low=4000, high=5200)))))

    ranker_node = "ip-10-0-7-70.ec2.internal"
    nodes.append(Node(ranker_node, facts.ranker_pool, 0, STEPS))
    for k in range(2):
        def ranker_util(i: int, k: int = k) -> float | None:
            if (k == 0 and at(6, 1) <= i < at(6, 3)) or (k == 1 and at(6, 2) <= i < at(6, 2, 10)):
                return 0.0
            return noise("ranker", k, i, low=25, high=65)

        def ranker_memory(i: int, k: int = k) -> float | None:
            return float(int(noise("ranker-fb", k, i, low=4000, high=6000)))
        pods.append(Pod("ranker", "serving", f"ranker-6b7c8d9e5f-{_suffix('ranker', k)}", ranker_node, "ReplicaSet",
                        "ranker-6b7c8d9e5f", "server", "nvidia_com_gpu", 0, 0, STEPS, STEPS, l4, ranker_util,
                        ranker_memory, "hami"))

    train_nodes = [f"ip-10-0-5-{50 + k}.ec2.internal" for k in range(2)]
    nodes += [Node(name, facts.trainer_pool, at(1, 8, 55), at(3, 21, 20)) for name in train_nodes]
    for k, node in enumerate(train_nodes):  # an indexed Job; no DCGM exporter on this pool
        pods.append(Pod("trainer", "training", f"trainer-{k}-{_suffix('trainer', k)}", node, "Job", "trainer",
                        "trainer", "nvidia_com_gpu", at(1, 9), at(1, 9, 4), at(3, 21), at(3, 21, 10)))
    return nodes, pods


# --- the series -------------------------------------------------------------------------------


def _dcgm_labels(pod: Pod, gpu: Gpu) -> dict[str, str]:
    labels = {"gpu": str(gpu.index), "UUID": gpu.uuid(pod.node), "device": f"nvidia{gpu.index}",
              "pci_bus_id": f"00000000:{0x10 + gpu.index:02X}:00.0", "modelName": MODEL_NAMES[gpu.model],
              "Hostname": pod.node, "namespace": pod.namespace, "pod": pod.name, "container": pod.container,
              "instance": f"{pod.node}:9400", "job": "nvidia-dcgm-exporter"}
    if gpu.mig_instance is not None:
        labels |= {"GPU_I_ID": str(gpu.mig_instance), "GPU_I_PROFILE": gpu.mig_profile}
    return labels


def week_series(facts: PlanFacts) -> list[Series]:
    """Every series of the week, grouped by metric family."""
    nodes, pods = cluster(facts)
    out: list[Series] = []
    for node in nodes:
        out.append(series("kube_node_labels", {"node": node.name, "label_gpustack_dev_pool": node.pool, **dict(KSM)},
                          span(node.first, node.end)))
    for pod in pods:
        ident = {"namespace": pod.namespace, "pod": pod.name, "uid": pod.uid, **dict(KSM)}
        labels = ident | ({"label_gpustack_dev_workload": pod.workload} if pod.workload else {})
        out.append(series("kube_pod_labels", labels, span(pod.created, pod.end)))
    for pod in pods:
        out.append(series("kube_pod_info", {
            "namespace": pod.namespace, "pod": pod.name, "uid": pod.uid, "node": pod.node,
            "host_ip": "10.0.0.1", "pod_ip": "10.1.0.1", "created_by_kind": pod.owner_kind,
            "created_by_name": pod.owner_name, "priority_class": "", "host_network": "false", **dict(KSM)},
            span(pod.created, pod.end)))
    for pod in pods:
        for phase in PHASES:
            values = [None if pod.phase(i) is None else float(pod.phase(i) == phase) for i in range(STEPS)]
            out.append(series("kube_pod_status_phase", {"namespace": pod.namespace, "pod": pod.name,
                                                        "uid": pod.uid, "phase": phase, **dict(KSM)}, values))
    for pod in pods:
        if pod.gpu_resource:
            out.append(series("kube_pod_container_resource_requests", {
                "namespace": pod.namespace, "pod": pod.name, "uid": pod.uid, "container": pod.container,
                "node": pod.node, "resource": pod.gpu_resource, "unit": "integer", **dict(KSM)},
                span(pod.created, pod.end)))
    for kind, owner, metric, label in (("ReplicaSet", "chat-7d9f8b6c5d", "kube_deployment_spec_replicas", "chat"),
                                       ("ReplicaSet", "embed-5c8d7f9b4a", "kube_deployment_spec_replicas", "embed"),
                                       ("ReplicaSet", "ranker-6b7c8d9e5f", "kube_deployment_spec_replicas", "ranker"),
                                       ("StatefulSet", "notebooks", "kube_statefulset_replicas", "notebooks"),
                                       ("StatefulSet", "sandbox", "kube_statefulset_replicas", "sandbox")):
        owned = [p for p in pods if p.owner_kind == kind and p.owner_name == owner]
        namespace = owned[0].namespace
        key = "deployment" if metric == "kube_deployment_spec_replicas" else "statefulset"
        out.append(series(metric, {"namespace": namespace, key: label, **dict(KSM)},
                          [float(sum(p.created <= i < p.end for p in owned)) for i in range(STEPS)]))
    for metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"):
        for pod in pods:
            if pod.gpu is None or pod.util is None or pod.memory_mib is None or pod.exporter != "dcgm":
                continue
            mig = pod.gpu.mig_instance is not None
            if (metric == "DCGM_FI_DEV_GPU_UTIL" and mig) or (metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" and not mig):
                continue
            source = pod.memory_mib if metric == "DCGM_FI_DEV_FB_USED" else pod.util
            values = []
            for i in range(STEPS):
                utilisation = pod.util(i)  # a missed scrape drops every series of the exporter
                values.append(source(i) if pod.running <= i < pod.finished and utilisation is not None else None)
            out.append(series(metric, _dcgm_labels(pod, pod.gpu), values))
        if metric != "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
            # The MIG node's seven unallocated GPUs: no pod of their own, so honorLabels leaves them with
            # the exporter pod's target labels.
            [exporter] = [p for p in pods if p.node == "ip-10-0-3-30.ec2.internal" and not p.workload]
            for index in range(1, 8):
                out.append(series(metric, _dcgm_labels(exporter, Gpu(index, "A100-80GB")), span(0, STEPS, 0.0)))
    hami = [p for p in pods if p.exporter == "hami" and p.util is not None and p.memory_mib is not None]
    for metric in ("hami_container_device_utilization_ratio", "hami_vgpu_memory_used_bytes"):
        for pod in hami:
            assert pod.gpu is not None and pod.util is not None and pod.memory_mib is not None
            labels = {"namespace": pod.namespace, "pod": pod.name, "container": pod.container, "vdevice_index": "0",
                      "device_uuid": pod.gpu.uuid(pod.node), "instance": f"{pod.node}:9394",
                      "job": "hami-device-plugin-monitor"}
            scale = 1.0 if metric == "hami_container_device_utilization_ratio" else 2.0**20  # MiB -> bytes
            source = pod.util if metric == "hami_container_device_utilization_ratio" else pod.memory_mib
            values = [source(i) if pod.running <= i < pod.finished else None for i in range(STEPS)]
            out.append(series(metric, labels, [None if v is None else v * scale for v in values]))
    return out


def write_openmetrics(all_series: list[Series], path: Path) -> int:
    """The series as an OpenMetrics file for promtool; returns the number of samples."""
    with path.open("w", encoding="utf-8") as out:
        writer = OpenMetricsWriter(out)
        for s in all_series:
            if s.name != writer.current:
                writer.family(s.name)
            writer.series(s.name, s.labels, s.samples())
        writer.close()
    return writer.samples


# --- the expected report, from the series alone ------------------------------------------------


def _nearest_rank(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[math.ceil(q * len(ordered)) - 1]


def _in_schedule(i: int, days: set[int], first_minute: int, end_minute: int, tz: zoneinfo.ZoneInfo) -> bool:
    local = (START + timedelta(seconds=i * STEP_S)).astimezone(tz)
    minute = local.hour * 60 + local.minute
    return local.weekday() in days and first_minute <= minute < end_minute


def expected_report(all_series: list[Series], facts: PlanFacts, floor_quantile: float = 0.95) -> dict[str, Any]:
    """The contract's figures computed from the written series (not from the code under test)."""
    import yaml

    spec = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    by_name: dict[str, list[Series]] = defaultdict(list)
    for s in all_series:
        by_name[s.name].append(s)
    running: dict[tuple[str, str, str], list[bool]] = {}
    for s in by_name["kube_pod_status_phase"]:
        if s.label("phase") == "Running":
            running[(s.label("namespace"), s.label("pod"), s.label("uid"))] = [v == 1 for v in s.values]
    pod_node = {(s.label("namespace"), s.label("pod"), s.label("uid")): s.label("node") for s in by_name["kube_pod_info"]}
    pod_workload = {(s.label("namespace"), s.label("pod"), s.label("uid")): s.label("label_gpustack_dev_workload")
                    for s in by_name["kube_pod_labels"]}

    workloads = []
    for w in sorted(spec["workloads"], key=lambda w: w["name"]):
        name, namespace = w["name"], w.get("namespace", "default")
        share = facts.gpus_per_replica[name]
        mine = [key for key, wl in pod_workload.items() if wl == name and key[0] == namespace]
        replicas = [sum(running[key][i] for key in mine) for i in range(STEPS)]
        floor = max((n for n in range(1, max(replicas) + 1)
                     if sum(r >= n for r in replicas) >= floor_quantile * STEPS), default=0)
        planned = w["replicas"] if isinstance(w["replicas"], dict) else {"min": w["replicas"], "max": w["replicas"]}
        names = {(key[0], key[1]) for key in mine}

        def pod_runs(ns: str, pod: str, i: int, mine: list[tuple[str, str, str]] = mine) -> bool:
            return any(running[key][i] for key in mine if key[:2] == (ns, pod))

        util_series = [s for s in by_name["DCGM_FI_DEV_GPU_UTIL"] + by_name["DCGM_FI_PROF_GR_ENGINE_ACTIVE"]
                       + by_name["hami_container_device_utilization_ratio"]
                       if (s.label("namespace"), s.label("pod")) in names]
        idle = w.get("idle", {})
        below = float(str(idle.get("below", "10%")).rstrip("%"))
        idle_for = str(idle.get("for", "15m"))
        idle_for_steps = int(idle_for[:-1]) * {"m": 1, "h": 60}[idle_for[-1]] * 60 // STEP_S
        weight = share if facts.sharing[name] != "none" else 1.0  # one series is one whole GPU
        idle_hours = 0.0
        for s in util_series:
            scale = 100.0 if s.name == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" else 1.0
            run = 0
            for i in range(STEPS + 1):
                v = s.values[i] if i < STEPS else None
                if v is not None and v * scale < below and pod_runs(s.label("namespace"), s.label("pod"), i):
                    run += 1
                    continue
                if run >= idle_for_steps:
                    idle_hours += run * STEP_HOURS * weight
                run = 0
        fb = [v for s in by_name["DCGM_FI_DEV_FB_USED"] if (s.label("namespace"), s.label("pod")) in names
              for v in s.values if v is not None]
        fb += [v / 2**20 for s in by_name["hami_vgpu_memory_used_bytes"] if (s.label("namespace"), s.label("pod")) in names
               for v in s.values if v is not None]
        outside = None
        if "schedule" in w:
            sched = w["schedule"]
            first_day, last_day = (["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].index(d)
                                   for d in sched["days"].split("-"))
            days = set(range(first_day, last_day + 1))
            (h1, m1), (h2, m2) = (map(int, t.split(":")) for t in sched["hours"].split("-"))
            tz = zoneinfo.ZoneInfo(sched["timezone"])
            outside = sum(replicas[i] * share * STEP_HOURS for i in range(STEPS)
                          if not _in_schedule(i, days, h1 * 60 + m1, h2 * 60 + m2, tz))
        workloads.append({
            "name": name,
            "replicas": {"min": min(replicas), "p50": _nearest_rank(replicas, 0.5),
                         "p95": _nearest_rank(replicas, 0.95), "max": max(replicas), "floor": floor},
            "planned": {"min": planned["min"], "max": planned["max"]},
            "gpus_per_replica": share,
            "gpu_hours": sum(replicas) * share * STEP_HOURS,
            "idle_gpu_hours": idle_hours if util_series else None,
            "outside_window_gpu_hours": outside,
            "fb_used_p95_gib": _nearest_rank(fb, 0.95) / 1024 if fb else None,
        })

    spec_pods = {key for key, wl in pod_workload.items() if wl}
    pools = []
    window_hours = STEPS * STEP_HOURS
    for pool in sorted(facts.usd_per_node_hour):
        node_series = [s for s in by_name["kube_node_labels"] if s.label("label_gpustack_dev_pool") == pool]
        node_steps = sum(v is not None for s in node_series for v in s.values)
        used = None
        if pool in facts.reserved_pools:
            used_steps = 0
            for s in node_series:
                on_node = [key for key in spec_pods if pod_node[key] == s.label("node")]
                used_steps += sum(1 for i in range(STEPS)
                                  if s.values[i] is not None and any(running[key][i] for key in on_node))
            used = used_steps * STEP_HOURS
        node_hours = node_steps * STEP_HOURS
        pools.append({"name": pool, "node_hours": node_hours,
                      "cost_usd": node_hours * facts.usd_per_node_hour[pool],
                      "planned_cost_usd": facts.monthly_cost_usd[pool] * window_hours / 730,
                      "reserved_node_hours_used": used})
    return {"target": TARGET, "window": {"start": START.strftime("%Y-%m-%dT%H:%M:%SZ"), "end": UNTIL,
                                         "step_seconds": STEP_S},
            "workloads": workloads, "pools": pools}


def main(argv: list[str] | None = None) -> int:
    """`python tests/report_week.py [REPORT OPTIONS]`: serve the week and run `gpustack report` on it
    (default `--format table`), e.g. for the worked example of docs/report.md."""
    import subprocess
    import sys
    import tempfile

    from prometheus_server import prometheus_from_openmetrics

    extra = list(sys.argv[1:] if argv is None else argv) or ["--format", "table"]
    facts = plan_facts()
    with tempfile.TemporaryDirectory(prefix="gpustack-week-") as workdir:
        openmetrics = Path(workdir) / "week.om"
        write_openmetrics(week_series(facts), openmetrics)
        with prometheus_from_openmetrics(openmetrics, Path(workdir)) as server:
            return subprocess.call([sys.executable, "-m", "gpustack", "report", str(SPEC), "--target", TARGET,
                                    "--prometheus", server.url, "--since", SINCE, "--until", UNTIL, *extra])


if __name__ == "__main__":
    raise SystemExit(main())
