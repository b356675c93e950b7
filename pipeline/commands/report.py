"""`relpipe report RUN_DIR`: re-render a run or release record's reports (byte-identical to the first render)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from relpipe.pipeline.record import RunRecord
from relpipe.pipeline.run import print_result, rerender


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="relpipe report", description=__doc__.splitlines()[0])
    p.add_argument(
        "run", type=Path, help="run record folder (.relpipe/runs/ID or .relpipe/releases/ID)"
    )
    p.add_argument("--strict", action="store_true", help="WARN fails too (exit 1)")
    p.add_argument("--json", action="store_true", help="print the report JSON")
    args = p.parse_args(argv)
    if (args.run / "run.json").is_file() and RunRecord(args.run).inputs().get("kind") == "release":
        from relpipe.pipeline.release import rerender_release

        verdict, reports = rerender_release(args.run, args.strict)
        if args.json:
            print(reports["report.json"].read_text(), end="")
        else:
            print(f"verdict: {verdict.overall}\nreport: {reports['report.html']}")
        return verdict.exit_code
    return print_result(rerender(args.run, args.strict), args.json)
