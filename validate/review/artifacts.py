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

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any

import re2

from relpipe.changelog.configs.load import MasterConfigs, load_yaml, resolve_key
from relpipe.changelog.configs.points import plan_key
from relpipe.changelog.errors import ChangelogError
from relpipe.core import jsonload
from relpipe.core.check import Evidence, Judgement, judged
from relpipe.core.status import FAIL, NA, PASS, WARN
from relpipe.validate.errors import ValidateError
from relpipe.validate.review.context import Review, plural
from relpipe.validate.review.scope import Masters, load_masters, scope_key

_CLAIM = re2.compile(r"\s*(?:-\s+)?append-only:\s*true\b")
MIN_FRONTIER = 5
MAX_RESULT_FILES = 20_000
MAX_RESULT_BYTES = 1024 * 1024


def check_golden(review: Review) -> Judgement:
    """`golden_al.check` (C2's scoped check: K from recipes and launch scripts) for the keys."""
    from relpipe.validate import golden_al

    if not review.scopes:
        return judged(NA, "no config key in scope")
    if review.source.ref is not None:
        return judged(NA, "golden-al reads the working tree; review the head checked out")
    golden = review.source.layout.golden
    if not (review.source.root / golden).is_dir():
        return judged(NA, f"no {golden}/ in the repository")
    root = review.source.root
    masters = MasterConfigs(  # the masters the review loaded: not parsed a second time
        configs=review.masters.configs,
        origin={k: root / w[0] for k, w in review.masters.where.items()},
    )
    settings = golden_al.check(root, [s.key for s in review.scopes], masters)
    rows: list[Evidence] = []
    counts: dict[str, int] = {PASS: 0, WARN: 0, FAIL: 0, NA: 0}
    order: dict[str, int] = {FAIL: 0, WARN: 1, PASS: 2, NA: 3}
    for st in sorted(settings, key=lambda x: order.get(x.verdict, 1)):
        if st.verdict in (NA, PASS) and st.reason.startswith(golden_al.NO_TARGET):
            # The checklist requires the golden value for agentic spec-decode workloads: FAIL
            # when no synthetic-acceptance setting is written anywhere in the key's launch path,
            # WARN when one is written but its value is not resolved (e.g. a printf format).
            if _synthetic_written(review, st.key):
                st = dataclasses.replace(
                    st, verdict=WARN, reason=f"{st.reason} (a synthetic setting is not resolved)"
                )
            else:
                st = dataclasses.replace(
                    st, verdict=FAIL, reason=f"{st.reason} (no synthetic target)"
                )
        counts[st.verdict if st.verdict in counts else WARN] += 1
        k = f"K={st.k} ({st.k_source})" if st.k is not None else "K unknown"
        rows.append(
            Evidence.at(
                st.path,
                st.line,
                f"{st.verdict} {st.key}: {st.engine} {k}, configured {st.configured}, golden "
                f"{st.golden} ({st.golden_file or '-'}, {st.thinking}): {st.reason}",
            )
        )
    if counts[FAIL]:
        first = next(r for r in rows if r.what.startswith(FAIL))
        return judged(
            FAIL,
            f"acceptance length differs from the golden value at "
            f"{first.where} (+{counts[FAIL] - 1} more)"
            if counts[FAIL] > 1
            else f"acceptance length differs from the golden value at {first.where}",
            rows,
        )
    if counts[WARN]:
        return judged(WARN, f"{plural(counts[WARN], 'setting')} cannot be checked", rows)
    if not counts[PASS]:
        return judged(NA, "no forced acceptance length in the keys' launch paths", rows)
    return judged(PASS, f"{plural(counts[PASS], 'setting')} equal the golden AL", rows)


_SYNTHETIC = re2.compile(
    r"(?i)synthetic[-_]accept|SIMULATE_ACC_LEN|FORCE_NUM_ACCEPTED|SYNTHETIC_ACCEPT"
)


def _synthetic_written(review: Review, key: str) -> bool:
    scope = next((s for s in review.scopes if s.key == key), None)
    paths = [u.path for u in scope.files] if scope else []
    return any(_SYNTHETIC.search(review.source.text(p) or "") for p in paths)


def appended(review: Review) -> tuple[list[Mapping[str, Any]], str | None]:
    """New changelog entries of the change (head minus base), or why they cannot be read."""
    assert review.base_source is not None
    changelog = review.source.layout.changelog
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
        lines = review.source.lines(review.source.layout.changelog)
        touched = review.change.lines.get(review.source.layout.changelog, frozenset())
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
        used_before = use.role != "recipe" or use.path.split("srt-slurm-recipes/", 1)[-1] in text
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
    files = 0
    for path in sorted(folder.rglob("*.json")):
        files += 1
        if files > MAX_RESULT_FILES:
            rows.append(Evidence(str(folder), f"more than {MAX_RESULT_FILES} files; rest skipped"))
            break
        if path.is_symlink() or not path.is_file():
            rows.append(Evidence(path.name, "not a regular file; skipped"))
            continue
        try:
            with open(path, "rb") as handle:
                raw = handle.read(MAX_RESULT_BYTES + 1)
            if len(raw) > MAX_RESULT_BYTES:
                raise ValueError(f"over {MAX_RESULT_BYTES} bytes")
            data = jsonload.loads(raw)
        except (OSError, ValueError) as exc:
            rows.append(Evidence(path.name, f"unreadable result ({exc}); skipped"))
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
    from relpipe.changelog.notes.facts import load
    from relpipe.validate import notes_check

    try:
        facts = load(facts_path)
    except ChangelogError as exc:
        raise ValidateError(str(exc)) from None
    findings = notes_check.check(review.options.body, facts, review.options.body_path)
    rows = [Evidence.at(f.path, f.line, f"{f.code}: {f.message}") for f in findings]
    if findings:
        return judged(FAIL, f"the PR body disagrees with the facts: {findings[0].message}", rows)
    return judged(PASS, "the PR body matches the release facts")
