"""`relpipe revert`: restore config keys' previous pinned images, append why, and open the PR.

    relpipe revert --config-key K [--config-key K2 ... | --line] --reason TEXT --github-repo OWNER/NAME [--to IMAGE] [--dry-run]

The previous image of each key is the one of its repository created last before its current one
among relpipe's pins (its state, `pipeline.pins`, compared as instants), or --to IMAGE (which must
be pinned). The config edits and one appended perf-changelog entry naming every key are written in
the working tree (never a deleted entry: the gate rejects that), then published as `relpipe pr
open` publishes a release, on the branch relpipe/revert/KEY. --dry-run writes nothing: it prints
the diff and the PR's requests.
"""  # noqa: E501 - line 1 is the --help description (parser() reads only the first line)

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from .. import pins, revert
from ..pullrequest import BRANCH_REVERT, Bump, branch_for, read_bump
from ..run import add_selection_args, state_dir
from ..selection import field_warnings, select
from ..workspace import Workspace
from .parser import parser
from .pr import add_target_args, publish_and_report, target_from


def main(argv: Sequence[str] | None = None) -> int:
    p = parser("relpipe revert", __doc__)
    add_selection_args(p.add_argument_group("the keys to revert"))
    p.add_argument(
        "--to",
        metavar="IMAGE",
        default=None,
        help="image to restore (default: the one pinned before)",
    )
    p.add_argument(
        "--reason",
        metavar="TEXT",
        required=True,
        help="why, one line (goes into the changelog entry)",
    )
    p.add_argument(
        "--state",
        metavar="DIR",
        type=Path,
        default=None,
        help="relpipe state folder, where the pins are (default: $RELPIPE_STATE, else "
        "REPO/.relpipe)",
    )
    add_target_args(
        p,
        branch="relpipe/revert/KEY",
        dry_run="print the diff and the PR's requests; write and send nothing",
    )
    args = p.parse_args(argv)
    target = target_from(args)
    ws = Workspace(target.root)
    keys = select(ws, args.config_keys, line=args.line, runners=args.runners)
    for warning in field_warnings(ws, keys):
        print(f"relpipe revert: {warning}", file=sys.stderr)
    if not args.branch:
        target = replace(target, branch=branch_for(keys, BRANCH_REVERT))
    pinned = pins.load(ws, state_dir(ws, args.state))
    reverts = [revert.plan_revert(ws, key, args.to, args.reason, pinned) for key in keys]
    changes, entry = revert.revert_edits(ws, reverts, target.repo_url)
    title, body = revert.title_and_body(reverts)
    if args.dry_run:
        print(revert.diff_of(changes), end="")
        bump = Bump(config_keys=keys, patch=b"", entries=(entry,), title=title, body=body)
    else:
        revert.write_revert(ws, changes)
        bump = read_bump(target.root, keys, title, body)
    return publish_and_report(target, bump, "open", args.dry_run, args.json)
