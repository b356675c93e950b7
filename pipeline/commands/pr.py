"""`relpipe pr`: open, update or inspect the bump pull request of a release (branch, push, GitHub).

    relpipe pr open   --config-key K --github-repo OWNER/NAME [--label L ...] [--dry-run]
    relpipe pr update --config-key K --github-repo OWNER/NAME [--open-missing]
    relpipe pr status --config-key K --github-repo OWNER/NAME [--json]

Run in the benchmark repository after `relpipe release` (or `relpipe revert`) wrote its changes:
they become one commit on the remote's current base, on the branch relpipe/bump/KEY, pushed with
--force-with-lease; the PR's title and bilingual body come from the release notes, with the
validation summary. `update` rewrites the branch, title and body of the open PR (a changelog entry
that main's moves made conflict is re-appended at the new end); a PR closed or merged by someone
else is never reopened or overwritten. Token: GITHUB_TOKEN, GH_TOKEN or gh's stored login, sent
only to --api-url. See docs/pr.md.
"""  # noqa: E501 - line 1 is the --help description (parser() reads only the first line)

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...core import jsoncodec, sanitize
from .. import pullrequest as prq
from ..errors import PipelineError
from ..github import DEADLINE_S, DEFAULT_API_URL
from ..pullrequest import (
    DEFAULT_LABELS,
    MODIFIER_LABELS,
    PRIMARY_LABELS,
    Target,
    canonical_repository,
    with_fork,
)
from ..run import add_selection_args, state_dir
from ..selection import field_warnings, select
from ..workspace import Workspace
from .parser import parser

if TYPE_CHECKING:
    import argparse

    from ..pullrequest import Bump, Outcome, Target

ACTIONS = ("open", "update", "status")
ACTION_HELP = {
    "open": "commit the release in the working tree, push its branch and open the PR",
    "update": "bring the open PR up to date after a newer release (branch, title, body)",
    "status": "the branch and the PR of a config key, read-only",
}
DRY_RUN_HELP = "print the git steps and REST requests, send nothing"


def add_target_args(
    p: argparse.ArgumentParser,
    *,
    branch: str = "relpipe/bump/KEY",
    dry_run: str | None = DRY_RUN_HELP,
) -> None:
    """Where the PR goes; shared by `relpipe pr` and `relpipe revert`. Without `dry_run` (the
    read-only `pr status`) there is no --label or --dry-run to offer."""

    g = p.add_argument_group("the pull request")
    g.add_argument(
        "--repo", metavar="PATH", type=Path, default=Path("."), help="benchmark repository clone"
    )
    g.add_argument(
        "--github-repo",
        metavar="OWNER/NAME",
        default=None,
        help="the canonical repository the PR is opened on (default: the `repository` the "
        "checkout's .relpipe.toml declares)",
    )
    g.add_argument(
        "--remote",
        default="origin",
        metavar="NAME",
        help="git remote of the canonical repository (when it is a fork of it, the branch is "
        "pushed there and the base fetched from the remote that is the canonical repository)",
    )
    g.add_argument(
        "--push-remote",
        default=None,
        metavar="NAME",
        help="git remote of your fork: the branch is pushed there and the PR's head is "
        "OWNER:BRANCH (default: detected, see --remote)",
    )
    g.add_argument(
        "--fork-owner",
        default=None,
        metavar="OWNER",
        help="owner of the fork (default: from the fork's URL, else the token's login)",
    )
    g.add_argument(
        "--base",
        default=None,
        metavar="BRANCH",
        help="base branch of the PR (default: the canonical repository's default branch)",
    )
    g.add_argument("--branch", default="", metavar="NAME", help=f"head branch (default: {branch})")
    g.add_argument("--api-url", default=DEFAULT_API_URL, metavar="URL", help="GitHub REST API URL")
    g.add_argument(
        "--api-deadline",
        type=float,
        default=DEADLINE_S,
        metavar="SECONDS",
        help="overall deadline of each GitHub request, retries and the whole answer included: "
        "a server that answers too slowly is cut off there (default: %(default)g)",
    )
    if dry_run is not None:
        g.add_argument(
            "--label",
            action="append",
            metavar="L",
            default=None,
            help=f"sweep label, repeatable: exactly one of {', '.join(PRIMARY_LABELS)}, plus "
            f"any of {', '.join(MODIFIER_LABELS)} (default: {', '.join(DEFAULT_LABELS)})",
        )
        g.add_argument("--dry-run", action="store_true", help=dry_run)
    g.add_argument("--json", action="store_true", help="print one JSON document")


