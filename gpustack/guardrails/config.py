"""The guardrails' configuration: the file `pulumi preview --policy-pack-config` takes, read by check too.

    {
      "all": "advisory",                                    # optional: one level for every rule
      "gpu-pool-attribution-labels": {"labels": ["team", "cost-center"]},
      "stack-gpu-budget": {"enforcementLevel": "mandatory", "maxGpus": 64, "maxMonthlyUsd": 150000},
      "node-pool-replacement": "disabled"
    }

A rule's entry is an enforcement level, or an object with an optional `enforcementLevel` and the
rule's options (its JSON schema is in `gpustack.guardrails.rules`). One file configures both the pack
and `gpustack check`, so the two judge a stack alike.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any

from gpustack.errors import did_you_mean
from gpustack.guardrails.rules import ADVISORY, DISABLED, MANDATORY, RULES, Rule

LEVELS = (MANDATORY, ADVISORY, DISABLED)


class ConfigError(ValueError):
    """A configuration that cannot be used; the message says where and what is allowed."""


@dataclasses.dataclass(frozen=True)
class Settings:
    levels: Mapping[str, str]  # rule name -> enforcement level
    options: Mapping[str, Mapping[str, Any]]  # rule name -> options, defaults filled in

    def active(self) -> list[Rule]:
        return [r for r in RULES if self.levels[r.name] != DISABLED]


def settings(config: Mapping[str, Any] | None = None, where: str = "policy config") -> Settings:
    """Checked settings from a config mapping (the pack's config format); raises ConfigError."""
    config = dict(config or {})
    names = [r.name for r in RULES]
    every = config.pop("all", None)
    if every is not None:
        _level(every, f"{where}: all")
    levels = {r.name: every or r.level for r in RULES}
    options: dict[str, dict[str, Any]] = {r.name: r.options(None) for r in RULES}
    for name, entry in config.items():
        if name not in names:
            raise ConfigError(f"{where}: {name!r} is not a gpustack guardrail{did_you_mean(name, names)}; "
                              f"known: all, {', '.join(names)}")
        rule = next(r for r in RULES if r.name == name)
        if isinstance(entry, str):
            levels[name] = _level(entry, f"{where}: {name}")
            continue
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where}: {name}: expected a level ({', '.join(LEVELS)}) or an object, "
                              f"got {entry!r}")
        if "enforcementLevel" in entry:
            levels[name] = _level(entry["enforcementLevel"], f"{where}: {name}.enforcementLevel")
        for key, value in entry.items():
            if key != "enforcementLevel":
                _check_option(rule, key, value, f"{where}: {name}.{key}")
        options[name] = rule.options(entry)
    return Settings(levels, options)


MAX_CONFIG_BYTES = 1024 * 1024


def load(path: str) -> Mapping[str, Any]:
    """A config file (JSON, as `pulumi preview --policy-pack-config` takes it), read strictly: a regular
    file of at most MAX_CONFIG_BYTES, UTF-8, no duplicate keys (JSON parsers disagree on which one
    wins, so a second `enforcementLevel` could switch a rule off unseen), no NaN or Infinity."""
    from gpustack.files import FileRefused, read_limited

    try:
        raw = read_limited(path, MAX_CONFIG_BYTES, "policy config file (JSON)")
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except FileRefused as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    except (_StrictJSON, RecursionError) as exc:
        raise ConfigError(f"{path}: {exc if isinstance(exc, _StrictJSON) else 'nested too deeply'}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object keyed by guardrail name")
    return data


class _StrictJSON(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _StrictJSON(f"the key {key!r} appears twice in one object; each key may appear once")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise _StrictJSON(f"{name} is not a number JSON allows; give a finite number")


def _level(value: object, where: str) -> str:
    if value not in LEVELS:
        raise ConfigError(f"{where}: {value!r} is not an enforcement level{did_you_mean(value, LEVELS)}; "
                          f"allowed: {', '.join(LEVELS)}")
    return str(value)


def _check_option(rule: Rule, key: str, value: object, where: str) -> None:
    if key not in rule.schema:
        allowed = ", ".join(["enforcementLevel", *rule.schema])
        raise ConfigError(f"{where}: unknown option{did_you_mean(key, rule.schema)}; allowed: {allowed}")
    schema = rule.schema[key]
    kind = schema["type"]
    ok = {
        "array": isinstance(value, list) and all(isinstance(v, str) for v in value),
        "object": isinstance(value, dict) and all(isinstance(v, str) for v in value.values()),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        # NaN compares false with everything: a NaN cap would pass every pool.
        "number": isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value),
    }[kind]
    if ok and kind in ("integer", "number") and value < schema.get("minimum", value):
        ok = False
    if not ok:
        expected = {"array": "a list of strings", "object": "an object of strings",
                    "integer": "a whole number >= 0", "number": "a number >= 0"}[kind]
        raise ConfigError(f"{where}: expected {expected}, got {value!r}")
