"""Semantic diff of master configs (and recipe YAML files) between two revisions, and the points
plan.

Owns the answer to "what did this config change do to the benchmark?": image changes per key; per
search-space arm (tp, offload, spec decoding, ...) the concurrency points added or removed; the
environment settings added, removed or changed per point (`env:` mappings and `additional-settings`
`NAME=VALUE` lists, also under `prefill`/`decode`); version changes of nested components such as
the KV offload backend (`kv-offload-backend: { name: lmcache, version: ... }`); other fields; and
how many throughput points the keys expand to (`points`, InferenceX's generator's plan). Recipe
files (any other YAML) get a leaf-path diff.

The result is structured (frozen records, JSON through `core.jsoncodec`); `changelog.notes` turns it
into bullets in both languages. Pure functions of the two texts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeAlias, TypeVar

from ...core import jsoncodec
from ..errors import ChangelogError
from . import points as _points
from .load import (
    load_yaml,  # the one strict loader (also used via this module)
)

# Arm fields that are not part of an arm's identity: its points, its environment, and versions.
_POINT_FIELDS = frozenset({"conc-list", "conc-start", "conc-end"})
_ENV_FIELDS = frozenset({"env", "additional-settings"})
# Canonical order for arm labels; anything else follows alphabetically.
_ARM_ORDER = (
    "tp",
    "ep",
    "dp-attn",
    "dcp-size",
    "kv-offloading",
    "kv-offload-backend",
    "spec-decoding",
    "router",
    "prefill",
    "decode",
)


# ---------------------------------------------------------------- records


@dataclass(frozen=True, kw_only=True)
class ImageChange:
    kind: ClassVar[str] = "image"
    key: str
    old: str
    new: str


@dataclass(frozen=True)
class KeyChange:
    """A whole config key added or removed (`change` is "added" or "removed")."""

    kind: ClassVar[str] = "key"
    key: str
    change: str

    def __post_init__(self) -> None:
        if self.change not in ("added", "removed"):
            raise ChangelogError(f"key change must be 'added' or 'removed', got {self.change!r}")


@dataclass(frozen=True, kw_only=True)
class FieldChange:
    """Any other field; `old`/`new` are the YAML scalars as text, None when absent."""

    kind: ClassVar[str] = "field"
    key: str
    path: str
    old: str | None
    new: str | None


@dataclass(frozen=True, kw_only=True)
class _ArmChange:
    """Where a change inside a search-space arm is: config key, scenario, arm label."""

    key: str
    scenario: str
    arm: str


@dataclass(frozen=True, kw_only=True)
class ConcurrencyChange(_ArmChange):
    kind: ClassVar[str] = "concurrency"
    added: tuple[int, ...]
    removed: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class EnvChange(_ArmChange):
    """One setting changed at some points of an arm: removed (new None), added (old None) or
    changed.
    """

    kind: ClassVar[str] = "env"
    name: str
    old: str | None
    new: str | None
    concurrency: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class VersionChange(_ArmChange):
    """A nested component's version in one arm, e.g. field kv-offload-backend, name lmcache."""

    kind: ClassVar[str] = "version"
    field: str
    name: str
    old: str | None
    new: str | None


Change: TypeAlias = (
    ImageChange | KeyChange | FieldChange | ConcurrencyChange | EnvChange | VersionChange
)
_KINDS: dict[str, type[Change]] = {
    c.kind: c
    for c in (ImageChange, KeyChange, FieldChange, ConcurrencyChange, EnvChange, VersionChange)
}


@dataclass(frozen=True)
class KeyPoints:
    """Throughput points one key expands to in the old and new revision (None: key absent)."""

    key: str
    old: int | None
    new: int | None


@dataclass(frozen=True)
class ConfigDiff:
    changes: tuple[Change, ...]
    points: tuple[KeyPoints, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "changes": [change_to_json(c) for c in self.changes],
            "points": [points_to_json(p) for p in self.points],
        }

    @classmethod
    def from_json(cls, data: object) -> ConfigDiff:
        obj = _mapping(data, "config diff")
        return cls(
            tuple(change_from_json(c) for c in _list(obj.get("changes", []), "changes")),
            tuple(points_from_json(p) for p in _list(obj.get("points", []), "points")),
        )


