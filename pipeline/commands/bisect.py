"""`relpipe bisect --config-key K GOOD BAD`: find the nightly that broke a config key, then list
the engine commits between it and the last good one with their precision categories.

GOOD and BAD are tags of one repository (`rocm/atom-dev:nightly_202610010000`, or a bare tag with
`--repository`); every nightly tag between them is a candidate. GOOD and BAD are qualified first:
a BAD that passes or a GOOD that fails is refused in one line (exit 1). Each probe qualifies a tag
with the key and is bad when its verdict FAILs (or WARNs, with --strict). Cached stages are reused
and verdicts are journaled under STATE/bisect/, so an interrupted bisect resumes where it stopped.
`--dry-run` prints the plan (the tags, the probes at most) and qualifies nothing. Exit 0 when the
pair is found, 1 when an endpoint is refused, 2 on bad input.

With `--engine-repo PATH`, GOOD and BAD are engine commits inside one image (ATOM's CI runs engine
commits on a nightly): the runs of the key's series in the results store narrow GOOD..BAD to the
last good and first bad measured commit, whose commits between are ranked for the key's model,
with the commit to run next (`pipeline/runbisect.py`). Nothing is qualified.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ...changelog.results import store
from ...core import jsoncodec, jsonload, sanitize
from ...core.reference import parse, split
from ...images.nightly import DEFAULT_PATTERN
from ...images.options import add_registry_args, apply_registry_args
from ...images.registry import RegistryClient
from ..bisect import Journal, between, commits_of, endpoints, plan, search
from ..errors import PipelineError
from ..run import (
    RunResult,
    add_qualify_args,
    options_from,
    qualify,
    state_dir,
    workspace_from,
)
from ..runbisect import narrow
from .parser import parser


def _split(ref: str, repository: str | None) -> tuple[str, str]:
    written = split(ref)
    repo, tag = written.name, written.tag
    if tag is None:
        if repository is None:
            raise PipelineError(f"{ref}: give REPOSITORY:TAG, or a bare tag with --repository")
        return repository, ref
    return repo, tag


def _inside_one_image(args: argparse.Namespace) -> int:

    series = args.series or args.config_key
    with store.open_store(store.locate(args.history, Path(args.repo or ".")), create=False) as db:
        found = narrow(Path(args.engine_repo), db, series, args.good, args.bad)
    doc = jsoncodec.to_json(found)
    if args.json:
        print(sanitize.json_text(doc, indent=2, sort_keys=True))
        return 0
    print(sanitize.terminal(f"{series}: {found.measured} measured run(s) between GOOD and BAD"))
    print(f"last good: {found.good}\nfirst bad: {found.bad} ({found.commits} commit(s))")
    if found.next_probe:
        print(f"run next: {found.next_probe}")
    for c in found.suspects.culprits:  # subjects are upstream text: one clean line each
        where = ", ".join(c.on_path) or "nothing on its path"
        print(sanitize.terminal(f"  {c.sha[:12]} [{where}]: {c.subject}", limit=300))
    if found.suspects.reason:
        print(sanitize.terminal(f"  {found.suspects.reason}"))
    return 0


def main(argv: Sequence[str] | None = None) -> int:

    p = parser("relpipe bisect", __doc__)
    p.add_argument("good", metavar="GOOD", help="a nightly known to pass (REPOSITORY:TAG)")
    p.add_argument("bad", metavar="BAD", help="a later nightly known to fail (REPOSITORY:TAG)")
    p.add_argument("--repository", metavar="REPO", default=None, help="for bare tags")
    p.add_argument("--pattern", metavar="TAG_PATTERN", default=DEFAULT_PATTERN, help="nightly tags")
    p.add_argument(
        "--dry-run", action="store_true", help="print the plan, qualify nothing, write nothing"
    )
    inside = p.add_argument_group("engine commits inside one image (from recorded runs)")
    inside.add_argument(
        "--engine-repo",
        metavar="PATH",
        help="GOOD and BAD are engine commits of this clone; narrow them by the results store",
    )
    inside.add_argument(
        "--series", metavar="NAME", help="the store's series (default: the config key)"
    )
    inside.add_argument(
        "--history", metavar="URL_OR_PATH", help="the results store (default as relpipe history)"
    )
    add_qualify_args(p, release=True)  # the key is required; each probe's baseline is its pin
    add_registry_args(p)
    args = p.parse_args(argv)
    if args.engine_repo:
        return _inside_one_image(args)
    apply_registry_args(args)
    (repo, good), (repo_bad, bad) = (
        _split(args.good, args.repository),
        _split(args.bad, args.repository),
    )
    if repo != repo_bad:
        raise PipelineError(f"GOOD and BAD are in different repositories ({repo}, {repo_bad})")
    with RegistryClient() as client:
        tags = between(client.list_tags(parse(repo)), good, bad, args.pattern)
    ws, options = workspace_from(args), options_from(args)
    state = state_dir(ws, args.state)

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    def run(tag: str, baseline: str | None) -> RunResult:
        return qualify(
            f"{repo}:{tag}",
            baseline=baseline,
            config_key=args.config_key,
            ws=ws,
            options=options,
            state=args.state,
        )  # fmt: skip - one call

    def judge(tag: str) -> bool:
        verdict = run(tag, None).verdict
        return verdict is not None and verdict.exit_code != 0  # FAIL (or WARN with --strict)

    def name(tag: str) -> str:
        return f"{repo}:{tag}"

    journal = Journal.open(state, args.config_key, name(good), name(bad))
    if args.dry_run:
        for line in plan(tags, journal, name):
            print(sanitize.terminal(line, limit=2000))
        print("dry run: nothing qualified, nothing written")
        return 0
    say(f"bisect: {len(tags) - 2} nightly tag(s) between {good} and {bad}")
    endpoints(tags, judge, journal, say, name)
    last_good, first_bad = search(tags, judge, journal, say)
    say(f"bisect: {last_good} is the last good nightly, {first_bad} the first bad one")
    pair = run(first_bad, f"{repo}:{last_good}")
    report = jsonload.loads(pair.reports["report.json"].read_text(encoding="utf-8"))
    commits = commits_of(report.get("precision"))
    doc = {"good": f"{repo}:{last_good}", "bad": f"{repo}:{first_bad}", "commits": commits}
    if args.json:
        print(sanitize.json_text(doc, indent=2, sort_keys=True))
    else:
        print(f"last good: {doc['good']}\nfirst bad: {doc['bad']}")
        for c in commits:  # subjects are upstream text: one clean line each
            line = f"  {str(c['sha'])[:12]} {', '.join(c['categories'])}: {c['subject']}"
            print(sanitize.terminal(line, limit=300))
    return 0
