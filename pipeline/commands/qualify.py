"""`relpipe qualify`: qualify one image (probe, smoke, evals, precision diff) and print the verdict.

relpipe qualify REF [--baseline REF|pinned|none] [--config-key K] [--out DIR] [--json] [--strict]
relpipe qualify REF ... --plan --shards N --out PLAN_DIR      # pin once, print the shard matrix
relpipe qualify --from-plan PLAN_DIR --shard i/N --out SHARD_DIR
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ...core import sanitize
from ...images.options import add_registry_args, apply_registry_args
from .. import shard as sharding
from ..errors import PipelineError
from ..run import (
    add_qualify_args,
    baseline_from,
    options_from,
    plan_run,
    print_result,
    qualify,
    workspace_from,
)
from .parser import parser as new_parser


def add_args(p: argparse.ArgumentParser) -> None:
    """Options shared with `relpipe nightly` (which only adds how the image is found)."""
    add_qualify_args(p)
    add_registry_args(p)
    rec = p.add_argument_group("run record and sharding")
    rec.add_argument(
        "--out",
        metavar="DIR",
        type=Path,
        default=None,
        help="run record folder (default: STATE/runs/ID)",
    )
    rec.add_argument(
        "--plan", action="store_true", help="write the plan to --out and print the shard matrix"
    )
    rec.add_argument("--shards", metavar="N", type=int, default=1, help="shards for --plan")


def parser() -> argparse.ArgumentParser:
    p = new_parser("relpipe qualify", __doc__)
    p.add_argument("ref", metavar="REF", nargs="?", help="image reference (tag or digest)")
    add_args(p)
    shard = p.add_argument_group("running one shard of a plan")
    shard.add_argument(
        "--from-plan", metavar="PLAN_DIR", type=Path, default=None, help="written by --plan"
    )
    shard.add_argument(
        "--shard", metavar="I/N", default=None, help="run shard I of N (1-based), with --from-plan"
    )
    return p


def dispatch(args: argparse.Namespace, ref: str) -> int:
    """Qualify `ref` (or, with --plan, pin it and write the shard plan); returns the exit code."""

    ws = workspace_from(args)
    options = options_from(args)
    if args.plan:
        if args.out is None:
            raise PipelineError("--plan needs --out PLAN_DIR (the folder the shard jobs read)")
        plan = plan_run(ref, baseline_from(args), args.config_key, ws, options, args.state)
        print(sanitize.json_text(sharding.write_plan(plan, args.out, args.shards), sort_keys=True))
        return 0
    result = qualify(
        ref,
        baseline=baseline_from(args),
        config_key=args.config_key,
        ws=ws,
        options=options,
        state=args.state,
        out=args.out,
        strict=args.strict,
    )
    return print_result(result, args.json)


def main(argv: Sequence[str] | None = None) -> int:

    args = parser().parse_args(argv)
    apply_registry_args(args)
    if args.from_plan is not None:
        if args.shard is None or args.out is None:
            raise PipelineError("--from-plan needs --shard i/n and --out SHARD_DIR")
        ws = workspace_from(args)
        part = sharding.parse_shard(args.shard)
        result = sharding.run_shard(args.from_plan, part, args.out, str(ws.root) if ws else None)
        summary = f"{len(result.ran)} stage(s) ran, {len(result.cached)} cached -> {args.out}"
        print(f"shard {args.shard}: {summary}", file=sys.stderr)
        if args.json:  # a shard has no verdict (merge computes it): its record, as one document
            shard_doc = {
                "shard": args.shard,
                "run": result.plan.run_id,
                "record": str(args.out),
                "ran": list(result.ran),
                "cached": list(result.cached),
            }
            print(sanitize.json_text(shard_doc, indent=2, sort_keys=True))
        return 0
    if not args.ref:
        raise PipelineError("qualify needs an image REF (or --from-plan DIR --shard i/n)")
    return dispatch(args, args.ref)