def change_to_json(change: Change) -> dict[str, Any]:
    """One change as `release.json` holds it: its kind, then its fields (`core.jsoncodec`)."""
    return {"kind": change.kind, **jsoncodec.fields_to_json(change)}


def change_from_json(data: object) -> Change:
    """Parse one change record (from `release.json`); an unknown kind or field, a missing field
    and a wrong type are errors."""
    obj = _mapping(data, "config change")
    kind = obj.get("kind")
    cls = _KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ChangelogError(
            f"config change has unknown kind {kind!r}; expected one of {sorted(_KINDS)}"
        )
    names = {f.name for f in fields(cls)}
    extra = set(obj) - names - {"kind"}
    if extra:
        raise ChangelogError(f"config change {kind!r} has unknown fields {sorted(extra)}")
    return _read(cls, {k: v for k, v in obj.items() if k != "kind"}, f"config change {kind}")


def points_to_json(points: KeyPoints) -> dict[str, Any]:
    return jsoncodec.to_json(points)


def points_from_json(data: object) -> KeyPoints:
    return _read(KeyPoints, data, "points plan entry")


def _read(cls: type[_T], data: object, what: str) -> _T:
    try:
        return jsoncodec.from_json(cls, data, where=what)
    except jsoncodec.RecordError as exc:
        raise ChangelogError(f"{exc}; fix release.json") from None


def _mapping(data: object, what: str) -> Mapping[str, Any]:
    if not isinstance(data, dict):
        raise ChangelogError(f"{what} must be a JSON object, got {type(data).__name__}")
    return data


def _list(data: object, what: str) -> list[Any]:
    if not isinstance(data, list):
        raise ChangelogError(f"{what} must be a JSON list, got {type(data).__name__}")
    return data


def _is_master(doc: object) -> bool:
    return (
        isinstance(doc, dict)
        and bool(doc)
        and all(isinstance(v, dict) and "scenarios" in v for v in doc.values())
    )


