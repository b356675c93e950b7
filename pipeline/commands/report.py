"""`relpipe report RUN_DIR`: re-render a run or release record's reports (byte-identical)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..release import rerender_release
from ..run import print_result, rerender
from ..runrecord import RunRecord
from .parser import parser


def main(argv: Sequence[str] | None = None) -> int:

    p = parser("relpipe report", __doc__)
    p.add_argument(
        "run",
        metavar="RUN_DIR",
        type=Path,
        help="run record folder (.relpipe/runs/ID or .relpipe/releases/ID)",
    )
    out = p.add_argument_group("output")
    out.add_argument("--strict", action="store_true", help="WARN fails too (exit 1)")
    out.add_argument("--json", action="store_true", help="print one JSON document (the report)")
    args = p.parse_args(argv)
    if (args.run / "run.json").is_file() and RunRecord(args.run).inputs().get("kind") == "release":
        verdict, reports = rerender_release(args.run, args.strict)
        if args.json:
            print(reports["report.json"].read_text(), end="")
        else:
            print(f"verdict: {verdict.overall}\nreport: {reports['report.html']}")
        return verdict.exit_code
    return print_result(rerender(args.run, args.strict), args.json)
