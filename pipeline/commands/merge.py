"""`relpipe merge PLAN_DIR SHARD_DIR... --out DIR`: shard records into one verdict and reports."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..run import print_result
from ..shard import merge
from .parser import parser


def main(argv: Sequence[str] | None = None) -> int:

    p = parser("relpipe merge", __doc__)
    p.add_argument(
        "plan",
        metavar="PLAN_DIR",
        type=Path,
        help="plan folder written by `relpipe qualify --plan`",
    )
    p.add_argument("shards", metavar="SHARD_DIR", type=Path, nargs="+", help="shard records")
    p.add_argument(
        "--out", metavar="DIR", type=Path, required=True, help="merged run record folder"
    )
    out = p.add_argument_group("output")
    out.add_argument("--strict", action="store_true", help="WARN fails too (exit 1)")
    out.add_argument("--json", action="store_true", help="print one JSON document (the report)")
    args = p.parse_args(argv)
    return print_result(merge(args.plan, list(args.shards), args.out, args.strict), args.json)