# ---------------------------------------------------------------- expansion


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_scalar(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    return str(value)


def concurrencies(arm: Mapping[str, Any], where: str) -> tuple[int, ...]:
    """The concurrency points of one arm, as InferenceX's generator sweeps them (`points`)."""
    return tuple(_points.concurrencies(arm, where))


def _settings(arm: Mapping[str, Any], where: str) -> dict[str, str]:
    """Environment of an arm: `env` mapping and `NAME=VALUE` settings, prefill/decode prefixed."""
    out: dict[str, str] = {}
    scopes: list[tuple[str, Mapping[str, Any]]] = [("", arm)]
    scopes += [
        (f"{role}.", arm[role]) for role in ("prefill", "decode") if isinstance(arm.get(role), dict)
    ]
    for prefix, scope in scopes:
        env = scope.get("env")
        if env is not None:
            if not isinstance(env, dict):
                raise ChangelogError(f"{where}: env must be a mapping of NAME: value")
            out.update({f"{prefix}{k}": _scalar(v) for k, v in env.items()})
        extra = scope.get("additional-settings")
        if extra is not None:
            if not isinstance(extra, list):
                raise ChangelogError(
                    f"{where}: additional-settings must be a list of NAME=VALUE strings"
                )
            for item in extra:
                name, sep, value = str(item).partition("=")
                out[f"{prefix}{name}"] = value if sep else ""
    return out


def _versions(arm: Mapping[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {
        k: (str(v.get("name")), None if v.get("version") is None else str(v["version"]))
        for k, v in arm.items()
        if isinstance(v, dict) and "name" in v
    }


def _arm_label(arm: Mapping[str, Any]) -> str:
    order = {name: i for i, name in enumerate(_ARM_ORDER)}
    parts = []
    for name in sorted(arm, key=lambda n: (order.get(n, len(order)), n)):
        if name in _POINT_FIELDS or name in _ENV_FIELDS:
            continue
        value = arm[name]
        if isinstance(value, dict):
            inner = {k: v for k, v in value.items() if k not in _ENV_FIELDS and k != "version"}
            value = inner["name"] if set(inner) == {"name"} else _scalar(inner)
        parts.append(f"{name}={_scalar(value)}")
    return ", ".join(parts)


@dataclass(frozen=True, kw_only=True)
class _Arm:
    """All points of one arm identity (several YAML items may share it, e.g. split by env)."""

    scenario: str
    label: str
    env: Mapping[int, Mapping[str, str]]  # concurrency -> settings at that point
    versions: Mapping[str, tuple[str, str | None]]

    @property
    def points(self) -> tuple[int, ...]:
        return tuple(self.env)


@dataclass(frozen=True)
class _Key:
    fields: Mapping[str, str]
    arms: tuple[_Arm, ...]


def _expand_key(name: str, cfg: Mapping[str, Any]) -> _Key:
    flat = {k: _scalar(v) for k, v in cfg.items() if k != "scenarios"}
    scenarios = cfg.get("scenarios")
    if not isinstance(scenarios, dict):
        raise ChangelogError(f"config key {name}: scenarios must be a mapping")
    points: dict[tuple[str, str], dict[int, Mapping[str, str]]] = {}
    versions: dict[tuple[str, str], dict[str, tuple[str, str | None]]] = {}
    for scen_name, entries in scenarios.items():
        if not isinstance(entries, list):
            raise ChangelogError(f"config key {name}: scenario {scen_name} must be a list")
        scen_seen: dict[str, int] = defaultdict(int)
        for entry in entries:
            if not isinstance(entry, dict):
                raise ChangelogError(
                    f"config key {name}: scenario {scen_name} entries must be mappings"
                )
            scen = str(scen_name)
            if "isl" in entry or "osl" in entry:
                scen += f" isl={entry.get('isl')} osl={entry.get('osl')}"
            scen_seen[scen] += 1
            if scen_seen[scen] > 1:  # two entries with one shape: keep them apart by position
                scen += f" #{scen_seen[scen]}"
            for field, value in entry.items():
                if field not in ("search-space", "isl", "osl"):
                    flat[f"{scen}.{field}"] = _scalar(value)
            space = entry.get("search-space")
            if not isinstance(space, list):
                raise ChangelogError(f"config key {name}: {scen} needs a search-space list")
            for arm in space:
                where = f"config key {name}: {scen}"
                if not isinstance(arm, dict):
                    raise ChangelogError(f"{where}: search-space items must be mappings")
                concs, env = concurrencies(arm, where), _settings(arm, where)
                base, n = _arm_label(arm), 1
                label = base
                # Items sharing a shape are one arm unless their points collide (then number them).
                while any(c in points.get((scen, label), {}) for c in concs):
                    n += 1
                    label = f"{base} #{n}"
                points.setdefault((scen, label), {}).update({c: env for c in concs})
                versions.setdefault((scen, label), {}).update(_versions(arm))
    arms = tuple(
        _Arm(scenario=scen, label=label, env=pts, versions=versions[(scen, label)])
        for (scen, label), pts in points.items()
    )
    return _Key(flat, arms)


def _expand(doc: object, what: str) -> dict[str, _Key]:
    if not _is_master(doc) or not isinstance(doc, dict):
        raise ChangelogError(
            f"{what} is not a master config (a mapping of config keys with scenarios)"
        )
    return {str(k): _expand_key(str(k), v) for k, v in doc.items()}


# ---------------------------------------------------------------- diff

_T = TypeVar("_T")


def _union(old: Iterable[_T], new: Iterable[_T]) -> list[_T]:
    """The keys of both revisions: old's in order, then those only new has, in new's order."""
    return list(dict.fromkeys([*old, *new]))


def points_plan(
    text: str, keys: Iterable[str] | None = None, what: str = "config"
) -> dict[str, int]:
    """Throughput points per config key (all keys, or the given ones; unknown keys are errors)."""
    doc = load_yaml(text, what)
    _expand(doc, what)  # the same shape checks as the diff
    wanted = list(doc) if keys is None else list(keys)
    missing = [k for k in wanted if k not in doc]
    if missing:
        raise ChangelogError(f"config keys not in {what}: {', '.join(missing)}")
    return {k: _points.count(k, doc[k]) for k in wanted}


def diff(old_text: str, new_text: str) -> ConfigDiff:
    """Structured changes between two revisions of a master config, or of any recipe YAML."""
    old_doc, new_doc = load_yaml(old_text, "old config"), load_yaml(new_text, "new config")
    if not (_is_master(old_doc) and _is_master(new_doc)):
        return ConfigDiff(tuple(_diff_tree("", old_doc, new_doc)), ())
    old, new = _expand(old_doc, "old config"), _expand(new_doc, "new config")
    old_cfg = {str(k): v for k, v in old_doc.items()}  # _expand names keys by str(key)
    new_cfg = {str(k): v for k, v in new_doc.items()}
    changes: list[Change] = []
    points: list[KeyPoints] = []
    for key in _union(old, new):
        if key not in new or key not in old:
            changes.append(KeyChange(key, "removed" if key not in new else "added"))
            points.append(
                KeyPoints(
                    key,
                    _points.count(key, old_cfg[key]) if key in old else None,
                    _points.count(key, new_cfg[key]) if key in new else None,
                )
            )
            continue
        before = len(changes)
        changes += _diff_key(key, old[key], new[key])
        if len(changes) > before:
            points.append(
                KeyPoints(key, _points.count(key, old_cfg[key]), _points.count(key, new_cfg[key]))
            )
    return ConfigDiff(tuple(changes), tuple(points))


def _diff_key(key: str, old: _Key, new: _Key) -> list[Change]:
    out: list[Change] = []
    if old.fields.get("image") != new.fields.get("image"):
        out.append(
            ImageChange(key=key, old=old.fields.get("image", ""), new=new.fields.get("image", ""))
        )
    for field in _union(old.fields, new.fields):
        if field != "image" and old.fields.get(field) != new.fields.get(field):
            out.append(
                FieldChange(
                    key=key, path=field, old=old.fields.get(field), new=new.fields.get(field)
                )
            )
    old_arms = {(a.scenario, a.label): a for a in old.arms}
    new_arms = {(a.scenario, a.label): a for a in new.arms}
    for ident in _union(old_arms, new_arms):
        a, b = old_arms.get(ident), new_arms.get(ident)
        old_pts, new_pts = (a.points if a else ()), (b.points if b else ())
        added = tuple(sorted(c for c in new_pts if c not in old_pts))
        removed = tuple(sorted(c for c in old_pts if c not in new_pts))
        if added or removed:
            out.append(
                ConcurrencyChange(
                    key=key, scenario=ident[0], arm=ident[1], added=added, removed=removed
                )
            )
        if a and b:
            out += _diff_env(key, a, b)
            for field in _union(a.versions, b.versions):
                va, vb = a.versions.get(field), b.versions.get(field)
                if va and vb and va[0] == vb[0] and va[1] != vb[1]:
                    out.append(
                        VersionChange(
                            key=key,
                            scenario=a.scenario,
                            arm=a.label,
                            field=field,
                            name=va[0],
                            old=va[1],
                            new=vb[1],
                        )
                    )
    return out


def _diff_env(key: str, a: _Arm, b: _Arm) -> list[Change]:
    # Only points present in both revisions: an added/removed point is a concurrency change.
    groups: dict[tuple[str, str | None, str | None], list[int]] = defaultdict(list)
    for conc in sorted(c for c in a.points if c in b.points):
        env_a, env_b = a.env[conc], b.env[conc]
        for name in _union(env_a, env_b):
            old, new = env_a.get(name), env_b.get(name)
            if old != new:
                groups[(name, old, new)].append(conc)
    return [
        EnvChange(
            key=key,
            scenario=a.scenario,
            arm=a.label,
            name=name,
            old=old,
            new=new,
            concurrency=tuple(concs),
        )
        for (name, old, new), concs in groups.items()
    ]


def _diff_tree(path: str, old: object, new: object) -> list[Change]:
    """Leaf-path diff for recipe files; the 'key' of each change is the recipe's dotted path."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[Change] = []
        for k in _union(old, new):
            sub = f"{path}.{k}" if path else str(k)
            if k not in new:
                out.append(FieldChange(key=sub, path="", old=_scalar(old[k]), new=None))
            elif k not in old:
                out.append(FieldChange(key=sub, path="", old=None, new=_scalar(new[k])))
            else:
                out += _diff_tree(sub, old[k], new[k])
        return out
    if old != new:
        return [FieldChange(key=path or "(document)", path="", old=_scalar(old), new=_scalar(new))]
    return []


def changed_keys(changes: Sequence[Change]) -> tuple[str, ...]:
    """Config keys touched by the changes, in first-seen order."""
    return tuple(dict.fromkeys(c.key for c in changes))
