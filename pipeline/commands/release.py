"""`relpipe release`: pin a qualified image for a config key, append the changelog entry, write notes.

    relpipe release --config-key K --image REF [--pr-number N] [--description TEXT ...] [--dry-run]

Refuses when the image's qualification (re-run; normally a cache hit) or the release's own checks
(C7 changelog entry, C8 notes, C9 golden AL) FAIL; nothing is written then. `--dry-run` prints the
diff of config, lock and changelog without writing.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.run import add_qualify_args, options_from, workspace_from


def main(argv: Sequence[str] | None = None) -> int:
    from relpipe.pipeline.release import DEFAULT_REPO_URL, Request, release

    p = argparse.ArgumentParser(prog="relpipe release", description=__doc__.splitlines()[0])
    p.add_argument("--image", required=True, help="image reference to release (tag)")
    p.add_argument("--pr-number", type=int, default=None, help="PR number for the entry's pr-link")
    p.add_argument(
        "--repo-url", default=DEFAULT_REPO_URL, help="benchmark repository URL for pr-link"
    )
    p.add_argument(
        "--description", action="append", default=[], help="extra description line (repeat)"
    )
    p.add_argument("--dry-run", action="store_true", help="show the diff, write nothing")
    add_qualify_args(p)
    args = p.parse_args(argv)
    if not args.config_key:
        raise PipelineError("release needs --config-key K")
    if args.baseline not in (None, "pinned"):
        raise PipelineError(
            "release always diffs against the config key's pinned image; drop --baseline"
        )
    ws = workspace_from(args)
    if ws is None:
        raise PipelineError(
            f"{Path.cwd()} is not a benchmark repository (no configs/); pass --repo PATH"
        )
    req = Request(
        config_key=args.config_key,
        image=args.image,
        pr_number=args.pr_number,
        descriptions=tuple(args.description),
        repo_url=args.repo_url,
        dry_run=args.dry_run,
        strict=args.strict,
    )
    result = release(ws, req, options_from(args), args.state)
    if args.json:
        print(result.reports["report.json"].read_text(), end="")
    else:
        if args.dry_run:
            print(result.diff, end="")
        for check in result.verdict.checks:
            print(f"{check.id:<4} {check.status:<4}  {check.title}: {check.reason}")
        state = "written" if result.written else "dry run, nothing written"
        print(f"release verdict: {result.verdict.overall} ({state})")
        print(f"notes: {result.record.root / 'notes.md'}")
        print(f"report: {result.reports['report.html']}")
    if args.json and args.dry_run:
        print(json.dumps({"diff": result.diff}))
    return result.verdict.exit_code
