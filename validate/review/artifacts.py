"""Checks over the benchmark's points and artifacts: golden-al, append-only, pareto and notes.

golden-al: the scoped golden acceptance-length check (`relpipe.validate.golden_al.check`) for
the keys in scope only, so other keys never change the verdict. append-only: for a change whose new
perf-changelog entries say `append-only: true`, every point InferenceX's generator produced at
the base (`relpipe.changelog.configs.points`, the one points plan) is still produced at the head
with the same key-level recipe, and no recipe file an existing point uses changed. pareto: the
frontier (throughput per GPU against interactivity) of each curve in `--results`; under 5 points
is a WARN. notes: the PR body against release facts (`relpipe.validate.notes_check`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import re2

from ...changelog.configs.load import MasterConfigs, load_yaml, resolve_key
from ...changelog.configs.points import plan_key
from ...changelog.errors import ChangelogError
from ...changelog.notes.facts import load
from ...changelog.repository import launch as keyfiles
from ...core import jsonload
from ...core.check import Evidence, Judgement, judged
from ...core.files import read_capped
from ...core.process import one_line
from ...core.status import FAIL, NA, PASS, WARN
from .. import golden_al, notes_check
from ..errors import ValidateError
from .context import Review, plural
from .scope import Masters, load_masters, scope_key

_CLAIM = re2.compile(r"\s*(?:-\s+)?append-only:\s*true\b")
MIN_FRONTIER = 5
MAX_RESULT_FILES = 20_000
MAX_RESULT_BYTES = 1024 * 1024


def check_golden(review: Review) -> Judgement:
    """`golden_al.verdict` for the keys in scope: the same function, and so the same verdict,
    as the release's C9 (K from recipes and launch scripts; where the era's harness injects
    the golden value, that value)."""

    if not review.scopes:
        return judged(NA, "no config key in scope")
    if review.source.ref is not None:
        return judged(NA, "golden-al reads the working tree; review the head checked out")
    golden = review.source.era.golden
    if not (review.source.root / golden).is_dir():
        return judged(NA, f"no {golden}/ in the repository (the era's golden AL curves)")
    root = review.source.root
    masters = MasterConfigs(  # the masters the review loaded: not parsed a second time
        configs=review.masters.configs,
        origin={k: root / w[0] for k, w in review.masters.where.items()},
    )
    found = golden_al.verdict(root, [s.key for s in review.scopes], masters)
    order: dict[str, int] = {FAIL: 0, WARN: 1, PASS: 2, NA: 3}
    rows = [
        Evidence.at(
            st.path,
            st.line,
            f"{st.verdict} {st.key}: {st.engine} "
            f"{f'K={st.k} ({st.k_source})' if st.k is not None else 'K unknown'}, configured "
            f"{st.configured}, golden {st.golden} ({st.golden_file or '-'}, {st.thinking}): "
            f"{st.reason}",
        )
        for st in sorted(found.rows, key=lambda x: order.get(x.verdict, 1))
    ]
    return judged(found.status, found.reason, rows)


def appended(review: Review) -> tuple[list[Mapping[str, Any]], str | None]:
    """New changelog entries of the change (head minus base), or why they cannot be read."""
    assert review.base_source is not None
    changelog = review.source.era.changelog
    head = review.source.text(changelog) or ""
    base = review.base_source.text(changelog) or ""
    if head == base:
        return [], None
    if not head.startswith(base.rstrip("\n")):
        return [], f"{changelog} changed other than by appending"
    tail = head[len(base.rstrip("\n")) :]
    try:
        doc = load_yaml(tail, f"{changelog} (appended part)")
    except ChangelogError as exc:
        return [], str(exc)
    entries = [e for e in doc or [] if isinstance(e, Mapping)] if isinstance(doc, list) else []
    return entries, None


def _recipe(cfg: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cfg.items() if k != "scenarios"}


def check_append_only(review: Review) -> Judgement:
    if review.change is None or review.base_source is None:
        return judged(NA, "no change given (--base-ref/--head-ref)")
    entries, why = appended(review)
    if why:
        # The changelog gate (validate/gate/) reports a rewritten history; this check only
        # speaks when an entry claims append-only (otherwise it would repeat the gate).
        lines = review.source.lines(review.source.era.changelog)
        touched = review.change.lines.get(review.source.era.changelog, frozenset())
        claims = [n for n in sorted(touched) if 0 < n <= len(lines) and _CLAIM.match(lines[n - 1])]
        if not claims:
            return judged(NA, "no changed changelog line says `append-only: true`")
        return judged(FAIL, why)
    flagged = [e for e in entries if e.get("append-only") is True]
    if not flagged:
        return judged(NA, "no new changelog entry says `append-only: true`")
    if len(flagged) != len(entries):
        return judged(FAIL, "append-only and regular entries are mixed in one change")
    base = load_masters(review.base_source)
    rows: list[Evidence] = []
    fails: list[str] = []
    changed = set(review.change.paths)
    for entry in flagged:
        for pattern in entry.get("config-keys") or []:
            try:
                keys = resolve_key(str(pattern), list(review.masters.configs))
            except ChangelogError as exc:
                return judged(FAIL, str(exc))
            for key in keys:
                failed = _judge_appended_key(review, base, key, rows, fails, changed)
                if failed is not None:
                    return judged(FAIL, failed)
    if fails:
        return judged(
            FAIL,
            fails[0] + (f" (+{len(fails) - 1} more)" if len(fails) > 1 else ""),
            [*rows, *(Evidence("fail", f) for f in fails)],
        )
    if any("needs a person" in r.what for r in rows):
        return judged(WARN, "points are appended; shared launch files changed too", rows)
    return judged(PASS, "every existing point is still generated with the same recipe", rows)


def _judge_appended_key(
    review: Review,
    base: Masters,
    key: str,
    rows: list[Evidence],
    fails: list[str],
    changed: set[str],
) -> str | None:
    """One key of an append-only entry: its existing points and recipe kept, its shared launch
    files noted (rows, fails grow); a reason to FAIL at once when its points cannot be made."""
    if key not in base.configs:
        fails.append(f"{key} is a new key (append-only adds points to existing ones)")
        return None
    before, after = base.configs[key], review.masters.configs[key]
    try:
        old = {p.name: p.identity() for p in plan_key(key, before)}
        new = {p.name: p.identity() for p in plan_key(key, after)}
    except ChangelogError as exc:
        return str(exc)
    master, line, _ = review.masters.where[key]
    gone = [n for n in old if new.get(n) != old[n]]
    if gone:
        fails.append(f"{key}: existing point {gone[0]} removed or changed")
    if _recipe(before) != _recipe(after):
        diff = sorted(
            k for k in set(before) | set(after) - {"scenarios"} if before.get(k) != after.get(k)
        )
        fails.append(f"{key}: key-level recipe changed ({', '.join(diff)})")
    added = len(set(new) - set(old))
    rows.append(Evidence.at(master, line, f"{key}: {len(old)} -> {len(new)} points, {added} added"))
    scope = next((s for s in review.scopes if s.key == key), None)
    scope = scope or scope_key(review.source, review.masters, key)
    for use in scope.files:
        if use.path not in changed or use.path == master:
            continue
        text = json.dumps(before)
        used_before = (
            use.role != "recipe" or keyfiles.recipe_name(review.source.era, use.path) in text
        )
        if use.role == "recipe" and used_before:
            fails.append(f"{key}: recipe {use.path} of existing points changed")
        elif used_before:
            rows.append(
                Evidence(
                    use.path,
                    f"{key}: shared launch file changed; "
                    "isolation to the new points needs a person",
                )
            )
    return None


def _number(data: Mapping[str, Any], *names: str) -> float | None:
    for name in names:
        value = data.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    return None


def check_pareto(review: Review) -> Judgement:
    folder = review.options.results
    if folder is None:
        return judged(NA, "no benchmark results given (--results DIR)")
    if not folder.is_dir():
        raise ValidateError(f"--results {folder} is not a directory")
    curves: dict[str, list[tuple[float, float, str]]] = {}
    rows: list[Evidence] = []
    refused: list[Evidence] = []
    files = 0
    for path in sorted(folder.rglob("*.json")):
        files += 1
        if files > MAX_RESULT_FILES:
            rows.append(Evidence(str(folder), f"more than {MAX_RESULT_FILES} files; rest skipped"))
            break
        # A result that cannot be read (a link, a FIFO, over the cap, JSON nested too deep, a
        # number out of range) may hide a point: the check is not made, and says so (a FAIL).
        try:
            if path.is_symlink():
                raise ValidateError("is a symbolic link")
            raw = read_capped(path, MAX_RESULT_BYTES, "result", error=ValidateError)
            data = jsonload.loads(raw)
        except (ValidateError, ValueError) as exc:
            refused.append(Evidence(path.name, f"refused: {one_line(str(exc), 160)}"))
            continue
        if not isinstance(data, dict):
            continue
        y = _number(data, "tput_per_gpu")
        x = _number(data, "median_intvty", "mean_intvty")
        if x is None:
            e2el = _number(data, "median_e2el", "mean_e2el")
            x = 1.0 / e2el if e2el else None
        if y is None or x is None:
            rows.append(Evidence(path.name, "no tput_per_gpu or latency metric; skipped"))
            continue
        curve = "/".join(
            str(data.get(k, "?"))
            for k in (
                "infmax_model_prefix",
                "hw",
                "framework",
                "precision",
                "spec_decoding",
                "isl",
                "osl",
            )
        )
        curves.setdefault(curve, []).append((x, y, path.name))
    if refused:
        more = f" (+{len(refused) - 1} more)" if len(refused) > 1 else ""
        first = refused[0]
        return judged(FAIL, f"result file {first.where} {first.what}{more}", [*refused, *rows])
    if not curves:
        return judged(WARN if rows else NA, f"no result in InferenceX's format in {folder}", rows)
    thin = []
    for curve, points in sorted(curves.items()):
        best = -math.inf
        frontier = 0
        for _, y, _name in sorted(points, key=lambda p: (-p[0], -p[1])):
            if y > best:
                frontier += 1
                best = y
        rows.insert(0, Evidence(curve, f"{frontier} frontier point(s) of {len(points)}"))
        if frontier < MIN_FRONTIER:
            thin.append(f"{curve} ({frontier})")
    if thin:
        return judged(WARN, f"under {MIN_FRONTIER} frontier points: {thin[0]}", rows)
    return judged(
        PASS, f"{plural(len(curves), 'curve')} with >= {MIN_FRONTIER} frontier points", rows
    )


def check_notes(review: Review) -> Judgement:
    if review.options.body is None:
        return judged(NA, "no PR body given (--body FILE)")
    facts_path = review.options.facts
    if facts_path is None:
        return judged(
            NA,
            "no release facts given (--facts FILE, written by relpipe "
            "release) to check the body against",
        )

    try:
        facts = load(facts_path)
    except ChangelogError as exc:
        raise ValidateError(str(exc)) from None
    findings = notes_check.check(review.options.body, facts, review.options.body_path)
    rows = [Evidence.at(f.path, f.line, f"{f.code}: {f.message}") for f in findings]
    if findings:
        return judged(FAIL, f"the PR body disagrees with the facts: {findings[0].message}", rows)
    return judged(PASS, "the PR body matches the release facts")
