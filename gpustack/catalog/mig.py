"""NVIDIA Multi-Instance GPU geometry: profiles, slices and placement rules per GPU model.

Sources (each model below names its own):
- Profiles: NVIDIA MIG User Guide, "Supported MIG Profiles"
  https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html
- Placements: `nvidia-smi mig -lgipp` output in the same guide (A100; the same table is shown for
  H100 NVL in NVIDIA's blog). `{starts}:n` = the instance takes n consecutive memory slices from one
  of the listed start slots of the 8-slice memory axis.
- Names for H100 NVL/94GB, GH200 (96GB and 144GB) and H100-96GB: NVIDIA/mig-parted
  deployments/systemd/config-default.yaml (commit 5ffc59fe), which also lists the `+me` profiles
  (`all-1g.12gb.me`, `all-1g.18gb.me` for H200 and GH200 144GB, `all-1g.23gb.me` for B200) and the
  A30 ones (`1g.6gb+me`, `2g.12gb+me`).
- Maximum instances per GPU: the "Number of Instances Available" column of the guide (7 on A100,
  H100, H200, B200; 4 on A30; a single `+me` instance per GPU).

A layout (profile -> count on one GPU) is valid only if every instance can be given a start slot so
that no two instances share a memory slice, compute slices add up to at most the GPU's compute
slices, each profile stays within its maximum count and there is at most one `+me` instance.
`place` returns such a placement (None when there is none); `violations` says in words why a layout
is not valid; `require_valid` is the check every layout of a plan passes before it leaves the planner.

Assumptions, stated where they matter (`MigModel.placements_confirmed` is False for these): the
placement table is published for A100 and H100 NVL only; H100-80GB, GH200, H200 and B200 are taken
to share it (same slice counts and instance maxima). A30 placements are unconfirmed (1g at 0-3, 2g
at 0/2, 4g at 0); with 4 slices of each kind any layout within the slice and count limits places.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Iterable, Mapping

MIG_GUIDE = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html"
MIG_PARTED = "https://github.com/NVIDIA/mig-parted/blob/5ffc59fe/deployments/systemd/config-default.yaml"


class InvalidLayout(Exception):
    """A MIG layout NVIDIA's rules forbid: gpustack never emits one (a bug if ever raised)."""


@dataclasses.dataclass(frozen=True)
class ProfileShape:
    """A generic MIG profile: its slices and where it may start."""

    key: str  # generic name: 1g, 1g+me, 1g2 (1 compute, 2 memory slices), 2g, 3g, 4g, 7g
    compute: int  # compute (SM) slices
    memory: int  # memory slices
    starts: tuple[int, ...]  # allowed start slots on the memory axis
    max_count: int
    media: bool = False  # a +me profile (media extensions): at most one per GPU


# A100/H100/H200/B200 class: 8 memory slices, 7 compute slices (the guide's -lgipp table).
_SHAPES_8 = (
    ProfileShape("1g", 1, 1, (0, 1, 2, 3, 4, 5, 6), 7),
    ProfileShape("1g+me", 1, 1, (0, 1, 2, 3, 4, 5, 6), 1, media=True),
    ProfileShape("1g2", 1, 2, (0, 2, 4, 6), 4),
    ProfileShape("2g", 2, 2, (0, 2, 4), 3),
    ProfileShape("3g", 3, 4, (0, 4), 2),
    ProfileShape("4g", 4, 4, (0,), 1),
    ProfileShape("7g", 7, 8, (0,), 1),
)
# A30: 4 memory and 4 compute slices (placements unconfirmed, see module docstring).
_SHAPES_4 = (
    ProfileShape("1g", 1, 1, (0, 1, 2, 3), 4),
    ProfileShape("1g+me", 1, 1, (0, 1, 2, 3), 1, media=True),
    ProfileShape("2g", 2, 2, (0, 2), 2),
    ProfileShape("2g+me", 2, 2, (0, 2), 1, media=True),
    ProfileShape("4g", 4, 4, (0,), 1),
)


