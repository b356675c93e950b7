"""Append-only changelog entries: process_changelog.py's checks of their scope and their matrix.

An entry with `append-only: true` asks InferenceX's CI to run only the points its PR adds and to
append them to the existing curves. `process_changelog.py` accepts that only when, between the
master configs at the base and at the head:

* every selected config exists at the base;
* no config the append-only entries do not select changed; no selected config gained or lost a
  scenario; a config-wide field changed only when every scenario of the config is selected;
  no unselected scenario changed (`validate_append_only_scope`);
* the generated rows of the selected keys and scenarios (`changelog.configs.points.matrix_rows`,
  equal to its sweep generator's rows) keep every base curve (a row without `conc` and
  `exp-name`) and every base concurrency, add at least one point, and each added point belongs
  to a visual curve of the base that has one non-null image, the same (`append_only_delta`).
  A selection that generates no rows at the base (keys whose configs have no item of the
  entry's `scenario-type`) has no curve to append to.

This module is pure: the caller reads the configs at the two revisions. It loads only when an
appended entry is append-only, so the usual commit never pays for it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any  # points.py imports typing already: no extra cost on this path

from ...changelog.configs.load import (
    MAX_MASTER_BYTES,
    load_yaml,
    master_blocks,
    parse_master,
)
from ...changelog.configs.points import SCENARIOS, matrix_rows
from ...changelog.errors import ChangelogError

# Row fields that identify a point rather than its curve (`_matrix_curve_key`).
_POINT_FIELDS = frozenset({"conc", "exp-name", "recipe-fingerprint"})


class Configs(Mapping[str, Mapping[str, Any]]):
    """The merged master configs of one revision. A config is parsed on first use from its own
    block of text (`load.master_blocks`): the checks parse only the selected configs and those
    whose text differs between the base and the head, a fraction of the real masters."""

    def __init__(
        self,
        texts: Mapping[str, tuple[str, str]],
        parsed: Mapping[str, Any],
        files: Mapping[str, bytes],
    ) -> None:
        self._texts = texts  # key -> (file, block text)
        self._files = files  # file -> its bytes, to report a block's error as the file's
        self._parsed = dict(parsed)  # key -> config, for files that had to be loaded whole
        self._order = [*texts, *parsed]

    def text(self, key: str) -> str | None:
        """The key's block of text, when its file was split into blocks."""
        found = self._texts.get(key)
        return None if found is None else found[1]

    def __getitem__(self, key: str) -> Mapping[str, Any]:
        if key not in self._parsed:
            where, text = self._texts[key]  # KeyError for an unknown key, as a Mapping does
            try:
                self._parsed[key] = parse_master(text.encode("utf-8"), Path(where))[key]
            except ChangelogError:
                parse_master(self._files[where], Path(where))  # the error at its file's line
                raise
        value: Mapping[str, Any] = self._parsed[key]
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._texts or key in self._parsed

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)


@dataclass(frozen=True, kw_only=True)
class Revision:
    """The master configs (merged) and configs/runners.yaml at one side of the change."""

    configs: Configs
    runners: Mapping[str, Any] | None


def revision(masters: Sequence[tuple[str, bytes]], runners: tuple[str, bytes] | None) -> Revision:
    """A revision from the bytes of its master files and runners.yaml (`where` names them)."""
    texts: dict[str, tuple[str, str]] = {}
    parsed: dict[str, Any] = {}
    files = dict(masters)
    origin: dict[str, str] = {}
    for where, data in masters:
        if len(data) > MAX_MASTER_BYTES:  # a blob is read whole: refuse before decoding it
            raise ChangelogError(f"{where} is larger than {MAX_MASTER_BYTES} bytes")
        blocks = master_blocks(data, Path(where))
        if blocks is None:
            items: Mapping[str, Any] = parse_master(data, Path(where))
        else:
            items = blocks
        for key, value in items.items():
            if key in origin:
                raise ChangelogError(
                    f"config key `{key}` is defined in both {origin[key]} and {where}; keep one"
                )
            if "*" in key:
                raise ChangelogError(f"{where}: config key `{key}` contains `*`; rename it")
            origin[key] = where
            if blocks is None:
                parsed[key] = value
            else:
                texts[key] = (where, value)
    loaded = None
    if runners is not None:
        loaded = load_yaml(runners[1].decode("utf-8", "replace"), runners[0])
    return Revision(configs=Configs(texts, parsed, files), runners=loaded)


