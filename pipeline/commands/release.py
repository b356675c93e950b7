"""`relpipe release`: pin a qualified image for a config key, append the changelog entry, write notes.

    relpipe release --config-key K [--config-key K2 ... | --line [--runner GPU]] --image REF [--dry-run]

One image for every key selected: each key's `image:` line bumped, one changelog entry naming
every key, one bilingual notes pair (a section per old -> new engine pair), one verdict (a key
that fails fails the release, named). The image is qualified once (its stages are cached by
digest) plus each key's points. Refuses when a qualification or the release's own checks (C7
changelog entry, C8 notes, C9 golden AL) FAIL; nothing is written then. Only the config lines and
the changelog change in the repository: pins and facts live in relpipe's state. `--dry-run`
prints the diff and writes nothing under the checkout. An image whose current digest the keys
already pin is "nothing to do" (exit 0, one line), however an earlier run was interrupted.
"""  # noqa: E501 - line 1 is the --help description (parser() reads only the first line)

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...core import checkrender, jsonload, sanitize
from ...images.options import add_registry_args, apply_registry_args
from ..errors import PipelineError
from ..release import DEFAULT_REPO_URL, AlreadyReleased, Request, release
from ..run import add_qualify_args, options_from, workspace_from
from ..selection import select
from .parser import parser


def main(argv: Sequence[str] | None = None) -> int:

    p = parser("relpipe release", __doc__)
    rel = p.add_argument_group("the release")
    rel.add_argument("--image", metavar="REF", required=True, help="image to release (a tag)")
    rel.add_argument(
        "--pr-number",
        metavar="N",
        type=int,
        default=None,
        help="PR number for the entry's pr-link (default: none, written as /pull/XXX)",
    )
    rel.add_argument(
        "--repo-url",
        metavar="URL",
        default=None,
        help="benchmark repository URL (default: the repository's identity: .relpipe.toml's "
        "`repository`, the `upstream` remote, the links of its own changelog; never a fork's "
        f"origin; else {DEFAULT_REPO_URL})",
    )
    rel.add_argument(
        "--description",
        metavar="TEXT",
        action="append",
        default=[],
        help="extra perf-changelog description line, repeatable",
    )
    rel.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    add_qualify_args(p, release=True, keys=True)
    add_registry_args(p)
    args = p.parse_args(argv)
    apply_registry_args(args)
    ws = workspace_from(args)
    if ws is None:
        raise PipelineError(
            f"{Path.cwd()} is not a benchmark repository of a known layout; pass --repo PATH"
        )
    keys = select(ws, args.config_keys, line=args.line, runners=args.runners)
    req = Request(
        config_keys=keys,
        image=args.image,
        pr_number=args.pr_number,
        descriptions=tuple(args.description),
        repo_url=args.repo_url or ws.repository_url(DEFAULT_REPO_URL),
        dry_run=args.dry_run,
        strict=args.strict,
    )
    result = release(ws, req, options_from(args), args.state)
    if isinstance(result, AlreadyReleased):  # idempotent: the same key and digest, released
        if args.json:
            print(sanitize.json_text({"release": {"written": False, "nothing_to_do": result.line}}))
        else:
            print(sanitize.terminal(result.line, limit=1000))
        return 0
    if args.json:
        # One JSON document: the release report, plus what was (or, dry, would be) written.
        document = jsonload.loads(result.reports["report.json"].read_text())
        document["release"] = {
            "written": result.written,
            "dry_run": args.dry_run,
            "diff": result.diff,
            "notes": str(result.record.root / "notes.md"),
            "keys": [
                {
                    "key": k.key,
                    "verdict": k.verdict.overall.value,
                    "run": k.qualification.plan.run_id,
                    "ran": list(k.qualification.ran),
                    "cached": list(k.qualification.cached),
                    "report": str(k.reports["report.json"]),
                }
                for k in result.keys
            ],
        }
        print(sanitize.json_text(document, indent=2, sort_keys=True))
    else:
        if args.dry_run:
            print(result.diff, end="")
        for check in result.verdict.checks:
            print(checkrender.text_line(check))
        state = "written" if result.written else "dry run, nothing written"
        print(f"release verdict: {result.verdict.overall} ({state})")
        print(f"notes: {result.record.root / 'notes.md'}")
        print(f"report: {result.reports['report.html']}")
    return result.verdict.exit_code
