"""`relpipe history ingest|regressions`: the results history and per-point regressions against it.

`ingest PATH...` reads ATOM dashboards (`data.js`), InferenceX raw / agg_ / AgentX / eval files
(files or folders) into the store; a file it cannot use is one line on stderr and exit 1.
`regressions` compares, per series, point and metric, the newest image with the previous one
(`--every`: every image change in order) against the noise band learned from repeated runs of the
same image; exit 1 when it finds a regression, failure or a score below its threshold.

The store: `--history URL_OR_PATH`, else $RELPIPE_HISTORY, else `REPO/.relpipe/history.sqlite`;
a `postgresql://` URL needs `pip install 'relpipe[history]'`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from relpipe.changelog.results import ingest, regressions, store
from relpipe.core import jsoncodec, sanitize
from relpipe.pipeline.commands.parser import Parser, parser


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
    i = sub.add_parser("ingest", parents=[common], help="read result files into the history")
    i.add_argument("paths", nargs="+", metavar="PATH", help="result file or folder")
    r = sub.add_parser("regressions", parents=[common], help="per-point regressions vs history")
    r.add_argument("--series", action="append", default=[], metavar="KEY", help="only this series")
    r.add_argument("--every", action="store_true", help="judge every image change, not the newest")
    r.add_argument(
        "--all-points", action="store_true", help="also points within noise or without a baseline"
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    url = store.locate(args.history, Path(args.repo))
    with store.open_store(url) as db:
        if args.action == "ingest":
            return _ingest(db, args.paths, as_json=args.json)
        return _regressions(db, args)


def _ingest(db: store.Store, paths: Sequence[str], *, as_json: bool) -> int:
    got = ingest.ingest(paths)
    added = db.add(got.samples)
    by_status: dict[str, int] = {}
    for s in got.samples:
        by_status[s.status] = by_status.get(s.status, 0) + 1
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


def _regressions(db: store.Store, args: argparse.Namespace) -> int:
    findings = regressions.compare(
        db.measurements(series=args.series), every=args.every, all_points=args.all_points
    )
    bad = [
        f
        for f in findings
        if f.kind in (regressions.REGRESSION, regressions.FAILED_KIND, regressions.BELOW)
    ]
    if args.json:
        doc = {"store": db.where, "findings": [jsoncodec.to_json(f) for f in findings]}
        print(sanitize.json_text(doc, indent=2, sort_keys=True))
    else:
        for f in findings:
            print(sanitize.terminal(_line(f), limit=600))
        print(f"{len(findings)} findings, {len(bad)} regressions/failures in {db.where}")
    return 1 if bad else 0


def _line(f: regressions.PointChange) -> str:
    def num(v: float | None) -> str:
        return "-" if v is None else f"{v:.4g}"

    change = "" if f.change is None else f" ({f.change:+.1%})"
    band = "" if f.band is None else f" band {f.band:.3g} ({f.band_source})"
    note = f"; {f.note}" if f.note else ""
    return (
        f"{f.kind}: {f.series} | {f.point} | {f.metric}: {f.old_image or '-'} {num(f.old_value)} "
        f"-> {f.new_image} {num(f.new_value)}{change}{band}{note}"
    )
