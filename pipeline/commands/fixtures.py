"""`relpipe fixtures build`: build reproducible fixture nightlies and push them to a registry.

A thin shell over `images.build.build_fixtures`: parse arguments, build (layers cached on disk,
manifests already under their tag are not pushed again), print one line per nightly or `--json`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ...core import sanitize
from ...images import fixture_repo
from ...images.build import build_fixtures, default_cache_dir
from ...images.errors import ImageError
from ...images.options import add_registry_args, apply_registry_args
from .parser import parser as new_parser


def _parser() -> argparse.ArgumentParser:
    parser = new_parser("relpipe fixtures", __doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    build = sub.add_parser("build", help="build fixture nightlies and push them (cached)")
    build.add_argument(
        "--registry",
        metavar="HOST:PORT",
        required=True,
        help="HOST:PORT of the registry (loopback)",
    )
    build.add_argument(
        "--repository", metavar="NAME", required=True, help="repository name, e.g. rocm/atom-dev"
    )
    build.add_argument(
        "--count",
        metavar="N",
        type=int,
        default=4,
        help=f"number of nightlies, 1..{fixture_repo.MAX_NIGHTLIES} (default 4)",
    )
    build.add_argument(
        "--variant",
        choices=fixture_repo.VARIANTS,
        default="good",
        help="kind of the newest nightly: good, broken (rms_norm wrong), hang",
    )
    real = build.add_argument_group(
        "real engine history (instead of the built-in fixture engine; --count/--variant unused)"
    )
    real.add_argument(
        "--engine-repo",
        metavar="PATH",
        type=Path,
        default=None,
        help="a git repository of the engine (e.g. a clone of ATOM): /app/ATOM is it at a commit",
    )
    real.add_argument(
        "--engine-commits",
        metavar="A,B,...",
        default="",
        help="commits or tags of --engine-repo, one nightly each (tag nightly_YYYYMMDDHHMM from "
        "the commit date, version as setuptools-scm gives it)",
    )
    build.add_argument(
        "--cache-dir",
        metavar="DIR",
        type=Path,
        default=None,
        help=f"layer cache (default {default_cache_dir()})",
    )
    build.add_argument(
        "--json", action="store_true", help="print one JSON document (the nightlies)"
    )
    add_registry_args(build)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    apply_registry_args(args)
    if "/" in args.registry or not args.registry.strip():
        raise ImageError(f"--registry takes HOST:PORT, got {args.registry!r}")
    log = (
        (lambda msg: print(f"relpipe fixtures: {msg}", file=sys.stderr)) if not args.json else None
    )
    commits = [c.strip() for c in args.engine_commits.split(",") if c.strip()]
    if (args.engine_repo is None) != (not commits):
        raise ImageError("--engine-repo and --engine-commits go together")
    images = build_fixtures(
        args.registry,
        args.repository,
        args.count,
        args.variant,
        cache_dir=args.cache_dir,
        log=log,
        engine_repo=args.engine_repo,
        engine_commits=commits,
    )
    if args.json:
        print(sanitize.json_text([image.to_json() for image in images], indent=2))
    else:
        for image in images:
            state = "pushed" if image.pushed else "cache hit"
            print(f"{image.tagged}  {image.digest}  atom {image.engine_version}  {state}")
    return 0
