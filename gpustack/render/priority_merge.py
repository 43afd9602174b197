"""gpustack's priority-expander entries merged into the ConfigMap a cluster already has.

The Cluster Autoscaler reads one priority ConfigMap (`cluster-autoscaler-priority-expander`, key
`priorities`) per cluster, so gpustack's spot-first entries cannot live in an object of their own. When
the cluster has one, the merge keeps every entry the cluster's owner wrote and adds gpustack's:

- gpustack's regexes of the previous merge are listed under the data key `gpustack-owned` (the
  autoscaler reads only `priorities`), so they are replaced, never duplicated or left behind, and a
  regex the owner wrote is never taken for gpustack's;
- a node group takes the highest priority whose regex matches it (expander/priority/priority.go,
  `BestOptions`), so an owner's regex matching gpustack's node groups at or above gpustack's fallback
  priority would make spot and fallback tie: gpustack's priorities are placed above the owner's highest
  (fallback 10 above it, spot 10 above that), so spot stays first whatever the owner's regexes match;
- gpustack's catch-all `.*` (which keeps the cluster's other node groups eligible in a ConfigMap
  gpustack creates) is not added: in a merged ConfigMap the owner's entries decide about their groups.

The `priorities` value is parsed as the autoscaler does (`parsePrioritiesYAMLString` in priority.go:
a YAML map of integer priorities to lists of regexes): anything else is refused with the reason,
never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gpustack.render.autoscaling import FALLBACK_PRIORITY, SPOT_PRIORITY, priorities_table_text
from gpustack.errors import SpecError
from gpustack.spec.yamlsource import parse

SOURCE = "https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/expander/priority/priority.go"
OWNED_KEY = "gpustack-owned"  # gpustack's regexes of the last merge, one per line
PRIORITIES_KEY = "priorities"
_PRIORITY = re.compile(r"[0-9]{1,16}")  # a whole number; at most MAX_PRIORITY
# The expander reads keys as Go ints (64-bit on the platforms its images are built for); gpustack's YAML
# reader bounds numbers at 10^15, far above any table written by hand. A merge that would place
# gpustack's priorities above this is refused, so what gpustack writes always parses again.
MAX_PRIORITY = 10**15
GAP = 10  # between the owner's highest priority, gpustack's fallback and its spot pools


class PriorityMergeError(ValueError):
    """The cluster's ConfigMap cannot be merged with; the message says why and what to do."""


def parse_priorities(text: str, where: str) -> dict[int, list[str]]:
    """The `priorities` value as the autoscaler reads it: priority -> regexes, or PriorityMergeError."""
    if not text.strip():
        return {}
    try:
        document = parse(text, where)
    except SpecError as exc:
        raise PriorityMergeError(f"{where}: `{PRIORITIES_KEY}` is not valid YAML: {exc.problems[0].message}") from None
    data = document.data
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PriorityMergeError(f"{where}: `{PRIORITIES_KEY}` must map priorities to lists of regexes ({SOURCE})")
    table: dict[int, list[str]] = {}
    for key, regexes in data.items():
        if (_PRIORITY.fullmatch(key) is None or document.typed_keys.get((key,)) != "int"
                or int(key) > MAX_PRIORITY):
            raise PriorityMergeError(f"{where}: priority {key[:30]!r} is not a whole number from 0 to {MAX_PRIORITY}")
        if not isinstance(regexes, list) or not all(isinstance(r, str) for r in regexes):
            raise PriorityMergeError(f"{where}: priority {key}: expected a list of regexes (strings)")
        for regex in regexes:
            try:
                re.compile(regex)
            except re.error as exc:
                raise PriorityMergeError(f"{where}: priority {key}: {regex!r} is not a valid regex ({exc})") from None
        table.setdefault(int(key), []).extend(regexes)
    return table


def merge_priorities(existing: Mapping[str, Any], rendered: Mapping[str, Any], where: str) -> dict[str, Any]:
    """`rendered` (gpustack's priority ConfigMap) merged into `existing` (the cluster's, as `kubectl get
    -o yaml` prints it): the object to apply in its place."""
    name, namespace = rendered["metadata"]["name"], rendered["metadata"].get("namespace")
    meta, data = _cluster_config_map(existing, name, namespace, where)
    owned_before = set(data.get(OWNED_KEY, "").splitlines())
    theirs = {p: kept for p, regexes in parse_priorities(data.get(PRIORITIES_KEY, ""), where).items()
              if (kept := [r for r in regexes if r not in owned_before])}
    table, owned = _placed(theirs, parse_priorities(rendered["data"][PRIORITIES_KEY], "gpustack"), where)
    merged_data = {**{k: v for k, v in data.items() if k not in (PRIORITIES_KEY, OWNED_KEY)},
                   PRIORITIES_KEY: priorities_table_text(table), OWNED_KEY: "".join(f"{r}\n" for r in sorted(owned))}
    labels = {**(meta.get("labels") or {}), **rendered["metadata"].get("labels", {})}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(sorted(labels.items()))},
            "data": dict(sorted(merged_data.items()))}


def _cluster_config_map(existing: Mapping[str, Any], name: str, namespace: str | None,
                        where: str) -> tuple[Mapping[str, Any], Mapping[str, str]]:
    """The cluster's ConfigMap's metadata and data, once it is known to be the one the autoscaler reads."""
    if existing.get("kind") != "ConfigMap" or not isinstance(existing.get("metadata"), Mapping):
        raise PriorityMergeError(f"{where}: expected the cluster's ConfigMap "
                                 "(kubectl get configmap cluster-autoscaler-priority-expander -n <namespace> -o yaml)")
    meta = existing["metadata"]
    if (meta.get("name"), meta.get("namespace")) != (name, namespace):
        raise PriorityMergeError(f"{where}: this is {meta.get('namespace')}/{meta.get('name')}; the autoscaler reads "
                                 f"{namespace}/{name}")
    data = existing.get("data") or {}
    if not isinstance(data, Mapping) or not all(isinstance(v, str) for v in data.values()):
        raise PriorityMergeError(f"{where}: its data must map keys to strings")
    return meta, data


def _placed(theirs: dict[int, list[str]], ours: dict[int, list[str]],
            where: str) -> tuple[dict[int, list[str]], set[str]]:
    """The merged priority table, and the regexes gpustack owns in it: gpustack's placed above the owner's."""
    if not theirs:  # nothing of the owner's left: gpustack's ConfigMap as it would create it
        return ours, {r for regexes in ours.values() for r in regexes}
    fallback = max(FALLBACK_PRIORITY, max(theirs) + GAP)
    if fallback + GAP > MAX_PRIORITY:  # refused now, not written and refused by the next merge
        raise PriorityMergeError(f"{where}: the owner's highest priority {max(theirs)} leaves no room above it "
                                 f"for gpustack's ({2 * GAP} more, at most {MAX_PRIORITY}); lower it first")
    placed = {fallback + GAP: ours.get(SPOT_PRIORITY, []), fallback: ours.get(FALLBACK_PRIORITY, [])}
    table = dict(theirs)
    for priority, regexes in placed.items():
        if regexes:
            table[priority] = [*table.get(priority, []), *sorted(set(regexes) - set(table.get(priority, [])))]
    return table, {r for regexes in placed.values() for r in regexes}
