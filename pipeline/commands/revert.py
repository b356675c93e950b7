"""`relpipe revert`: restore a config key's previous pinned image, append why, and open the PR.

    relpipe revert --config-key K --reason TEXT --github-repo OWNER/NAME [--to IMAGE] [--dry-run]

The previous image is the one pinned before the current one in images.lock.yaml (which keeps
every pinned image), or --to IMAGE (which must be in the lock). The config edit and the appended
perf-changelog entry are written in the working tree (never a deleted entry: the gate rejects
that), then published as `relpipe pr open` publishes a release, on the branch relpipe/revert/KEY.
--dry-run writes the working tree but sends nothing: it prints the PR's requests.
"""

from __future__ import annotations

from collections.abc import Sequence

from relpipe.pipeline.commands.parser import parser
from relpipe.pipeline.commands.pr import add_target_args, publish_and_report, target_from


def main(argv: Sequence[str] | None = None) -> int:
    from dataclasses import replace

    from relpipe.pipeline import revert
    from relpipe.pipeline.pullrequest import read_bump
    from relpipe.pipeline.workspace import Workspace

    p = parser("relpipe revert", __doc__)
    p.add_argument("--config-key", metavar="KEY", required=True, help="config key to revert")
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
    add_target_args(
        p,
        branch="relpipe/revert/KEY",
        dry_run="write the revert in the working tree, print the PR's requests, send nothing",
    )
    args = p.parse_args(argv)
    target = target_from(args)
    if not args.branch:
        target = replace(target, branch=f"relpipe/revert/{args.config_key}")
    ws = Workspace(target.root)
    rev = revert.plan_revert(ws, args.config_key, args.to, args.reason)
    revert.write_revert(ws, rev, target.repo_url)
    title, body = revert.title_and_body(rev)
    bump = read_bump(target.root, args.config_key, title, body)
    mode = "open"
    return publish_and_report(target, bump, mode, args.dry_run, args.json)
