"""Read a spec file into a checked `Spec`, or raise SpecError listing every problem with its place.

Checks happen in two passes: the shape of each field (types, allowed values, units), then rules that
span fields or consult the catalog and the clouds (unique names, one size form per workload, MIG
profiles of the GPU, GPUs offered in the target's region, settings each cloud requires).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path as FilePath
from typing import Any

from gpustack.catalog import Catalog, load_catalog, read_catalog_file
from gpustack.clouds import CLOUDS
from gpustack.errors import Problem, SpecError, did_you_mean, one_of, show
from gpustack.files import FileRefused, read_limited
from gpustack.spec import units
from gpustack.spec.idle import check_prometheus
from gpustack.spec.kubernetes import check_kubernetes_versions, read_kubernetes_version
from gpustack.spec.alternatives import gpu_alternatives, read_alternatives
from gpustack.spec.discount import read_discount
from gpustack.spec.fields import WORKLOAD_FIELDS, WORKLOAD_KEYS, WORKLOAD_OPTIONAL, WorkloadRead
from gpustack.spec.model import (
    COMMITMENT_TERMS, SHAREABLE_KINDS, TYPE_CHANGE_SAVING, Commitment, InstancePrice, Pricing, Replicas, Schedule, Spec,
    Target, Workload,
)
from gpustack.spec.reader import BAD, Reader, type_name
from gpustack.spec.yamlsource import MAX_FILE_BYTES, Document, Path, parse

MAX_WORKLOADS = 20_000
MAX_TARGETS = 64
MAX_REPLICAS = 100_000
SPEC_NAME_MAX = 20
MIG_GUIDE = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html"

_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_LABEL_PREFIX = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
_LABEL_KEY = re.compile(r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                        r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_RESERVED_LABEL_PREFIXES = ("gpustack.dev", "kubernetes.io", "k8s.io", "nvidia.com")
# A commitment's scope, as the user's contract names it: printed in tables and Markdown.
_SCOPE = re.compile(r"[A-Za-z0-9][-A-Za-z0-9_.:/ ]{0,62}")
COMMITMENT_KEYS = ("instrument",)
COMMITMENT_OPTIONAL = ("term", "discount", "prices", "scope")

TOP_KEYS = ("version", "name", "targets", "workloads")
TOP_OPTIONAL = ("labels", "pricing", "catalog", "pools")
EXTENSION_PREFIX = "x-"  # top-level keys gpustack ignores: a place for shared defaults
TARGET_KEYS = ("name", "cloud", "region", "cluster")
TARGET_OPTIONAL = ("settings", "workloads", "kubernetes_version")
# An empty region matches no catalog row and would only be reported, at length, on every workload.
_NOT_EMPTY = re.compile(r".+", re.DOTALL)
ADD_ROWS = "add rows with --catalog FILE (or `catalog: FILE` in the spec), or run gpustack catalog refresh"


def load_spec(path: str | FilePath, catalogs: Sequence[str] = ()) -> Spec:
    """Load and check the spec at `path`; `catalogs` are user catalog files merged over the bundled
    catalog after the spec's own `catalog:` (so the last one given wins a row)."""
    file = str(path)
    try:
        raw = read_limited(path, MAX_FILE_BYTES, "spec file")
    except FileRefused as exc:
        raise SpecError([Problem(None, "", f"{file}: {exc}")]) from None
    return load_text(raw, file, catalogs, base_dir=FilePath(path).parent)


def load_text(text: str | bytes, file: str = "<spec>", catalogs: Sequence[str] = (),
              base_dir: FilePath | None = None) -> Spec:
    """Check a spec given as text; a relative `catalog:` is read from `base_dir` (default: the current
    directory)."""
    doc = parse(text, file)
    return _SpecReader(doc, load_catalog(), tuple(catalogs), base_dir or FilePath(".")).read()


