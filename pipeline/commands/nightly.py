"""`relpipe nightly REPOSITORY`: find the newest nightly tag of a repository and qualify it.

    relpipe nightly REGISTRY/REPOSITORY [--config-key K] [--pattern P] [qualify options]

The newest tag is chosen by `images.nightly` (family default `atom`, `nightly_%Y%m%d%H%M`;
floating and branch tags are ignored); the baseline is the config key's pinned image.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ...core.reference import parse
from ...images import archive
from ...images.evidence import choose_newest, default_cache_path
from ...images.nightly import default_family
from ...images.options import apply_registry_args
from ...images.registry import RegistryClient
from .. import pins
from ..errors import PipelineError
from ..run import state_dir, workspace_from
from .parser import parser
from .qualify import add_args, dispatch


def newest_nightly(repository: str, pattern: str) -> str:
    """`repository:tag` of the newest build of the family `pattern` (one paginated tag listing;
    commit-addressed families also read each uncached candidate's config).
    """

    ref = parse(repository)
    if ref.tag or ref.digest:
        raise PipelineError(
            f"{repository}: give a repository without tag or digest (e.g. rocm/atom-dev)"
        )
    selector = pattern or default_family(ref.repository)
    with RegistryClient() as client:
        choice = choose_newest(client, ref, selector, cache_path=default_cache_path())
    if choice.best is None:
        raise PipelineError(f"{ref.name}: none of its {choice.total} tag(s) matches {selector!r}")
    # Spelled as given: `rocm/atom-dev` stays canonical (served by a mirror), never docker.io/...
    return f"{repository}:{choice.best.tag}"


def main(argv: Sequence[str] | None = None) -> int:

    p = parser("relpipe nightly", __doc__)
    p.add_argument(
        "repository",
        metavar="REPOSITORY",
        help="image repository, e.g. rocm/atom-dev or 127.0.0.1:5000/rocm/atom-dev",
    )
    p.add_argument(
        "--pattern",
        metavar="FAMILY|PATTERN",
        default="",
        help="tag family or pattern, as for `relpipe images latest --pattern` (default: the "
        "repository's nightly family, as its engine declares it, else atom)",
    )
    p.add_argument(
        "--retention-days",
        metavar="DAYS",
        type=float,
        default=14.0,
        help="warn about pins older than this that are not archived (upstream deletes old "
        "nightlies; vLLM keeps about two weeks) (default: %(default)s)",
    )
    add_args(p)
    args = p.parse_args(argv)
    apply_registry_args(args)
    image = newest_nightly(args.repository, args.pattern)
    print(f"newest nightly: {image}", file=sys.stderr, flush=True)
    warn_stale_pins(args)
    return dispatch(args, image)


def warn_stale_pins(args: argparse.Namespace) -> list[str]:
    """One warning line per pinned tag gone upstream or older than the retention, unarchived
    (the pins relpipe keeps in its state, `pipeline.pins`, and an opted-in lock file)."""

    ws = workspace_from(args)
    pinned = pins.load(ws, state_dir(ws, getattr(args, "state", None)))
    if not pinned:
        return []
    with RegistryClient() as client:
        stale = archive.stale_pins(client, pinned, args.retention_days)
    lines = [f"warning: pin {s.key}: {s.reason}" for s in stale]
    for line in lines:
        print(line, file=sys.stderr, flush=True)
    return lines