@dataclass(frozen=True, kw_only=True)
class Selection:
    """What one appended append-only entry selects: its keys (resolved at the head) and the
    scenarios of its `scenario-type` (all scenarios without one)."""

    entry: int  # index among the appended entries, for the finding's line
    keys: tuple[str, ...]
    scenarios: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Violation:
    """The first append-only check an entry fails: which entry, what, and how to fix it."""

    entry: int
    message: str
    hint: str


def violation(selections: Sequence[Selection], base: Revision, head: Revision) -> Violation | None:
    """The first check process_changelog.py fails on (None: it accepts), in its order."""
    if not selections:
        return None
    selected: dict[str, set[str]] = {}
    owner: dict[str, int] = {}
    for sel in selections:
        for key in sel.keys:
            selected.setdefault(key, set()).update(sel.scenarios)
            owner.setdefault(key, sel.entry)
    missing = [key for key in selected if key not in base.configs]
    if missing:
        return Violation(
            entry=owner[missing[0]],
            message="append-only requires every selected config to exist in the base; "
            f"missing: {', '.join(sorted(missing))}",
            hint="add a new config with a regular entry, not an append-only one",
        )
    scope = _scope(base.configs, head.configs, selected)
    if scope is not None:
        concerned, why = scope
        return Violation(
            entry=owner.get(concerned, selections[0].entry) if concerned else selections[0].entry,
            message=why,
            hint="an append-only PR may change only what its entries select: "
            "split the other changes into a PR with a regular entry",
        )
    # Scenarios a config already ran for an earlier entry are not generated again (as
    # process_changelog.py's `benchmark_scenarios_seen`); each group is compared on its own.
    seen: dict[str, set[str]] = {}
    for sel in selections:
        groups: dict[tuple[str, ...], list[str]] = {}
        for key in sel.keys:
            done = seen.setdefault(key, set())
            unseen = tuple(s for s in SCENARIOS if s in sel.scenarios and s not in done)
            if unseen:
                done.update(unseen)
                groups.setdefault(unseen, []).append(key)
        for scenarios, keys in groups.items():
            try:
                message = _delta(_rows(base, keys, scenarios), _rows(head, keys, scenarios))
            except ChangelogError as exc:
                message = f"the sweep generator cannot expand the selection: {exc}"
            if message is not None:
                return Violation(
                    entry=sel.entry,
                    message=message,
                    hint="append-only may only add concurrency points or recipe variants to "
                    "existing curves; otherwise drop `append-only: true`",
                )
    return None


def _scope(
    base: Configs,
    head: Configs,
    selected: Mapping[str, set[str]],
) -> tuple[str | None, str] | None:
    """`validate_append_only_scope`: (the config it concerns, message), or None."""

    def differs(key: str) -> bool:
        text = base.text(key)
        if text is not None and text == head.text(key):
            return False  # the same text is the same config: no need to parse it
        return base.get(key) != head.get(key)

    unrelated = sorted(
        key for key in base.keys() | head.keys() if key not in selected and differs(key)
    )
    if unrelated:
        shown = ", ".join(unrelated[:5]) + (
            f" (+{len(unrelated) - 5} more)" if len(unrelated) > 5 else ""
        )
        return None, f"append-only PR changed configs its entries do not select: {shown}"
    for key, allowed in selected.items():
        old, new = base[key], head.get(key)
        if not isinstance(new, Mapping):
            return key, f"append-only removed the selected config {key}"
        old_scenarios = old.get("scenarios") or {}
        new_scenarios = new.get("scenarios") or {}
        if not isinstance(old_scenarios, Mapping) or not isinstance(new_scenarios, Mapping):
            return key, f"config {key}: scenarios must be a mapping"
        if old_scenarios.keys() != new_scenarios.keys():
            return key, f"append-only added or removed a scenario in config {key}"
        unselected = [s for s in old_scenarios if s not in allowed]
        changed = sorted(
            field
            for field in (old.keys() | new.keys()) - {"scenarios"}
            if old.get(field) != new.get(field)
        )
        if unselected and changed:
            return key, (
                f"append-only changed config-wide field(s) {', '.join(changed)} of {key}, which "
                f"also affect its unselected scenario(s) {', '.join(unselected)}"
            )
        for scenario in unselected:
            if old_scenarios[scenario] != new_scenarios[scenario]:
                return key, f"append-only changed scenario {scenario} of {key}, outside its scope"
    return None


