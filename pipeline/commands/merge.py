"""`relpipe merge PLAN_DIR SHARD_DIR... --out DIR`: combine shard records into one verdict and reports."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from relpipe.pipeline.run import print_result


def main(argv: Sequence[str] | None = None) -> int:
    from relpipe.pipeline.shard import merge

    p = argparse.ArgumentParser(prog="relpipe merge", description=__doc__.splitlines()[0])
    p.add_argument("plan", type=Path, help="plan folder written by `relpipe qualify --plan`")
    p.add_argument("shards", type=Path, nargs="+", help="shard record folders")
    p.add_argument("--out", type=Path, required=True, help="merged run record folder")
    p.add_argument("--strict", action="store_true", help="WARN fails too (exit 1)")
    p.add_argument("--json", action="store_true", help="print the report JSON")
    args = p.parse_args(argv)
    return print_result(merge(args.plan, list(args.shards), args.out, args.strict), args.json)