class _SpecReader(Reader):
    def __init__(self, doc: Document, catalog: Catalog, catalogs: tuple[str, ...] = (),
                 base_dir: FilePath = FilePath(".")):
        super().__init__(doc)
        self.catalog = catalog
        self.catalogs = catalogs
        self.base_dir = base_dir

    def read(self) -> Spec:
        data = self.doc.data
        if isinstance(data, dict):  # `x-` keys hold YAML anchors for merge keys (`x-serving: &serving {...}`)
            data = {k: v for k, v in data.items() if not (isinstance(k, str) and k.startswith(EXTENSION_PREFIX))}
        if not isinstance(data, dict) or not any(key in data for key in TOP_KEYS + TOP_OPTIONAL):
            # Not a spec at all (a wrong file): say so without echoing what the file holds.
            what = (f"it has none of the keys {one_of(TOP_KEYS)}" if isinstance(data, dict)
                    else f"it holds {type_name(data)}, not a mapping")
            self.problem((), f"this is not a gpustack spec: {what} (a spec starts with 'version: 1')")
            raise SpecError(self.problems)
        root = self.mapping((), data, required=TOP_KEYS, optional=TOP_OPTIONAL, what="the spec")
        if root is BAD:
            raise SpecError(self.problems)
        self.user_catalogs(root.get("catalog"))
        if self.problems:
            raise SpecError(self.problems)
        version = root.get("version", BAD)
        if version is not BAD and (type(version) is not int or version != 1):  # not true, not 1.0
            self.problem(("version",), f"{show(version)} is not supported; this gpustack reads version 1")
        name = self.dns_label(("name",), root["name"], max_len=SPEC_NAME_MAX) if "name" in root else BAD
        labels = self.labels(("labels",), root.get("labels", {}))
        pricing = self.pricing(("pricing",), root.get("pricing", {}))
        split_by = self.split_by(("pools",), root.get("pools", {}))
        type_change = self.type_change_saving(("pools",), root.get("pools", {}))
        workloads = self.workloads(root.get("workloads", BAD))
        targets = self.targets(root.get("targets", BAD), workloads, written_names(root.get("workloads")))
        if self.problems:
            partial = Spec(1, name if isinstance(name, str) else "", labels if labels is not BAD else (),
                           pricing if pricing is not BAD else Pricing(None, None, ()), tuple(targets),
                           tuple(workloads), self.doc, self.catalog) if targets and workloads else None
            raise SpecError(self.problems, partial)
        self.check_offered(targets, workloads)
        if not self.problems:
            self.check_pins(targets, workloads)
        self.check_prices_used(pricing, targets)
        check_prometheus(self, targets, workloads)
        check_kubernetes_versions(self, targets, workloads)
        if self.problems:
            raise SpecError(self.problems)
        return Spec(1, name, labels, pricing, tuple(targets), tuple(workloads), self.doc, self.catalog, split_by,
                    type_change)

    def split_by(self, path: Path, value: Any) -> tuple[str, ...]:
        """`pools: {split_by: [team]}`: label keys whose values each get their own pools."""
        value = self.mapping(path, value, optional=("split_by", "type_change_saving"),
                             what="{split_by: [label keys], type_change_saving: 0.1}")
        if value is BAD or "split_by" not in value:
            return ()
        keys = self.sequence(path + ("split_by",), value["split_by"], min_items=1, what="label keys")
        if keys is BAD:
            return ()
        out: list[str] = []
        for i, key in enumerate(keys):
            key = self.string(path + ("split_by", i), key, pattern=_LABEL_KEY, rule="a label key, e.g. team")
            if key is BAD:
                continue
            if key in out:
                self.problem(path + ("split_by", i), f"{key!r} is listed twice")
                continue
            out.append(key)
        return tuple(out)

    def type_change_saving(self, path: Path, value: Any) -> float:
        """`pools: {type_change_saving: 0.1}`: the share of a pool's monthly cost that moving it to another
        instance type must save before the plan moves it (a move replaces the node pool)."""
        if not isinstance(value, dict) or "type_change_saving" not in value:
            return TYPE_CHANGE_SAVING
        found = self.number(path + ("type_change_saving",), value["type_change_saving"], minimum=0, maximum=1,
                            exclusive_maximum=True)
        return TYPE_CHANGE_SAVING if found is BAD else float(found)

    # -- user catalogs ------------------------------------------------------------------------
    def user_catalogs(self, written: Any) -> None:
        """Merge the spec's `catalog:` file, then the command line's, over the bundled catalog."""
        if written is not None:
            path = self.string(("catalog",), written)
            if path and not _inside(self.base_dir, self.base_dir / path):
                # A spec from a pull request must not read the runner's files (/proc/self/environ, ../..).
                self.problem(("catalog",), f"{show(path)} is outside the spec's folder (after resolving links); "
                                           "give a catalog there, or pass it with --catalog FILE")
            elif path:
                file = self.base_dir / path
                merged, problems = read_catalog_file(str(file), self.catalog, shown_as=str(file))
                missing = [p for p in problems if p.location is None]
                for problem in missing:  # the file itself: say so at the spec's `catalog:` line
                    self.problem(("catalog",), f"{problem.message} (relative paths start at the spec's folder)")
                self.problems.extend(p for p in problems if p.location is not None)
                self.catalog = merged
        for path in self.catalogs:
            self.catalog, problems = read_catalog_file(path, self.catalog)
            self.problems.extend(problems)

    # -- labels -------------------------------------------------------------------------------
    def labels(self, path: Path, value: Any) -> tuple[tuple[str, str], ...] | Any:
        if not isinstance(value, dict):
            return self.problem(path, "expected a mapping of label keys to values, e.g. {team: ml-platform}")
        out = []
        for key, val in value.items():
            key_path = path + (key,)
            if key_path in self.doc.typed_keys:
                self.typed_key_problem(key_path)
                continue
            prefix, _, label = key.rpartition("/")
            if not _LABEL_NAME.fullmatch(label) or (prefix and not _LABEL_PREFIX.fullmatch(prefix)):
                self.problem(key_path, f"{key!r} is not a valid label key: at most 63 letters, digits, '-', '_' "
                                       "or '.', starting and ending with a letter or digit, with an optional "
                                       "DNS prefix and '/'", at_key=True)
                continue
            if prefix and any(prefix == p or prefix.endswith("." + p) for p in _RESERVED_LABEL_PREFIXES):
                self.problem(key_path, f"{key!r} uses the reserved prefix {prefix!r}; gpustack and Kubernetes own "
                                       "it", at_key=True)
                continue
            if isinstance(val, bool) or not isinstance(val, (str, int, float)):
                self.problem(key_path, f"label values are strings, got {show(val)}")
                continue
            if not isinstance(val, str):
                self.problem(key_path, f"label values are strings; quote it: {key}: \"{val}\"")
                continue
            if not _LABEL_VALUE.fullmatch(val):
                self.problem(key_path, f"{show(val)} is not a valid label value: at most 63 letters, digits, '-', "
                                       "'_' or '.', starting and ending with a letter or digit")
                continue
            out.append((key, val))
        return tuple(sorted(out))

    # -- pricing ------------------------------------------------------------------------------
    def pricing(self, path: Path, value: Any) -> Pricing | Any:
        value = self.mapping(path, value, optional=("commitment_discount", "spot_discount", "instances",
                                                    "commitments", "flex_discount", "discount"))
        if value is BAD:
            return BAD
        commitments = self.commitments(path + ("commitments",), value["commitments"]) \
            if "commitments" in value else ()
        commitment = spot = None
        if "commitment_discount" in value:
            commitment = self.number(path + ("commitment_discount",), value["commitment_discount"],
                                     minimum=0, maximum=1, exclusive_maximum=True)
        if "spot_discount" in value:
            spot = self.number(path + ("spot_discount",), value["spot_discount"], minimum=0, maximum=1,
                               exclusive_maximum=True)
        flex = (self.number(path + ("flex_discount",), value["flex_discount"], minimum=0, maximum=1,
                            exclusive_maximum=True) if "flex_discount" in value else None)
        instances: list[tuple[str, InstancePrice]] = []
        raw = value.get("instances", {})
        if not isinstance(raw, dict):
            self.problem(path + ("instances",), "expected a mapping of instance type to {on_demand, spot}")
        else:
            known = self.catalog.instance_names() if raw else ()  # every cloud's file: only when overrides are given
            for name, prices in raw.items():
                item = path + ("instances", name)
                if name not in known:
                    self.problem(item, f"{name!r} is not an instance type of the {self.catalog_name()}"
                                       f"{did_you_mean(name, known)}; prices can be overridden only for catalogued "
                                       f"types: {ADD_ROWS}", at_key=True)
                    continue
                prices = self.mapping(item, prices, optional=("on_demand", "spot"),
                                      what="USD per node-hour: {on_demand: 1.0, spot: 0.4}")
                if prices is BAD:
                    continue
                if not prices:
                    self.problem(item, "give on_demand, spot or both (USD per node-hour)")
                    continue
                on_demand = (self.number(item + ("on_demand",), prices["on_demand"], minimum=0,
                                         exclusive_minimum=True, maximum=10_000)
                             if "on_demand" in prices else None)
                spot_price = (self.number(item + ("spot",), prices["spot"], minimum=0, exclusive_minimum=True,
                                          maximum=10_000)
                              if "spot" in prices else None)
                if on_demand and spot_price and spot_price > on_demand:
                    self.problem(item + ("spot",), f"spot {spot_price:g} is more than on_demand {on_demand:g}: "
                                                   "spot capacity is sold below the on-demand price")
                instances.append((name, InstancePrice(on_demand, spot_price)))
        every, per_cloud = read_discount(self, path + ("discount",), value["discount"]) \
            if "discount" in value else (None, ())
        return Pricing(commitment, spot, tuple(sorted(instances, key=lambda item: item[0])),
                       commitments if commitments is not BAD else (), None if flex is BAD else flex, every, per_cloud)

    def commitments(self, path: Path, value: Any) -> tuple[tuple[str, Commitment], ...] | Any:
        """cloud -> {instrument, term, discount | prices, scope}: the commitments held or to be bought."""
        if not isinstance(value, dict):
            return self.problem(path, "expected a mapping of cloud to a commitment: {<cloud>: {instrument, term, "
                                      "discount or prices, scope}}")
        out = []
        for key, raw in value.items():
            if path + (key,) in self.doc.typed_keys:
                self.typed_key_problem(path + (key,))
                continue
            cloud = self.choice(path + (key,), key, CLOUDS.names(), CLOUDS.aliases())
            item = path + (key,)
            raw = self.mapping(item, raw, required=COMMITMENT_KEYS, optional=COMMITMENT_OPTIONAL,
                               what="a commitment: {instrument, term, discount or prices, scope}")
            if cloud is BAD or raw is BAD or "instrument" not in raw:
                continue
            rate = self.catalog.discounts.get(cloud)
            allowed = rate.instruments if rate is not None else ()
            instrument = self.choice(item + ("instrument",), raw["instrument"], allowed)
            term = self.choice(item + ("term",), raw["term"], COMMITMENT_TERMS) if "term" in raw else None
            if ("discount" in raw) == ("prices" in raw):
                self.problem(item, "give exactly one of discount (a fraction off on-demand) or prices (USD per "
                                   "node-hour per instance type)")
                continue
            discount = (self.number(item + ("discount",), raw["discount"], minimum=0, maximum=1,
                                    exclusive_maximum=True) if "discount" in raw else None)
            prices = self.commitment_prices(item + ("prices",), raw["prices"], cloud) if "prices" in raw else ()
            scope = (self.string(item + ("scope",), raw["scope"], pattern=_SCOPE,
                                 rule="at most 63 letters, digits, spaces and - _ . : /, starting with a letter or "
                                      "digit") if "scope" in raw else None)
            if any(v is BAD for v in (instrument, term, discount, prices, scope)):
                continue
            out.append((cloud, Commitment(instrument, term, discount, prices, scope)))
        return tuple(sorted(out, key=lambda item: item[0]))

    def commitment_prices(self, path: Path, value: Any, cloud: str) -> tuple[tuple[str, float], ...] | Any:
        if not isinstance(value, dict) or not value:
            return self.problem(path, "expected a mapping of instance type to committed USD per node-hour, e.g. "
                                      "{p4de.24xlarge: 20.5}")
        known = self.catalog.instance_names(cloud)
        out = []
        for name, price in value.items():
            if name not in known:
                self.problem(path + (name,), f"{name!r} is not an instance type of {CLOUDS.get(cloud).display_name} "
                                             f"in the catalog{did_you_mean(name, known)}", at_key=True)
                continue
            number = self.number(path + (name,), price, minimum=0, exclusive_minimum=True, maximum=10_000)
            if number is not BAD:
                out.append((name, number))
        return tuple(sorted(out))

    # -- workloads ----------------------------------------------------------------------------
    def workloads(self, value: Any) -> list[Workload]:
        items = self.sequence(("workloads",), value, min_items=1, what="workload")
        if items is BAD:
            return []
        if len(items) > MAX_WORKLOADS:
            self.problem(("workloads",), f"{len(items):,} workloads; a spec may hold at most {MAX_WORKLOADS:,}")
            return []
        out = []
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            workload = self.workload(("workloads", i), item, i)
            if workload is not BAD:
                workload = gpu_alternatives(self, self.gpu, ("workloads", i), item, workload)
            if workload is BAD:
                continue
            if workload.name in seen:
                self.problem(("workloads", i, "name"), f"{workload.name!r} is used by workloads[{seen[workload.name]}]"
                                                       " too; workload names must be unique")
                continue
            seen[workload.name] = i
            out.append(workload)
        return out

    def workload(self, path: Path, value: Any, index: int) -> Workload | Any:
        """One workload, read down the field table (gpustack/spec/fields.py)."""
        value = self.mapping(path, value, required=WORKLOAD_KEYS, optional=WORKLOAD_OPTIONAL, what="a workload")
        if value is BAD or any(k not in value for k in WORKLOAD_KEYS):
            return BAD
        before = len(self.problems)
        read = WorkloadRead(self, path, value)
        for row in WORKLOAD_FIELDS:
            read.read(row)
        if len(self.problems) > before:
            return BAD
        return Workload(index=index, **read.attributes())

    def instance_pins(self, path: Path, value: Any, kind: Any = None) -> Any:
        """{cloud: instance type, or a list of them}: clouds by name or alias; the types are checked per
        target later. A list is the spot pool's alternatives (gpustack/spec/alternatives.py): its first type
        is the pin, the others the types the spot pool may also launch."""
        if not isinstance(value, dict):
            return self.problem(path, "expected a mapping of cloud to instance type, e.g. {<cloud>: <instance type>}")
        pins = []
        lists = []
        for key, name in value.items():
            if path + (key,) in self.doc.typed_keys:
                self.typed_key_problem(path + (key,))
                continue
            cloud = self.choice(path + (key,), key, CLOUDS.names(), CLOUDS.aliases())
            if isinstance(name, list):
                types = read_alternatives(self, path + (key,), name, kind)
                if cloud and types:
                    pins.append((cloud, types[0]))
                    if len(types) > 1:
                        lists.append((cloud, types))
                continue
            instance = self.string(path + (key,), name)
            if cloud and instance:
                pins.append((cloud, instance))
        return tuple(sorted(pins)), tuple(sorted(lists))

    def gpu(self, path: Path, value: Any) -> Any:
        if not isinstance(value, str):
            return self.problem(path, f"expected a GPU model name, got {show(value)}; known: "
                                      f"{one_of(self.catalog.gpu_names)}")
        model = self.catalog.gpu(value)
        if model is not None:
            return model
        variants = [n for n in self.catalog.gpu_names if n.lower().startswith(value.lower() + "-")]
        hint = (f" ({value} comes as {' or '.join(variants)}: say which)" if len(variants) > 1
                else did_you_mean(value, self.catalog.gpu_names))
        return self.problem(path, f"{show(value)} is not a GPU model of the catalog{hint}; known: "
                                  f"{one_of(self.catalog.gpu_names)}")

    def mig_profile(self, path: Path, gpu: Any, profile: str) -> Any:
        if gpu.mig is None:
            capable = [g.name for g in self.catalog.gpus.values() if g.mig]
            return self.problem(path, f"{gpu.name} does not support MIG; MIG GPUs: {one_of(capable)}")
        if gpu.mig.profile(profile) is None:
            return self.problem(path, f"{profile!r} is not a MIG profile of {gpu.name}"
                                      f"{did_you_mean(profile, gpu.mig.profile_names)}; valid: "
                                      f"{one_of(gpu.mig.profile_names)}. See {MIG_GUIDE}")
        return profile

    def gpu_memory_fits(self, path: Path, gpu: Any, memory_gib: float) -> None:
        # What the driver reports: of the largest MIG device, or of the whole GPU shared by time.
        holds = max([gpu.usable_memory_gib] + [p.usable_memory_gib for p in gpu.mig.profiles] if gpu.mig else
                    [gpu.usable_memory_gib])
        if memory_gib > holds + 1e-9:
            self.problem(path, f"{memory_gib:g}Gi is more than a whole {gpu.name} holds ({holds:.4g}Gi); use "
                               "a larger GPU model or gpus: N")

    def sharing_fits(self, path: Path, sharing: str, kind: str, gpu: Any, forms: list[str], mig: str | None) -> None:
        fractional = any(f != "gpus" for f in forms)
        if kind not in SHAREABLE_KINDS and sharing != "none":
            self.problem(path, f"{kind} workloads use whole GPUs; sharing: {sharing} applies to inference and "
                               "notebooks")
        elif sharing == "mig" and gpu.mig is None:
            capable = [g.name for g in self.catalog.gpus.values() if g.mig]
            self.problem(path, f"{gpu.name} does not support MIG; MIG GPUs: {one_of(capable)}")
        elif sharing in ("time-slicing", "mps", "fractional") and mig:
            self.problem(path, f"mig: {mig} asks for a MIG partition; sharing: {sharing} shares whole GPUs. "
                               "Use gpu_fraction or gpu_memory with it")
        elif sharing != "none" and not fractional:
            self.problem(path, f"sharing: {sharing} needs a share per replica: give gpu_fraction, gpu_memory or mig")
        elif sharing == "none" and fractional:
            self.problem(path, "sharing: none gives each replica whole GPUs; remove it or use gpus: N")

    def replicas(self, path: Path, value: Any, kind: Any) -> Replicas | Any:
        if isinstance(value, dict):
            value = self.mapping(path, value, required=("min", "max"), what="{min, max}")
            if value is BAD or "min" not in value or "max" not in value:
                return BAD
            if kind and kind != "inference":
                return self.problem(path, f"replicas: {{min, max}} is for inference (a steady floor and a peak); "
                                          f"{kind} takes a whole number")
            low = self.integer(path + ("min",), value["min"], minimum=0, maximum=MAX_REPLICAS)
            high = self.integer(path + ("max",), value["max"], minimum=0, maximum=MAX_REPLICAS)
            if low is BAD or high is BAD:
                return BAD
            if low > high:
                return self.problem(path + ("min",), f"min ({low}) is more than max ({high})")
            return Replicas(low, high)
        count = self.integer(path, value, minimum=0, maximum=MAX_REPLICAS)
        return BAD if count is BAD else Replicas(count, count)

    def schedule(self, path: Path, value: Any) -> Schedule | Any:
        value = self.mapping(path, value, required=("days", "hours", "timezone"),
                             what='{days: Mon-Fri, hours: "08:00-18:00", timezone: Europe/Berlin}')
        if value is BAD or any(k not in value for k in ("days", "hours", "timezone")):
            return BAD
        days = self.parsed(path + ("days",), value["days"], units.parse_days)
        hours = self.parsed(path + ("hours",), value["hours"], units.parse_hours)
        zone = self.parsed(path + ("timezone",), value["timezone"], units.parse_timezone)
        if days is BAD or hours is BAD or zone is BAD:
            return BAD
        return Schedule(value["days"], value["hours"], zone, days, hours[0], hours[1])

    # -- targets ------------------------------------------------------------------------------
    def targets(self, value: Any, workloads: list[Workload], written: set[str]) -> list[Target]:
        """`written`: every workload name the spec gives, valid or not, so that a workload with a bad
        field is not also reported as unknown by each target listing it."""
        items = self.sequence(("targets",), value, min_items=1, what="target")
        if items is BAD:
            return []
        if len(items) > MAX_TARGETS:
            self.problem(("targets",), f"{len(items)} targets; a spec may hold at most {MAX_TARGETS}")
            return []
        names = [w.name for w in workloads]
        out = []
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            target = self.target(("targets", i), item, i, names, written)
            if target is BAD:
                continue
            if target.name in seen:
                self.problem(("targets", i, "name"), f"{target.name!r} is used by targets[{seen[target.name]}] too; "
                                                     "target names must be unique (one Pulumi stack each)")
                continue
            seen[target.name] = i
            out.append(target)
        return out

    def target(self, path: Path, value: Any, index: int, workload_names: list[str],
               written: set[str] = frozenset()) -> Target | Any:  # type: ignore[assignment]
        value = self.mapping(path, value, required=TARGET_KEYS, optional=TARGET_OPTIONAL, what="a target")
        if value is BAD or any(k not in value for k in TARGET_KEYS):
            return BAD
        before = len(self.problems)
        name = self.dns_label(path + ("name",), value["name"])
        cloud_name = self.choice(path + ("cloud",), value["cloud"], CLOUDS.names(), CLOUDS.aliases())
        cloud = CLOUDS.get(cloud_name) if cloud_name else None
        region = self.string(path + ("region",), value["region"], pattern=_NOT_EMPTY, rule="a region name, not empty")
        if cloud and region:
            region = self.region_sold(path + ("region",), cloud, region)
        cluster = self.string(path + ("cluster",), value["cluster"])
        if cloud and cluster:
            self.cluster_name(path + ("cluster",), cloud, cluster)
        settings = self.settings(path + ("settings",), value.get("settings", {}), cloud)
        kubernetes_version = read_kubernetes_version(self, path, value)
        chosen = self.target_workloads(path + ("workloads",), value["workloads"], workload_names, written) \
            if "workloads" in value else tuple(workload_names)
        if len(self.problems) > before:
            return BAD
        assert cloud is not None  # a target without a known cloud has a problem
        return Target(name, cloud.name, region, cluster, settings, chosen, index, kubernetes_version)

    def region_sold(self, path: Path, cloud: Any, region: str) -> Any:
        """`region`, or BAD after a problem naming the nearest regions with GPUs (same geography first)."""
        known = self.catalog.regions(cloud.name)
        if region in known:
            return region
        nearest = self.catalog.nearest_regions(cloud.name, region, geography=cloud.region_geography)
        area = cloud.region_geography(region)[0]
        spelt = [r for r in known if cloud.region_geography(r)[0] == area] if area else known
        return self.problem(path, f"the {self.catalog_name()} has no {cloud.display_name} GPU instance types in "
                                  f"{region!r}{did_you_mean(region, spelt)}: its price sources list none there; "
                                  f"nearest regions with GPUs: {', '.join(nearest)} (of {len(known)} catalogued); "
                                  f"if {cloud.display_name} sells GPUs there, {ADD_ROWS} --cloud {cloud.name} "
                                  f"--region {region}")

    def cluster_name(self, path: Path, cloud: Any, cluster: str) -> None:
        """The cloud's rule for cluster names."""
        pattern, rule = cloud.cluster_rule
        if not re.fullmatch(pattern, cluster):
            self.problem(path, f"{show(cluster)} is not {rule}")

    def target_workloads(self, path: Path, value: Any, workload_names: list[str], written: set[str]) -> Any:
        """The target's `workloads:` subset, in the spec's order of workloads."""
        listed = self.sequence(path, value, min_items=0, what="workload name")
        if listed is BAD:
            return tuple(workload_names)  # the problem is reported; the target is refused
        picked: list[str] = []
        for j, item in enumerate(listed):
            if isinstance(item, str) and item in written and item not in workload_names:
                picked.append(item)  # its own problems are reported where it is defined
            elif not isinstance(item, str) or item not in workload_names:
                self.problem(path + (j,), f"{show(item)} is not a workload of this spec"
                                          f"{did_you_mean(item, workload_names)}")
            elif item in picked:
                self.problem(path + (j,), f"{item!r} is listed twice")
            else:
                picked.append(item)
        return tuple(n for n in workload_names if n in picked)

    def settings(self, path: Path, value: Any, cloud: Any) -> Any:
        if cloud is None:
            return BAD
        specs = {s.name: s for s in cloud.target_settings}
        value = self.mapping(path, value if value is not None else {},
                             required=[s.name for s in specs.values() if s.required],
                             optional=[s.name for s in specs.values() if not s.required],
                             what=f"settings for {cloud.display_name}")
        if value is BAD:
            return BAD
        out: list[tuple[str, object]] = []
        for key, raw in value.items():
            spec = specs[key]
            item = path + (key,)
            pattern = re.compile(spec.pattern) if spec.pattern else None
            if spec.kind == "strings":
                listed = self.sequence(item, raw, min_items=1, what=spec.rule or "string")
                if listed is BAD:
                    continue
                strings = tuple(self.string(item + (j,), s, pattern=pattern, rule=spec.rule)
                                for j, s in enumerate(listed))
                if len(set(strings)) != len(strings):
                    self.problem(item, "lists a value twice")
                out.append((key, strings))
            else:
                out.append((key, self.string(item, raw, pattern=pattern, rule=spec.rule)))
        return tuple(sorted(out))

    # -- rules across targets and the catalog -------------------------------------------------
    def check_prices_used(self, pricing: Pricing, targets: list[Target]) -> None:
        """An override for a type no target can use would be ignored: say so instead."""
        places = {(t.cloud, t.region) for t in targets}
        for section, per_cloud, what in (("commitments", pricing.commitments, "commitment"),
                                         ("discount", pricing.discounts, "discount")):
            for cloud, _ in per_cloud:
                if not any(c == cloud for c, _ in places):
                    self.problem(("pricing", section, _written_key(self.doc, section, cloud)),
                                 f"no target runs on {CLOUDS.get(cloud).display_name}: this {what} would never be "
                                 "used", at_key=True)
        for name, _ in pricing.instances:
            if not any(self.catalog.instance(cloud, region, name) for cloud, region in places):
                regions = ", ".join(f"{CLOUDS.get(c).display_name} {r}" for c, r in sorted(places))
                self.problem(("pricing", "instances", name),
                             f"no target offers {name!r} (the targets are in {regions}): this price would never be "
                             "used", at_key=True)

    def check_pins(self, targets: list[Target], workloads: list[Workload]) -> None:
        """A pinned instance type must exist where the workload runs, with the workload's GPU."""
        by_name = {w.name: w for w in workloads}
        for target in targets:
            for name in target.workloads:
                workload = by_name[name]
                pinned = workload.pinned_instance(target.cloud)
                if pinned is None:
                    continue
                listed = workload.alternatives(target.cloud)
                base: Path = ("workloads", workload.index, "instance_types",
                              pinned_key(self.doc, workload.index, target.cloud))
                first = self.catalog.instance(target.cloud, target.region, pinned)
                for j, name in enumerate(listed or (pinned,)):
                    row = self.catalog.instance(target.cloud, target.region, name)
                    if row is not None and row.gpu == workload.gpu:
                        if first is not None and first.gpu == workload.gpu and row.gpus != first.gpus:
                            self.problem(base + (j,), f"{name!r} has {row.gpus} GPUs per node and {pinned!r} "
                                                      f"{first.gpus}: the alternatives of one spot pool hold the "
                                                      "same replicas per node, so they need the same GPU count")
                        continue
                    offered = sorted(r.name for r in self.catalog.in_region(target.cloud, target.region)
                                     if r.gpu == workload.gpu)
                    why = (f"has {row.gpu} GPUs, not {workload.gpu}" if row is not None
                           else f"is not in the {self.catalog_name()} for {target.region} ({ADD_ROWS})")
                    self.problem(base + ((j,) if listed else ()),
                                 f"{name!r} {why} (target {target.name!r}){did_you_mean(name, offered)}; "
                                 f"{workload.gpu} types there: {one_of(offered)}")

    def check_offered(self, targets: list[Target], workloads: list[Workload]) -> None:
        by_name = {w.name: w for w in workloads}
        for target in targets:
            cloud = CLOUDS.get(target.cloud)
            here = {row.gpu for row in self.catalog.in_region(target.cloud, target.region)}
            for name in target.workloads:
                workload = by_name[name]
                if workload.gpu in here:
                    continue
                offered = self.catalog.offering(workload.gpu)
                where = "; ".join(f"{CLOUDS.get(c).display_name} {_some(r)}" for c, r in offered.items())
                gap = cloud.gpu_gap(workload.gpu)
                if gap:  # a gap of the cloud, with its source: no catalog row can fill it
                    self.problems.append(Problem(
                        self.doc.where(("workloads", workload.index, "gpu")), f"workloads[{workload.index}].gpu",
                        f"{workload.gpu} is not offered by {cloud.display_name} (target {target.name!r}): {gap}; "
                        f"the catalog has it in: {where or 'no region'}"))
                    continue
                nearest = self.catalog.nearest_regions(target.cloud, target.region, workload.gpu,
                                                       geography=cloud.region_geography)
                near = f"nearest {cloud.display_name} regions with it: {', '.join(nearest)}; " if nearest else ""
                self.problems.append(Problem(
                    self.doc.where(("workloads", workload.index, "gpu")), f"workloads[{workload.index}].gpu",
                    f"the {self.catalog_name()} has no {workload.gpu} rows for {cloud.display_name} "
                    f"{target.region} (target {target.name!r}); {near}it has {workload.gpu} in: "
                    f"{where or 'no region'}; "
                    f"if {cloud.display_name} offers {workload.gpu} there, {ADD_ROWS} --cloud {target.cloud} "
                    f"--region {target.region}"))

    def catalog_name(self) -> str:
        files = self.catalog.files
        return f"catalog (bundled + {', '.join(files)})" if files else "bundled catalog"


