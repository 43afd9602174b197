"""`gpustack report` on a month of a large platform, against a local Prometheus server.

    make bench-report            # or: .venv/bin/python -m benchmarks.report [--days 30] [--keep DIR] [--baseline main]

A generated spec of 200 workloads (inference on whole L4s and on A100 MIG instances, spot training,
time-sliced notebooks) and 2,000 pods that churn over the month (rollouts every six days, training runs
of a day and a half, notebook sessions on weekdays; not all at once), written as kube-state-metrics and
DCGM exporter series with one sample a minute, backfilled with promtool and served by `prometheus` on
127.0.0.1 (tests/prometheus_server.py). The series are written a day at a time (one OpenMetrics file per
day, backfilled as one 24-hour block while the next day is written, then deleted), so generation streams
and the disk holds at most two days of text.

Printed: generation and backfill time (separately), samples and text written, the report's wall time and
the peak resident memory of the report process itself (its own rusage), and per query name the requests,
the server's evaluation seconds and samples read (its query log) and the series, points and bytes answered
(the run's recorded answers). `--baseline REV` first runs the report as of that git revision against the
same server, so two query plans are compared in one run, and says whether the two reports are the same byte
for byte. Targets: under 60 s and 1 GiB. Asserts nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from prometheus_server import PROMTOOL, prometheus_server, series_line_prefix  # noqa: E402

UNTIL = datetime(2026, 11, 30, tzinfo=UTC)
TARGET = "aws-bench"
STEP_S = 60
DAY_STEPS = 1440
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
REPORT_TIMEOUT_S = 1200.0
KSM = {"instance": "10.0.0.5:8080", "job": "kube-state-metrics"}


def bench_spec(workloads: int) -> dict:
    """`workloads` workloads: per 10, 1 MIG and 3 L4 inference services, 4 spot training jobs, 2 notebooks."""
    docs = []
    for k in range(workloads):
        slot = k % 10
        if slot == 0:
            docs.append({"name": f"svc-{k:03d}", "kind": "inference", "gpu": "A100-80GB", "mig": "2g.20gb",
                         "replicas": {"min": 2, "max": 3}, "namespace": "serving"})
        elif slot < 4:
            docs.append({"name": f"svc-{k:03d}", "kind": "inference", "gpu": "L4", "gpus": 1,
                         "replicas": {"min": 2, "max": 3}, "namespace": "serving"})
        elif slot < 8:
            docs.append({"name": f"train-{k:03d}", "kind": "training", "gpu": "L4", "gpus": 1, "replicas": 1,
                         "checkpointing": True, "namespace": "training"})
        else:
            docs.append({"name": f"nb-{k:03d}", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25,
                         "replicas": 1, "namespace": "research",
                         "schedule": {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "Europe/Berlin"}})
    return {"version": 1, "name": "bench", "labels": {"team": "ml-platform"},
            "targets": [{"name": TARGET, "cloud": "aws", "region": "us-east-1", "cluster": "ml-prod",
                         "settings": {"subnet_ids": ["subnet-0a1b2c3d4e5f60718"]}}],
            "workloads": docs}


@dataclasses.dataclass(frozen=True)
class Node:
    name: str
    pool: str
    first: int  # steps from the window's start
    end: int


@dataclasses.dataclass(frozen=True)
class Pod:
    workload: str
    namespace: str
    name: str
    uid: str
    node: str
    owner: str
    created: int
    running: int
    end: int
    seed: int
    mig_instance: int | None  # GPU_I_ID
    night_idle: bool  # below 10% from 00:00 to 06:00 UTC

    def segments(self) -> list[tuple[int, int, str]]:
        return [(self.created, self.running, "Pending"), (self.running, self.end, "Running")]


def _uid(seed: int) -> str:
    h = f"{(seed * 2654435761) % 2**128:032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def platform(spec: dict, pools: dict[tuple[str, str], str], steps: int, pods_per_workload: int) -> tuple[
        list[Node], list[Pod]]:
    """Nodes and pods: per workload `pods_per_workload` pods over the window."""
    nodes: list[Node] = []
    pods: list[Pod] = []
    days = steps // DAY_STEPS
    weekdays = [d for d in range(days) if (UNTIL - timedelta(days=days - d)).weekday() < 5]
    mig_nodes = [f"ip-10-9-0-{k}.ec2.internal" for k in range(2)]
    nodes += [Node(name, pools[("inference-mig", "reserved")], 0, steps) for name in mig_nodes]
    for index, w in enumerate(spec["workloads"]):
        name, seed = w["name"], index * 1000
        offset = (index * 37) % 720  # minutes: spread the rollouts and runs over the day
        if w["kind"] == "inference":
            generations = pods_per_workload // 2
            length = steps // generations
            mig = "mig" in w
            for slot in range(2):
                if mig:
                    node = mig_nodes[(index // 10) % 2]
                else:
                    node = f"ip-10-1-{index}-{slot}.ec2.internal"
                    nodes.append(Node(node, pools[("inference", "reserved")], 0, steps))
                for g in range(generations):
                    first = 0 if g == 0 else g * length + offset + slot * 3
                    end = steps if g == generations - 1 else (g + 1) * length + offset + slot * 3
                    pod_seed = seed + g * 2 + slot
                    pods.append(Pod(name, "serving", f"{name}-{pod_seed % 99991:05d}-{slot}{g}", _uid(pod_seed),
                                    node, "ReplicaSet", first, first if g == 0 else first + 2, end, pod_seed,
                                    (index // 20) * 2 + slot + 1 if mig else None, index % 3 == 0))
        elif w["kind"] == "training":
            gap = steps // pods_per_workload
            for r in range(pods_per_workload):
                first = r * gap + offset
                end = min(steps, first + 36 * 60)
                pod_seed = seed + r
                node = f"ip-10-2-{index}-{r}.ec2.internal"
                nodes.append(Node(node, pools[("training", "spot")], max(0, first - 5), min(steps, end + 10)))
                pods.append(Pod(name, "training", f"{name}-{r}-{pod_seed % 99991:05d}", _uid(pod_seed), node, "Job",
                                first, first + 4, end, pod_seed, None, False))
        else:
            for r, day in enumerate(weekdays[index % 2::2][:pods_per_workload]):
                first = day * DAY_STEPS + 7 * 60
                pod_seed = seed + r
                node = f"ip-10-3-{index}-{r}.ec2.internal"
                nodes.append(Node(node, pools[("notebook", "on-demand")], first - 5, first + 9 * 60 + 10))
                pods.append(Pod(name, "research", f"{name}-0", _uid(pod_seed), node, "StatefulSet",
                                first, first + 3, first + 9 * 60, pod_seed, None, False))
    return nodes, pods


def _lines(prefix: str, first: int, end: int, value: str, start_s: int) -> Iterator[str]:
    for i in range(first, end):
        yield f"{prefix} {value} {start_s + i * STEP_S + 30}\n"


class DayWriter:
    """One day's OpenMetrics text: every family once, its series' samples within [day_first, day_end)."""

    def __init__(self, nodes: list[Node], pods: list[Pod], start_s: int, memory_minutes: int = 60) -> None:
        self.nodes, self.pods, self.start_s = nodes, pods, start_s
        self.memory_minutes = memory_minutes  # how long a GPU's memory in use holds one value
        self._prefixes: dict[tuple[str, str], str] = {}

    def write(self, path: Path, day: int) -> int:
        lo, hi = day * DAY_STEPS, (day + 1) * DAY_STEPS
        samples = 0
        with path.open("w", encoding="utf-8", buffering=1 << 20) as out:
            def emit(prefix: str, first: int, end: int, value: str) -> None:
                nonlocal samples
                a, b = max(first, lo), min(end, hi)
                if a < b:
                    out.write("".join(_lines(prefix, a, b, value, self.start_s)))
                    samples += b - a

            out.write("# TYPE kube_node_labels gauge\n")
            for node in self.nodes:
                emit(series_line_prefix("kube_node_labels", _labels(
                    node=node.name, label_gpustack_dev_pool=node.pool, **KSM)), node.first, node.end, "1")
            alive = [p for p in self.pods if p.created < hi and p.end > lo]
            out.write("# TYPE kube_pod_labels gauge\n")
            for p in alive:
                emit(series_line_prefix("kube_pod_labels", _labels(
                    namespace=p.namespace, pod=p.name, uid=p.uid, label_gpustack_dev_workload=p.workload, **KSM)),
                     p.created, p.end, "1")
            out.write("# TYPE kube_pod_info gauge\n")
            for p in alive:
                emit(series_line_prefix("kube_pod_info", _labels(
                    namespace=p.namespace, pod=p.name, uid=p.uid, node=p.node, created_by_kind=p.owner,
                    created_by_name=p.workload, host_network="false", **KSM)), p.created, p.end, "1")
            out.write("# TYPE kube_pod_status_phase gauge\n")
            for p in alive:
                for phase in PHASES:
                    prefix = series_line_prefix("kube_pod_status_phase", _labels(
                        namespace=p.namespace, pod=p.name, uid=p.uid, phase=phase, **KSM))
                    for first, end, current in p.segments():
                        emit(prefix, first, end, "1" if current == phase else "0")
            out.write("# TYPE kube_pod_container_resource_requests gauge\n")
            for p in alive:
                resource = "nvidia_com_mig_2g_20gb" if p.mig_instance else "nvidia_com_gpu"
                emit(series_line_prefix("kube_pod_container_resource_requests", _labels(
                    namespace=p.namespace, pod=p.name, uid=p.uid, container="main", node=p.node,
                    resource=resource, unit="integer", **KSM)), p.created, p.end, "1")
            for metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED"):
                out.write(f"# TYPE {metric} gauge\n")
                for p in alive:
                    mig = p.mig_instance is not None
                    if (metric == "DCGM_FI_DEV_GPU_UTIL" and mig) or (
                            metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" and not mig):
                        continue
                    labels = {"gpu": "0", "UUID": f"GPU-{p.uid}", "device": "nvidia0", "modelName": "NVIDIA L4",
                              "Hostname": p.node, "namespace": p.namespace, "pod": p.name, "container": "main",
                              "instance": f"{p.node}:9400", "job": "nvidia-dcgm-exporter"}
                    if mig:
                        labels |= {"GPU_I_ID": str(p.mig_instance), "GPU_I_PROFILE": "2g.20gb",
                                   "modelName": "NVIDIA A100-SXM4-80GB"}
                    prefix = series_line_prefix(metric, _labels(**labels))
                    a, b = max(p.running, lo), min(p.end, hi)
                    if a >= b:
                        continue
                    out.write("".join(f"{prefix} {_value(metric, p, i, self.memory_minutes)} "
                                      f"{self.start_s + i * STEP_S + 30}\n"
                                      for i in range(a, b)))
                    samples += b - a
            out.write("# EOF\n")
        return samples


def _labels(**labels: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


def _value(metric: str, pod: Pod, i: int, memory_minutes: int = 60) -> str:
    if metric == "DCGM_FI_DEV_FB_USED":
        return str(6000 + (pod.seed * 131 + i // memory_minutes) % 4000)
    busy = 20 + (i * 37 + pod.seed * 11) % 61
    if pod.night_idle and (i % DAY_STEPS) < 6 * 60:
        busy = 3
    return f"{busy / 100:.2f}" if metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" else str(busy)


def backfill_day(path: Path, data_dir: Path) -> None:
    assert PROMTOOL is not None
    done = subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", "--quiet",
                           "--max-block-duration=24h", str(path), str(data_dir)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"promtool failed on {path.name}: {done.stdout}{done.stderr}")
    path.unlink()


def run_report(spec_path: Path, url: str, days: int, out: Path, code: Path | None = None) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MiB and exit code of one `gpustack report` process (`code`: run the gpustack
    package in this folder instead of this checkout's), recording its answers next to `out`."""
    command = [str(ROOT / ".venv" / "bin" / "gpustack"), "report", str(spec_path), "--target", TARGET,
               "--prometheus", url, "--since", f"{days}d", "--until", UNTIL.strftime("%Y-%m-%dT%H:%M:%SZ"),
               "--step", "1m", "--format", "json", "--record", str(out.with_suffix(".answers"))]
    if code is not None or not Path(command[0]).exists():
        command[0:1] = [sys.executable, "-m", "gpustack"]
    env = dict(os.environ, PYTHONPATH=str(code or ROOT))
    started = time.perf_counter()
    with out.open("wb") as stdout, (out.parent / "report.stderr").open("wb") as stderr:
        # From the code's folder: `python -m` puts the working directory first on the import path.
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env, cwd=code or ROOT)
        timer = threading.Timer(REPORT_TIMEOUT_S, process.kill)  # bounded: the figure is then the timeout
        timer.start()
        _, status, usage = os.wait4(process.pid, 0)
        timer.cancel()
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return seconds, usage.ru_maxrss / 1024, process.returncode