# Memory of a MIG device as the driver reports it, in MiB, by the number of memory slices it takes (a
# profile's memory depends on its memory slices only: 1g.20gb and 2g.20gb report the same). Requests
# (`gpu_memory`) are measured against these, as time-slicing measures them against the GPU's reported
# memory. From GPU Feature Discovery's nvidia.com/mig-<profile>.memory labels in NVIDIA's own docs:
# - H100 80GB HBM3: 1g.10gb 9984, 2g.20gb 20096, 3g.40gb 40320 (_GPU_OPERATOR_LABELS);
# - A100-SXM4-40GB: 1g.5gb 4864, 2g.10gb 9984, 3g.20gb 20096 (_K8S_LABELS);
# - A100 80GB: the H100 80GB figures (the same 8 slices of 10 GB; 9984 MiB = 9.75 GiB, what
#   `nvidia-smi mig -lgip` shows for 1g.10gb on an A100-SXM4-80GB; older drivers show 9.50).
# The whole-GPU profile (8 slices) is not in those docs: 78.50 GiB (80384 MiB) for 7g.80gb and 39.25 GiB
# (40192 MiB) for 7g.40gb are `nvidia-smi mig -lgip` readings. Other models keep the nominal share.
_GPU_OPERATOR_LABELS = ("https://github.com/NVIDIA/cloud-native-docs/blob/52dcb7b8d956784344e241df476de17094a4574c/"
                        "gpu-operator/manifests/output/mig-mixed-node-labels.json")
_K8S_LABELS = ("https://github.com/NVIDIA/cloud-native-docs/blob/52dcb7b8d956784344e241df476de17094a4574c/"
               "kubernetes/index.rst")
_REPORTED_MIB_80GB = {1: 9984, 2: 20096, 4: 40320, 8: 80384}
REPORTED_MIB_BY_SLICES: dict[str, tuple[dict[int, int], str]] = {
    "A100-40GB": ({1: 4864, 2: 9984, 4: 20096, 8: 40192}, _K8S_LABELS),
    "A100-80GB": (_REPORTED_MIB_80GB, _GPU_OPERATOR_LABELS),
    "H100-80GB": (_REPORTED_MIB_80GB, _GPU_OPERATOR_LABELS),
}


@dataclasses.dataclass(frozen=True)
class Profile:
    name: str  # NVIDIA name, e.g. "3g.40gb"
    shape: ProfileShape
    memory_gib: float  # share of the GPU's nominal memory: memory slices / total slices
    reported_memory_gib: float | None = None  # what the driver reports, where a source gives it
    memory_source: str = "nominal share (no driver figure found)"

    @property
    def usable_memory_gib(self) -> float:
        """What a pod on this MIG device can allocate: the driver's figure, else the nominal share."""
        return self.reported_memory_gib if self.reported_memory_gib is not None else self.memory_gib

    @property
    def compute(self) -> int:
        return self.shape.compute

    @property
    def memory(self) -> int:
        return self.shape.memory


