"""`relpipe review`: the benchmark repository's review checklist as deterministic checks.

Over a change (`--base-ref A --head-ref B`; default: the merge-base with the upstream branch and
the working tree) or over config keys (`--config-key K ...`, `--all-keys`) of any
InferenceX-layout repository (`--repo PATH`, default the current directory). Prints Markdown to
paste as a PR comment, one JSON document with `--json`, or one HTML page with `--html`. Exit 0
PASS/WARN/N/A, 1 FAIL (or WARN with --strict), 2 usage or input error, 3 unexpected error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ...core import checkrender, sanitize
from ...core.check import Check
from ...core.files import read_capped
from ...core.status import FAIL, WARN
from ...validate.review.context import Options
from ...validate.review.run import CHECKS, FAST, run
from ..errors import PipelineError
from .parser import Parser

MAX_TEXT_INPUT = 1024 * 1024


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="relpipe review", description=(__doc__ or "").split("\n\n")[0])
    where = p.add_argument_group("what to review")
    where.add_argument("--repo", metavar="PATH", default=".", help="InferenceX-layout checkout")
    where.add_argument(
        "--base-ref",
        metavar="REV",
        help="base of the change (default: merge-base with the upstream branch, else HEAD)",
    )
    where.add_argument(
        "--head-ref", metavar="REV", help="head of the change (default: the working tree)"
    )
    where.add_argument(
        "--config-key",
        metavar="KEY",
        nargs="+",
        action="extend",
        default=[],
        help="review these config keys (`*` globs) instead of a change",
    )
    where.add_argument("--all-keys", action="store_true", help="review every config key")
    which = p.add_argument_group("which checks")
    which.add_argument(
        "--check",
        metavar="ID",
        action="append",
        default=[],
        choices=CHECKS.ids(),
        help=f"run only these ({', '.join(CHECKS.ids())})",
    )
    which.add_argument(
        "--fast",
        action="store_true",
        help=f"only the checks the commit hook runs ({', '.join(FAST)})",
    )
    inputs = p.add_argument_group("artifacts (checks that need one are N/A without it)")
    inputs.add_argument("--signoff", metavar="FILE", help="the reviewer's sign-off comment")
    inputs.add_argument("--body", metavar="FILE", help="the PR body")
    inputs.add_argument("--facts", metavar="FILE", help="release facts JSON for --body")
    inputs.add_argument("--results", metavar="DIR", help="benchmark results (agg_*.json)")
    inputs.add_argument("--pr", metavar="N", type=int, help="PR number (docs/waiver/<N>.md)")
    inputs.add_argument(
        "--new-hardware",
        metavar="SKU",
        nargs="+",
        action="extend",
        default=None,
        help="hardware with the upstream-image exception "
        "(default: mi455x vr200 rubin, the checklist's examples)",
    )
    out = p.add_argument_group("output (default: Markdown for a PR comment)")
    fmt = out.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON document")
    fmt.add_argument("--html", action="store_true", help="one HTML page (every evidence row)")
    out.add_argument("--strict", action="store_true", help="WARN exits 1")
    return p


def _read(path: str | None, what: str) -> str | None:
    if path is None:
        return None
    raw = read_capped(path, MAX_TEXT_INPUT, what, error=PipelineError)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PipelineError(f"{what} {path} is not UTF-8 text") from None


def render_markdown(checks: Sequence[Check], scope: str) -> str:
    """The PR comment: a summary table, then each check's evidence (untrusted text escaped)."""
    lines = [
        f"### relpipe review: {checkrender.status_of(checks)}",
        "",
        sanitize.markdown(scope, limit=None),
        "",
        *checkrender.markdown_table(checks, checkrender.REVIEW),
    ]
    for check in checks:
        if check.evidence:
            lines += ["", *checkrender.markdown_evidence(check, checkrender.REVIEW)]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.all_keys and args.config_key:
        raise PipelineError("give --config-key or --all-keys, not both")
    checks = list(dict.fromkeys(args.check)) or (list(FAST) if args.fast else [])
    options = Options(
        signoff=_read(args.signoff, "sign-off"),
        signoff_path=args.signoff or "sign-off",
        body=_read(args.body, "PR body"),
        body_path=args.body or "PR body",
        facts=Path(args.facts) if args.facts else None,
        results=Path(args.results) if args.results else None,
        pr=args.pr,
        new_hardware=(
            tuple(h.lower() for h in args.new_hardware)
            if args.new_hardware
            else Options.new_hardware
        ),
    )
    results = run(
        Path(args.repo),
        keys=args.config_key,
        all_keys=args.all_keys,
        base_ref=args.base_ref,
        head_ref=args.head_ref,
        checks=checks,
        options=options,
    )
    if args.all_keys:
        scope = "scope: every config key"
    elif args.config_key:
        scope = f"scope: config keys {' '.join(args.config_key)}"
    else:
        scope = f"scope: change {args.base_ref or 'merge-base'}..{args.head_ref or 'working tree'}"
    if args.json:
        print(sanitize.json_text(checkrender.document(results, scope=scope), indent=2))
    elif args.html:
        sys.stdout.write(checkrender.render_page(results, title="relpipe review", intro=scope))
    else:
        sys.stdout.write(render_markdown(results, scope))
    status = checkrender.status_of(results)
    return 1 if status == FAIL or (args.strict and status == WARN) else 0
