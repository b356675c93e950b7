"""`relpipe nightly REPOSITORY`: find the newest nightly tag of a repository and qualify it.

    relpipe nightly REGISTRY/REPOSITORY [--config-key K] [--pattern P] [qualify options]

The newest tag is chosen by `images.nightly` (pattern default `nightly_%Y%m%d%H%M`; floating tags
such as `latest` are ignored); the baseline is the config key's pinned image.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from relpipe.pipeline.errors import PipelineError


def newest_nightly(repository: str, pattern: str) -> str:
    """`repository:tag` of the newest nightly (one tags listing;
    pagination handled by the client).
    """
    from relpipe.images.nightly import DEFAULT_PATTERN, newest
    from relpipe.images.reference import parse
    from relpipe.images.registry import RegistryClient

    ref = parse(repository)
    if ref.tag or ref.digest:
        raise PipelineError(
            f"{repository}: give a repository without tag or digest (e.g. rocm/atom-dev)"
        )
    with RegistryClient() as client:
        tags = client.list_tags(ref)
    found = newest(tags, pattern or DEFAULT_PATTERN)
    if found is None:
        raise PipelineError(
            f"{ref.name}: none of its {len(tags)} tag(s) matches {pattern or DEFAULT_PATTERN!r}"
        )
    # Spelled as given: `rocm/atom-dev` stays canonical (served by a mirror), never docker.io/...
    return f"{repository}:{found.tag}"


def main(argv: Sequence[str] | None = None) -> int:
    from relpipe.images.options import apply_registry_args
    from relpipe.pipeline.commands.parser import parser
    from relpipe.pipeline.commands.qualify import add_args, dispatch

    p = parser("relpipe nightly", __doc__)
    p.add_argument(
        "repository",
        metavar="REPOSITORY",
        help="image repository, e.g. rocm/atom-dev or 127.0.0.1:5000/rocm/atom-dev",
    )
    p.add_argument(
        "--pattern",
        metavar="TAG_PATTERN",
        default="",
        help="nightly tag pattern (default: nightly_%%Y%%m%%d%%H%%M)",
    )
    add_args(p)
    args = p.parse_args(argv)
    apply_registry_args(args)
    image = newest_nightly(args.repository, args.pattern)
    print(f"newest nightly: {image}", file=sys.stderr, flush=True)
    return dispatch(args, image)