@dataclasses.dataclass(frozen=True)
class MigModel:
    name: str  # e.g. "A100-80GB"
    memory_gib: float
    compute_slices: int
    memory_slices: int
    profiles: tuple[Profile, ...]  # ordered smallest first
    source: str
    balanced: tuple[tuple[str, int], ...] = ()  # mig-parted "all-balanced", for reference
    placements_confirmed: bool = True  # False where the start slots are an assumption (see module doc)

    def profile(self, name: str) -> Profile | None:
        for profile in self.profiles:
            if profile.name == name:
                return profile
        return None

    @property
    def profile_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.profiles)

    def smallest_holding(self, memory_gib: float = 0.0, compute_fraction: float = 0.0,
                         allowed: Iterable[str] | None = None) -> Profile | None:
        """The smallest profile (fewest compute, then memory slices) holding the request."""
        allowed_set = set(allowed) if allowed is not None else None
        fits = [p for p in self.profiles
                if not p.shape.media
                and (allowed_set is None or p.name in allowed_set)
                and p.usable_memory_gib + 1e-9 >= memory_gib
                and p.compute / self.compute_slices + 1e-9 >= compute_fraction]
        return min(fits, key=lambda p: (p.compute, p.memory, p.name), default=None)

    # -- layouts ------------------------------------------------------------------------------
    def is_valid(self, layout: Mapping[str, int]) -> bool:
        return self.place(layout) is not None

    def place(self, layout: Mapping[str, int]) -> tuple[tuple[str, int], ...] | None:
        """Start slots for every instance of `layout`, or None when NVIDIA's rules forbid it."""
        key = tuple(sorted((name, count) for name, count in layout.items() if count))
        return _place(self, key)

    def violations(self, layout: Mapping[str, int]) -> list[str]:
        """Why `layout` is not a valid layout of one GPU, in words (empty when it is valid)."""
        problems = []
        for name, count in sorted(layout.items()):
            profile = self.profile(name)
            if profile is None:
                problems.append(f"{name} is not a MIG profile of {self.name}")
            elif count < 0 or count > profile.shape.max_count:
                problems.append(f"{count} x {name}: at most {profile.shape.max_count} per GPU")
        if problems:
            return problems
        media = 0
        for name, count in layout.items():
            profile = self.profile(name)
            media += count if profile is not None and profile.shape.media else 0
        if media > 1:
            problems.append(f"{media} +me instances: at most one per GPU")
        compute, memory = self.slices(layout)
        if compute > self.compute_slices:
            problems.append(f"{compute} compute slices: the GPU has {self.compute_slices}")
        if memory > self.memory_slices:
            problems.append(f"{memory} memory slices: the GPU has {self.memory_slices}")
        if not problems and self.place(layout) is None:
            problems.append("no start slots place every instance without overlap")
        return problems

    def require_valid(self, layout: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
        """The placement of `layout`; raises InvalidLayout when NVIDIA's rules forbid it."""
        placed = self.place(layout)
        if placed is None:
            shown = ", ".join(f"{n}: {c}" for n, c in sorted(layout.items()))
            raise InvalidLayout(f"invalid {self.name} MIG layout {{{shown}}}: {'; '.join(self.violations(layout))}")
        return placed

    def valid_layouts(self, names: Iterable[str] | None = None) -> tuple[tuple[tuple[str, int], ...], ...]:
        """Every non-empty valid layout using only `names` (all profiles when None)."""
        chosen = tuple(sorted(set(names))) if names is not None else tuple(p.name for p in self.profiles)
        return _valid_layouts(self, chosen)

    def maximal_layouts(self, names: Iterable[str]) -> tuple[tuple[int, ...], ...]:
        """Valid layouts over `names` (as counts in the order of sorted `names`) that no other valid
        layout contains, most instances first: every packing can use these alone."""
        return _maximal_layouts(self, tuple(sorted(set(names))))

    def slices(self, layout: Mapping[str, int]) -> tuple[int, int]:
        """(compute, memory) slices a layout uses."""
        compute = memory = 0
        for name, count in layout.items():
            profile = self.profile(name)
            assert profile is not None, name
            compute += profile.compute * count
            memory += profile.memory * count
        return compute, memory


@functools.lru_cache(maxsize=65536)
def _place(model: MigModel, layout: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...] | None:
    instances: list[Profile] = []
    compute = 0
    media = 0
    for name, count in layout:
        profile = model.profile(name)
        if profile is None or count < 0 or count > profile.shape.max_count:
            return None
        instances.extend([profile] * count)
        compute += profile.compute * count
        media += count if profile.shape.media else 0
    if compute > model.compute_slices or media > 1:
        return None
    if sum(p.memory for p in instances) > model.memory_slices:
        return None
    # Place big instances first; try later start slots first so small ones keep the low slots
    # (the "3g at 4 before 0" advice of the placement notes avoids dead ends such as 3g + 1g x4).
    instances.sort(key=lambda p: (-p.memory, -p.compute, p.name))
    used = [False] * model.memory_slices
    placed: list[tuple[str, int]] = []

    def search(i: int) -> bool:
        if i == len(instances):
            return True
        profile = instances[i]
        previous = placed[-1][1] if i and instances[i - 1] == profile else -1
        for start in sorted(profile.shape.starts, reverse=True):
            if start <= previous:  # identical instances in increasing slots: no symmetric retries
                continue
            span = range(start, start + profile.memory)
            if span.stop > model.memory_slices or any(used[s] for s in span):
                continue
            for s in span:
                used[s] = True
            placed.append((profile.name, start))
            if search(i + 1):
                return True
            placed.pop()
            for s in span:
                used[s] = False
        return False

    if not search(0):
        return None
    return tuple(sorted(placed, key=lambda item: (item[1], item[0])))


@functools.lru_cache(maxsize=256)
def _valid_layouts(model: MigModel, names: tuple[str, ...]) -> tuple[tuple[tuple[str, int], ...], ...]:
    profiles = [model.profile(n) for n in names]
    ranges = [range(p.shape.max_count + 1) if p else range(1) for p in profiles]
    found = []
    for counts in itertools.product(*ranges):
        if not any(counts):
            continue
        layout = tuple((n, c) for n, c in zip(names, counts) if c)
        if _place(model, layout) is not None:
            found.append(layout)
    return tuple(found)


@functools.lru_cache(maxsize=4096)
def _maximal_layouts(model: MigModel, names: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
    layouts = [tuple(dict(layout).get(n, 0) for n in names) for layout in model.valid_layouts(names)]
    maximal = [a for a in layouts
               if not any(b != a and all(x >= y for x, y in zip(b, a)) for b in layouts)]
    return tuple(sorted(maximal, key=lambda c: (-sum(c), c)))


def _model(name: str, memory_gib: float, generic_names: Mapping[str, str], source: str,
           shapes: tuple[ProfileShape, ...] = _SHAPES_8, balanced: Mapping[str, int] | None = None,
           placements_confirmed: bool = False) -> MigModel:
    total_memory = max(s.memory for s in shapes)
    total_compute = max(s.compute for s in shapes)
    by_key = {s.key: s for s in shapes}
    reported, cited = REPORTED_MIB_BY_SLICES.get(name, ({}, ""))
    profiles = tuple(
        Profile(nvidia_name, by_key[key], round(memory_gib * by_key[key].memory / total_memory, 2),
                *((reported[by_key[key].memory] / 1024, cited) if by_key[key].memory in reported else ()))
        for key, nvidia_name in generic_names.items()
    )
    profiles = tuple(sorted(profiles, key=lambda p: (p.compute, p.memory, p.shape.media)))
    return MigModel(name, memory_gib, total_compute, total_memory, profiles, source,
                    tuple(sorted((balanced or {}).items())), placements_confirmed)


def _names(one: str, one2: str, two: str, three: str, four: str, seven: str) -> dict[str, str]:
    return {"1g": one, "1g+me": one + "+me", "1g2": one2, "2g": two, "3g": three, "4g": four, "7g": seven}


MIG_MODELS: dict[str, MigModel] = {
    m.name: m
    for m in (
        _model("A100-40GB", 40, _names("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
               MIG_GUIDE, balanced={"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}, placements_confirmed=True),
        _model("A100-80GB", 80, _names("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
               MIG_GUIDE, balanced={"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, placements_confirmed=True),
        _model("H100-80GB", 80, _names("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
               MIG_GUIDE, balanced={"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
        _model("H100-NVL-94GB", 94, _names("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
               MIG_PARTED, balanced={"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1}, placements_confirmed=True),
        _model("GH200-96GB", 96, _names("1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),
               MIG_PARTED, balanced={"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1}),
        _model("GH200-144GB", 144, _names("1g.18gb", "1g.36gb", "2g.36gb", "3g.72gb", "4g.72gb", "7g.144gb"),
               MIG_PARTED, balanced={"1g.18gb": 2, "2g.36gb": 1, "3g.72gb": 1}),
        _model("H200-141GB", 141, _names("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
               MIG_GUIDE, balanced={"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}),
        _model("B200", 180, _names("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
               MIG_GUIDE, balanced={"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1}),
        _model("A30", 24, {"1g": "1g.6gb", "1g+me": "1g.6gb+me", "2g": "2g.12gb", "2g+me": "2g.12gb+me",
                           "4g": "4g.24gb"}, MIG_GUIDE, shapes=_SHAPES_4),
    )
}