def baseline_code(revision: str, workdir: Path) -> Path:
    """The gpustack package of `revision` (git), to run the query plan it had beside this checkout's."""
    folder = workdir / f"baseline-{revision.replace('/', '_')}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "gpustack"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def load(args: argparse.Namespace, workdir: Path, data_dir: Path, spec_path: Path) -> None:
    """Write the spec and the month's series, a day at a time, backfilling each day while the next is written."""
    from gpustack.plan import build_plan
    from gpustack.spec import load_spec

    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir()
    spec = bench_spec(args.workloads)
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    target = build_plan(load_spec(spec_path)).target(TARGET)
    pools = {("inference-mig" if p.sharing.mode == "mig" else p.kind, p.capacity): p.name for p in target.pools}
    steps = args.days * DAY_STEPS
    start_s = int((UNTIL - timedelta(days=args.days)).timestamp())
    nodes, pods = platform(spec, pools, steps, args.pods // args.workloads)
    writer = DayWriter(nodes, pods, start_s, args.memory_minutes)

    generation = backfill_wait = 0.0
    samples = text_bytes = 0
    started = time.perf_counter()
    pending: threading.Thread | None = None
    for day in range(args.days):  # write day d while promtool backfills day d-1
        t0 = time.perf_counter()
        path = workdir / f"day-{day:02d}.om"
        samples += writer.write(path, day)
        text_bytes += path.stat().st_size
        generation += time.perf_counter() - t0
        t1 = time.perf_counter()
        if pending is not None:
            pending.join()
        backfill_wait += time.perf_counter() - t1
        pending = threading.Thread(target=backfill_day, args=(path, data_dir))
        pending.start()
    t1 = time.perf_counter()
    if pending is not None:
        pending.join()
    backfill_wait += time.perf_counter() - t1
    loading = time.perf_counter() - started
    tsdb_bytes = sum(f.stat().st_size for f in data_dir.rglob("*") if f.is_file())
    print(f"platform: {args.workloads} workloads, {len(pods)} pods, {len(nodes)} nodes, {args.days} days "
          f"at 1-minute samples")
    print(f"written: {samples:,} samples, {text_bytes / 2**30:.2f} GiB of OpenMetrics (a day at a time), "
          f"TSDB {tsdb_bytes / 2**20:.0f} MiB")
    print(f"generation {generation:.1f} s; backfill (promtool, overlapping generation) {loading:.1f} s in all, "
          f"{backfill_wait:.1f} s of it waiting for promtool", flush=True)


def _peak_rss_mib(pid: int) -> float:
    """VmHWM of a running process (Linux), 0 when unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _unix(moment: str | float) -> int:
    if isinstance(moment, (int, float)):
        return int(moment)
    return int(datetime.fromisoformat(moment.replace("Z", "+00:00")).timestamp())


def per_query(query_log: Path, offset: int, answers: Path) -> int:
    """Per query name of one run: requests, the server's evaluation seconds and samples it read (its query
    log from byte `offset`), series and points answered and bytes (the recorded answers). Returns the log's
    end, where the next run's entries start."""
    from gpustack.report.client import answer_file

    names: dict[str, str] = {}  # recorded file -> query name
    sizes: dict[str, list[float]] = {}
    for path in sorted(answers.glob("*.json")):
        body = json.loads(path.read_text())
        name = path.name.rsplit("-", 2)[0]
        names[path.name] = name
        row = sizes.setdefault(name, [0, 0, 0])
        row[0] += len(body["data"]["result"])
        row[1] += sum(len(s["values"]) for s in body["data"]["result"])
        row[2] += path.stat().st_size
    with query_log.open("rb") as log:
        log.seek(offset)
        lines = log.read().decode(errors="replace").splitlines()
        end = log.tell()
    server: dict[str, list[float]] = {}
    for line in lines:
        try:
            entry = json.loads(line)
            params = entry["params"]
            start, stop, step = _unix(params["start"]), _unix(params["end"]), int(float(params["step"]))
            stats = entry["stats"]
        except (ValueError, KeyError, TypeError):
            continue
        digest = answer_file("", params["query"], start, stop, step).rsplit("-", 1)[1]
        name = next((n for f, n in names.items() if f.endswith(digest)), "?")
        row = server.setdefault(name, [0, 0.0, 0])
        row[0] += 1
        row[1] += float(stats["timings"]["evalTotalTime"])
        row[2] += int(stats.get("samples", {}).get("totalQueryableSamples", 0))
    total = [sum(r[k] for r in server.values()) for k in range(3)]
    print(f"  {'query':<22} {'requests':>8} {'server s':>9} {'samples read':>14} {'series':>8} {'points':>10} "
          f"{'MiB':>7}")
    for name in sorted(set(server) | set(sizes), key=lambda n: -server.get(n, [0, 0.0])[1]):
        req, seconds, read = server.get(name, [0, 0.0, 0])
        series, points, size = sizes.get(name, [0, 0, 0])
        print(f"  {name:<22} {req:>8} {seconds:>9.1f} {read:>14,} {series:>8,} {points:>10,} {size / 2**20:>7.1f}")
    print(f"  {'all':<22} {total[0]:>8} {total[1]:>9.1f} {total[2]:>14,}", flush=True)
    return end


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--workloads", type=int, default=200)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--memory-minutes", type=int, default=60,
                        help="minutes each GPU's memory in use holds one value (default 60, on the hour; 1: a new value "
                             "every sample, the report's costliest memory case)")
    parser.add_argument("--keep", type=Path, help="keep the spec, TSDB and report in this directory")
    parser.add_argument("--reuse", action="store_true", help="with --keep: serve the TSDB already there")
    parser.add_argument("--runs", type=int, default=1, help="report runs against the same server")
    parser.add_argument("--baseline", metavar="REV",
                        help="also run the report as of this git revision against the same server, before this "
                             "checkout's, to compare the query plans in one run (e.g. main)")
    args = parser.parse_args(argv)
    if args.reuse and args.keep is None:
        raise SystemExit("--reuse needs --keep DIR")
    if PROMTOOL is None or shutil.which("prometheus") is None:
        raise SystemExit("promtool and prometheus are needed (Debian's prometheus package: make promtool)")

    workdir = (args.keep or Path(tempfile.mkdtemp(prefix="gpustack-bench-report-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    data_dir = workdir / "tsdb"
    spec_path = workdir / "bench.yaml"
    if not (args.reuse and spec_path.exists() and data_dir.exists()):
        load(args, workdir, data_dir, spec_path)
    server_peak = 0.0
    query_log = workdir / "queries.log"
    query_log.unlink(missing_ok=True)
    plans = [(f"baseline {args.baseline}", baseline_code(args.baseline, workdir))] if args.baseline else []
    plans += [("this checkout", None)] * args.runs
    outputs: dict[str, bytes] = {}
    with prometheus_server(data_dir, query_log) as server:
        offset = 0
        for attempt, (label, code) in enumerate(plans, start=1):
            report = workdir / f"report-{attempt}.json"
            shutil.rmtree(report.with_suffix(".answers"), ignore_errors=True)
            seconds, peak_mib, status = run_report(spec_path, server.url, args.days, report, code)
            print(f"report run {attempt} ({label}): {seconds:.1f} s, peak RSS {peak_mib:.0f} MiB, exit {status} "
                  f"(targets: < 60 s, < 1024 MiB)", flush=True)
            if status != 0:  # the next plan still runs: a baseline that times out is a figure too
                print((workdir / "report.stderr").read_text(errors="replace")[-3000:])
                offset = per_query(query_log, offset, report.with_suffix(".answers"))
                continue
            offset = per_query(query_log, offset, report.with_suffix(".answers"))
            outputs[label] = report.read_bytes()
            answer = json.loads(report.read_text())
            known = sum(w["gpu_hours"] is not None for w in answer["workloads"])
            print(f"report: {len(answer['workloads'])} workloads ({known} with GPU-hours), "
                  f"{len(answer['pools'])} pools, {len(answer.get('findings', []))} findings, "
                  f"{len(answer.get('recommendations', []))} recommendations")
        server_peak = _peak_rss_mib(server.pid)
    if len(set(outputs.values())) > 1:
        print("the reports differ: " + ", ".join(outputs))
    elif len(outputs) > 1:
        print(f"the reports of {', '.join(outputs)} are the same, byte for byte")
    print(f"prometheus server peak RSS {server_peak:.0f} MiB")
    if args.keep is None:
        shutil.rmtree(workdir)


if __name__ == "__main__":
    main()