def _some(regions: tuple[str, ...], shown: int = 5) -> str:
    """Regions for a message: the first few, and how many more."""
    more = f" and {len(regions) - shown} more" if len(regions) > shown else ""
    return ", ".join(regions[:shown]) + more


def written_names(value: Any) -> set[str]:
    """The names the spec's workloads give (before any check of theirs)."""
    items = value if isinstance(value, list) else []
    return {item["name"] for item in items if isinstance(item, dict) and isinstance(item.get("name"), str)}


def _written_key(doc: Document, section: str, cloud: str) -> str:
    """The key the spec used for `cloud` in pricing.<section> (a name or an alias)."""
    written = doc.data["pricing"][section]
    return next((k for k in written if CLOUDS.get(k).name == cloud), cloud)


def pinned_key(doc: Document, index: int, cloud: str) -> str:
    """The key the spec used for `cloud` in workloads[index].instance_types (a name or an alias)."""
    written = doc.data["workloads"][index]["instance_types"]
    return next((k for k in written if CLOUDS.get(k).name == cloud), cloud)


def _inside(folder: FilePath, file: FilePath) -> bool:
    """Whether `file`, with every link resolved, lies in `folder` (also resolved)."""
    base = os.path.realpath(folder)
    return os.path.commonpath([base, os.path.realpath(file)]) == base
