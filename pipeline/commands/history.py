"""`relpipe history ingest|regressions|series|report`: the results store and what it says.

`ingest PATH...` reads ATOM dashboards (`data.js`), InferenceX raw / agg_ / AgentX / eval files and
relpipe's own reports (files or folders) into the store; it is the only action that creates one. A
file it cannot use is one line on stderr and exit 1. `regressions` judges, per series, point and
metric, the newest run (image and engine commit) against the one before it (`--every`: every change
in order) with noise bands learned from the whole store (`--series` chooses what is printed, not
what is learned): a table per series, units on every value, missing points summarised per run, and
with `--engine-repo` the engine commits between the last good and the first bad run, ranked for
the series' model; exit 1 on a regression, failure or score below its threshold. `series` lists
what is stored. `report` writes a static HTML dashboard (inline SVG, no network).

The store: `--history URL_OR_PATH`, else $RELPIPE_HISTORY, else `REPO/.relpipe/history.sqlite`;
a `postgresql://` URL needs `pip install 'relpipe[history]'`.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...changelog.errors import ChangelogError
from ...changelog.results import ingest, regressions, store
from ...changelog.results.records import WORDS
from ...core import jsoncodec, sanitize
from ...core.files import write_atomic
from ...validate.precision import culprits
from .. import dashboard
from .parser import Parser, parser

# beside the default store (REPO/.relpipe/): a run's report.html links to it from runs/<id>/
DEFAULT_REPORT = store.DEFAULT_PATH.parent / "history-report.html"
KIND_ORDER = (
    regressions.REGRESSION,
    regressions.FAILED_KIND,
    regressions.BELOW,
    regressions.UNSTABLE,
    regressions.IMPROVEMENT,
    regressions.WITHIN,
    regressions.NO_BASELINE,
)


def _parser() -> argparse.ArgumentParser:
    p = parser("relpipe history", __doc__)
    sub = p.add_subparsers(dest="action", required=True, metavar="COMMAND")
    common = Parser(add_help=False)
    where = common.add_argument_group("store")
    where.add_argument(
        "--history",
        metavar="URL_OR_PATH",
        help=f"SQLite path or postgresql:// URL (default: ${store.HISTORY_ENV}, "
        f"else REPO/{store.DEFAULT_PATH})",
    )
    where.add_argument("--repo", metavar="PATH", default=".", help="benchmark repository")
    common.add_argument("--json", action="store_true", help="print one JSON document")
    i = sub.add_parser("ingest", parents=[common], help="read result files into the store")
    i.add_argument("paths", nargs="+", metavar="PATH", help="result file or folder")
    judged = Parser(add_help=False)
    judged.add_argument(
        "--series", action="append", default=[], metavar="NAME", help="only this series"
    )
    judged.add_argument(
        "--engine-repo",
        metavar="PATH",
        help="the engine's git history (a clone of ROCm/ATOM): name the commits between the last "
        "good and the first bad run of each regression",
    )
    r = sub.add_parser(
        "regressions", parents=[common, judged], help="per-point regressions vs the store"
    )
    r.add_argument("--every", action="store_true", help="judge every run change, not the newest")
    r.add_argument(
        "--all-points", action="store_true", help="also points within noise or without a baseline"
    )
    sub.add_parser("series", parents=[common], help="list the stored series")
    h = sub.add_parser("report", parents=[common, judged], help="write the HTML dashboard")
    h.add_argument("--out", metavar="FILE", help=f"HTML file (default: REPO/{DEFAULT_REPORT})")
    h.add_argument(
        "--title",
        metavar="TEXT",
        default="Results history",
        help="page title (default: %(default)s)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    url = store.locate(args.history, Path(args.repo))
    with store.open_store(url, create=args.action == "ingest") as db:
        if args.action == "ingest":
            return _ingest(db, args.paths, as_json=args.json)
        if args.action == "series":
            return _series(db, as_json=args.json)
        _check_series(db, args.series)
        if args.action == "report":
            return _report(db, args)
        return _regressions(db, args)


def _check_series(db: store.Store, wanted: Sequence[str]) -> None:
    """An unknown series is a usage error naming the close matches, never "0 findings"."""
    if not wanted:
        return
    known = [s.series for s in db.series()]
    for name in wanted:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ChangelogError(
                f"no series {name!r} in {db.where}{hint} (`relpipe history series` lists them)",
                exit_code=2,
            )


def _ingest(db: store.Store, paths: Sequence[str], *, as_json: bool) -> int:
    got = ingest.ingest(paths)
    added = db.add(got.samples)
    by_status: dict[str, int] = {}
    for s in got.samples:
        word = WORDS[s.status]  # the words ingest has always reported
        by_status[word] = by_status.get(word, 0) + 1
    if as_json:
        doc = {
            "store": db.where,
            "files": got.files,
            "samples": len(got.samples),
            "added": added,
            "status": by_status,
            "rejected": [{"source": r.source, "reason": r.reason} for r in got.rejected],
            "notes": got.notes,
        }
        print(sanitize.json_text(doc, indent=2, sort_keys=True))
    else:
        for line in got.notes:
            print(sanitize.terminal(line, limit=400), file=sys.stderr)
        for r in got.rejected:
            print(
                sanitize.terminal(f"{r.source}: not ingested: {r.reason}", limit=400),
                file=sys.stderr,
            )
        counts = ", ".join(f"{n} {k}" for k, n in sorted(by_status.items()))
        print(
            f"{got.files} files, {len(got.samples)} samples ({counts}); {added} new in {db.where}"
        )
    return 1 if got.rejected else 0


def _series(db: store.Store, *, as_json: bool) -> int:
    rows = db.series()
    if as_json:
        doc = {"store": db.where, "series": [jsoncodec.to_json(r) for r in rows]}
        print(sanitize.json_text(doc, indent=2, sort_keys=True))
        return 0
    table = [("series", "points", "metrics", "runs", "images", "samples", "first run", "last run")]
    table += [
        (r.series, str(r.points), str(r.metrics), str(r.runs), str(r.images), str(r.samples))
        + (_when(r.first_seq), _when(r.last_seq))
        for r in rows
    ]
    for line in _table(table):
        print(line)
    print(sanitize.terminal(f"{len(rows)} series in {db.where}"))
    return 0


def _when(ms: int) -> str:
    if ms <= 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")


def judge(
    db: store.Store, *, series: Sequence[str], every: bool, all_points: bool
) -> tuple[regressions.Runs, list[regressions.PointChange], list[regressions.MissingRun]]:
    """Findings of `series` (all when empty), learned from every row of the store."""
    rows = regressions.Runs(db.measurements())
    findings = regressions.compare(rows, every=every, all_points=all_points, series=series)
    return rows, findings, regressions.missing_runs(findings, rows)


def suspects_of(
    findings: Iterable[regressions.PointChange], repo: Path | None
) -> dict[tuple[str, str, str], culprits.Suspects]:
    """The culprit candidates of every bad finding, one precision diff per (series model, pair)."""
    out: dict[tuple[str, str, str], culprits.Suspects] = {}
    if repo is None:
        return out
    finder = culprits.Finder(repo)
    for f in findings:
        if f.kind not in regressions.BAD_KINDS:
            continue
        good, bad = f.good_bad
        key = (f.series, (good or ("", None))[1] or "", bad[1] or "")
        if key not in out:
            out[key] = finder.find(key[1] or None, key[2] or None, series=f.series)
    return out


def _suspects_for(
    f: regressions.PointChange, found: dict[tuple[str, str, str], culprits.Suspects]
) -> culprits.Suspects | None:
    good, bad = f.good_bad
    return found.get((f.series, (good or ("", None))[1] or "", bad[1] or ""))


def _regressions(db: store.Store, args: argparse.Namespace) -> int:
    _, findings, missing = judge(
        db, series=args.series, every=args.every, all_points=args.all_points
    )
    repo = Path(args.engine_repo) if args.engine_repo else None
    found = suspects_of(findings, repo)
    shown = [f for f in findings if f.kind != regressions.MISSING]
    bad = [f for f in shown if f.kind in regressions.BAD_KINDS]
    if args.json:
        doc = {
            "store": db.where,
            "findings": [_finding_json(f, _suspects_for(f, found)) for f in shown],
            "missing_runs": [jsoncodec.to_json(m) for m in missing],
            "counts": dict(Counter(f.kind for f in shown)),
        }
        print(sanitize.json_text(doc, indent=2, sort_keys=True))
    else:
        for line in render_text(shown, missing, found):
            print(line)
        print(sanitize.terminal(_summary(shown, missing, db.where)))
    return 1 if bad else 0


def _finding_json(f: regressions.PointChange, suspects: culprits.Suspects | None) -> dict[str, Any]:
    doc = jsoncodec.to_json(f)
    doc["band_unit"] = "score" if f.metric_kind == "accuracy" else "relative"
    good, bad = f.good_bad
    doc["last_good"] = list(good) if good else None
    doc["first_bad"] = list(bad)
    if suspects is not None:
        doc["culprits"] = jsoncodec.to_json(suspects)
    return doc


def _summary(shown: Sequence[regressions.PointChange], missing: Sequence[Any], where: str) -> str:
    counts = Counter(f.kind for f in shown)
    parts = [f"{counts[k]} {k}" for k in KIND_ORDER if counts[k]]
    holes = sum(m.missing for m in missing)
    gaps = f"; {holes} points missing in {len(missing)} runs" if missing else ""
    return f"{len(shown)} findings ({', '.join(parts) or 'none'}){gaps} in {where}"


def render_text(
    shown: Sequence[regressions.PointChange],
    missing: Sequence[regressions.MissingRun],
    found: dict[tuple[str, str, str], culprits.Suspects],
) -> list[str]:
    """A table per series and pair of runs (point, metric, old, new, change, band, verdict), the
    culprits under it, then the missing points per run."""
    groups: dict[tuple[str, str, str], list[regressions.PointChange]] = defaultdict(list)
    for f in shown:
        groups[(f.series, _run(f.old_image, f.old_commit), _run(f.new_image, f.new_commit))].append(
            f
        )
    lines: list[str] = []
    for (series, old, new), rows in groups.items():
        lines += ["", sanitize.terminal(f"{series}: {old} -> {new}", limit=400)]
        table: list[tuple[str, ...]] = [
            ("point", "metric", "old", "new", "change", "band", "verdict")
        ]
        table += [_row(f) for f in rows]
        lines += ["  " + line for line in _table(table)]
        lines += [
            "    " + sanitize.terminal(f"{f.point} {f.metric}: {f.note}", limit=400)
            for f in rows
            if f.note
        ]
        done: set[int] = set()
        for f in rows:
            suspects = _suspects_for(f, found)
            if suspects is not None and id(suspects) not in done:
                done.add(id(suspects))
                lines += ["  " + sanitize.terminal(x, limit=300) for x in _culprit_lines(suspects)]
    if missing:
        lines += ["", "missing points (partial runs; not failures):"]
        lines += [
            "  "
            + sanitize.terminal(
                f"{m.missing} of {m.of} points missing in run {m.run} "
                f"({m.series}, {_run(m.image, m.commit)})",
                limit=400,
            )
            for m in missing
        ]
    return lines


def _run(image: str | None, commit: str | None) -> str:
    if image is None:
        return "-"
    return f"{image} @{commit[:12]}" if commit else image


def _culprit_lines(s: culprits.Suspects) -> list[str]:
    head = f"engine commits {s.good[:12]}..{s.bad[:12]} for {s.model}"
    if s.reason:
        return [f"{head}: {s.reason}"]
    lines = [f"{head} ({len(s.culprits)}, most likely first):"]
    for c in s.culprits[:10]:
        where = f"on its path: {', '.join(c.on_path)}" if c.on_path else "nothing on its path"
        off = f"; elsewhere: {', '.join(c.elsewhere)}" if c.elsewhere else ""
        lines.append(f"- {c.sha[:12]} {c.subject[:90]} [{where}{off}]")
    if len(s.culprits) > 10:
        lines.append(f"- ... {len(s.culprits) - 10} more (--json lists every one)")
    return lines


def _row(f: regressions.PointChange) -> tuple[str, ...]:
    change = "-" if f.change is None else f"{f.change:+.1%}"
    return (
        f.point,
        f.metric,
        value_text(f.old_value, f.unit),
        value_text(f.new_value, f.unit),
        change,
        band_text(f),
        f.kind,
    )


def value_text(value: float | None, unit: str) -> str:
    """A value as people read it, with its unit: 12,934 tok/s, 0.847 fraction, 41.2 ms."""
    if value is None:
        return "-"
    size = abs(value)
    if size >= 1000:
        text = f"{value:,.0f}"
    elif size >= 100:
        text = f"{value:.1f}"
    else:
        text = f"{value:.4g}"
    return f"{text} {unit}" if unit else text


def band_text(f: regressions.PointChange) -> str:
    if f.band is None:
        return "-"
    if f.metric_kind == "accuracy":
        return f"±{f.band:.3f} score"
    return f"±{f.band:.1%}"


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Aligned columns; each cell made safe for a terminal on its own (never the padding)."""
    rows = [[sanitize.terminal(c, limit=200) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _report(db: store.Store, args: argparse.Namespace) -> int:
    rows, findings, missing = judge(db, series=args.series, every=True, all_points=False)
    repo = Path(args.engine_repo) if args.engine_repo else None
    found = suspects_of(findings, repo)
    page = dashboard.render(
        title=args.title,
        charts=regressions.charts(rows, series=args.series),
        findings=[f for f in findings if f.kind != regressions.MISSING],
        missing=missing,
        suspects={id(f): s for f in findings if (s := _suspects_for(f, found)) is not None},
    )
    out = Path(args.out) if args.out else Path(args.repo) / DEFAULT_REPORT
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, page.encode("utf-8"))
    print(f"wrote {out} ({len(page.encode('utf-8')):,} bytes)")
    return 0