def _rows(rev: Revision, keys: Sequence[str], scenarios: tuple[str, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key in keys:
        for row in matrix_rows(key, rev.configs[key], scenarios=scenarios, runners=rev.runners):
            row["config-key"] = key  # for messages only; dropped from every comparison
            out.append(row)
    return out


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _curve(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """`_matrix_curve_key`: the row without its point-level fields."""
    return tuple(
        sorted(
            (k, _freeze(v)) for k, v in row.items() if k not in _POINT_FIELDS and k != "config-key"
        )
    )


def _visual_series(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """`_matrix_visual_series_key`: the App curve an added point is drawn on."""
    agentic = row.get("scenario-type") == "agentic-coding"
    prefill = row.get("prefill") or {}
    decode = row.get("decode") or {}
    return (
        row.get("model"),
        row.get("model-prefix"),
        row.get("precision"),
        row.get("framework"),
        row.get("runner"),
        bool(row.get("disagg", False)),
        "agentic_traces" if agentic else "single_turn",
        None if agentic else row.get("isl"),
        None if agentic else row.get("osl"),
        "off" if row.get("kv-offloading", "none") in (None, "", "none") else "on",
        "" if agentic else row.get("spec-decoding", "none"),
        prefill.get("hardware") if isinstance(prefill, dict) else None,
        decode.get("hardware") if isinstance(decode, dict) else None,
    )


def _describe(row: Mapping[str, Any]) -> str:
    shape = " ".join(
        f"{k}={row[k]}" for k in ("isl", "osl", "tp", "ep", "spec-decoding") if k in row
    )
    return f"{row['config-key']} {row.get('scenario-type', 'fixed-seq-len')} {shape}".strip()


def _delta(base_rows: list[dict[str, Any]], head_rows: list[dict[str, Any]]) -> str | None:
    """`append_only_delta`'s rejections, or None when the head only adds points."""
    base: dict[tuple[Any, ...], set[int]] = {}
    head: dict[tuple[Any, ...], set[int]] = {}
    first: dict[tuple[Any, ...], dict[str, Any]] = {}
    for rows, groups in ((base_rows, base), (head_rows, head)):
        for row in rows:
            curve = _curve(row)
            groups.setdefault(curve, set()).add(row["conc"])
            first.setdefault(curve, row)
    if not base:
        return (
            "append-only requires an existing curve in the base, and the selected keys "
            "generate no points there (no item of the entry's scenario-type)"
        )
    for curve, concs in base.items():
        if curve not in head:
            return (
                "append-only may not remove or modify existing generated recipes: "
                f"{_describe(first[curve])} (conc {sorted(concs)}) is gone or changed at the head"
            )
        removed = concs - head[curve]
        if removed:
            return (
                "append-only may not remove existing concurrency points: "
                f"{_describe(first[curve])} loses conc {sorted(removed)}"
            )
    added = [row for row in head_rows if row["conc"] not in base.get(_curve(row), ())]
    if not added:
        return "append-only did not add any generated points"
    images: dict[tuple[Any, ...], set[Any]] = {}
    for row in base_rows:
        images.setdefault(_visual_series(row), set()).add(row.get("image"))
    for row in added:
        known = images.get(_visual_series(row), set())
        if row.get("image") is None or known != {row.get("image")}:
            why = (
                "no such curve in the base"
                if not known
                else f"base image(s) {sorted(map(str, known))}"
            )
            return (
                "append-only additions must belong to an existing visual curve with one "
                f"unchanged non-null image: {_describe(row)} conc {row['conc']} ({why})"
            )
    return None