def target_from(a: argparse.Namespace) -> Target:

    if not 0 < a.api_deadline <= 3600:
        raise PipelineError("--api-deadline: give seconds between 0 and 3600")
    root = a.repo.resolve()
    if not (root / ".git").exists():
        raise PipelineError(f"--repo {root}: not a git clone of the benchmark repository")
    repo = canonical_repository(root, a.github_repo)
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise PipelineError(f"--github-repo {repo!r}: write OWNER/NAME")
    return with_fork(
        Target(
            root=root,
            github_repo=repo,
            remote=a.remote,
            base=a.base,
            branch=a.branch,
            api_url=a.api_url,
            api_deadline_s=a.api_deadline,
            labels=tuple(getattr(a, "label", None) or DEFAULT_LABELS),
            push_remote=a.push_remote,
            fork_owner=a.fork_owner,
        )
    )


def report(outcome: Outcome, as_json: bool) -> None:
    out = jsoncodec.to_json(outcome)
    if as_json:
        print(sanitize.json_text(out, indent=2, sort_keys=True))
        return
    if out["action"] == "dry-run":
        print("\n\n".join(out["requests"]))
        print(f"\ndry run: nothing pushed or sent (branch {out['branch']})")
        return
    print(
        f"{out['action']} PR #{out['number']}: {out['url']} "
        f"(branch {out['branch']} at {out['commit'][:12]})"
    )


def _parser() -> argparse.ArgumentParser:
    """One sub-parser per action: `relpipe pr open --help` shows the options of `open`."""
    p = parser("relpipe pr", __doc__)
    sub = p.add_subparsers(dest="action", required=True, metavar="COMMAND")
    for action in ACTIONS:
        a = sub.add_parser(action, help=ACTION_HELP[action], description=ACTION_HELP[action])
        add_selection_args(a.add_argument_group("the keys of the bump"))
        if action != "status":
            a.add_argument(
                "--notes",
                metavar="FILE",
                type=Path,
                default=None,
                help="release notes (default: the newest release record of the key)",
            )
            a.add_argument(
                "--state",
                metavar="DIR",
                type=Path,
                default=None,
                help="relpipe state folder (default: $RELPIPE_STATE, else REPO/.relpipe)",
            )
        if action == "update":
            a.add_argument(
                "--open-missing", action="store_true", help="open the PR when none is open"
            )
        add_target_args(a, dry_run=None if action == "status" else DRY_RUN_HELP)
    return p


def main(argv: Sequence[str] | None = None) -> int:

    args = _parser().parse_args(argv)
    target = target_from(args)
    ws = Workspace(target.root)
    keys = select(ws, args.config_keys, line=args.line, runners=args.runners)
    for warning in field_warnings(ws, keys):
        print(f"relpipe pr: {warning}", file=sys.stderr)
    if args.action == "status":
        with prq.client_for(target) as client:
            st = prq.status(target, keys, client)
        doc = jsoncodec.to_json(st)
        if args.json:
            print(sanitize.json_text(doc, indent=2, sort_keys=True))
        else:
            pr = doc["pr"]
            print(f"branch {doc['branch']}: {doc['remote_commit'] or 'not pushed'}")
            print(f"PR: #{pr['number']} {pr['state']} {pr['url']}" if pr else "PR: none")
        return 0
    notes = args.notes or prq.release_notes(state_dir(Workspace(target.root), args.state), keys)
    title, body = prq.title_and_body(notes)
    bump = prq.read_bump(target.root, keys, title, body)
    prq.check_notes(target.root, bump, notes)
    mode = "sync" if getattr(args, "open_missing", False) else args.action
    return publish_and_report(target, bump, mode, args.dry_run, args.json)


def publish_and_report(target: Target, bump: Bump, mode: str, dry: bool, as_json: bool) -> int:

    log = (lambda m: print(m, file=sys.stderr)) if as_json else print
    if dry:
        outcome = prq.publish(target, bump, mode=mode, client=None, log=log)
    else:
        with prq.client_for(target) as client:
            outcome = prq.publish(target, bump, mode=mode, client=client, log=log)
    report(outcome, as_json)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and outcome.url:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(f"\n**Pull request:** [#{outcome.number}]({outcome.url}) ({outcome.action})\n")
    return 0
