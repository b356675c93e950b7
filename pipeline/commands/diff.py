"""`relpipe diff OLD NEW`: engine commits between two builds and their precision relevance.

Owns where the repository comes from (`--repo PATH|URL|image:REF`) and the output format. A path
is used in place; a URL becomes a cached bare clone (`validate.gitio.open_url`); `image:REF`
copies the image's own history (`/app/ATOM/.git`, or `--image-path`) out through the container
runtime and sanitises it (`pipeline.enginerepo`, as qualification does), and diffs that. The diff
itself is `validate.precision.diff`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from relpipe.pipeline import enginerepo
from relpipe.pipeline.errors import PipelineError
from relpipe.validate import gitio, precision

IMAGE_PREFIX = "image:"
DEFAULT_IMAGE_PATH = enginerepo.ENGINE_PATH
SCOPES = ("atom", "vllm", "sglang")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse's own exit would print usage twice through our one-line error policy.
        raise PipelineError(f"{message}; run `relpipe diff --help`")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="relpipe diff", description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("old", help="old commit, tag, or version (0.1.7.dev43+gaa0c5c3a1)")
    p.add_argument("new", help="new commit, tag, or version")
    p.add_argument("--repo", default=".", help="PATH, URL, or image:REF (default: .)")
    p.add_argument(
        "--image-path",
        default=DEFAULT_IMAGE_PATH,
        help=f"repository folder inside the image for image:REF (default {DEFAULT_IMAGE_PATH}; "
        "AITER: /app/aiter-test)",
    )
    p.add_argument("--rules", help="rules file, or a built-in set: atom (default), aiter")
    p.add_argument(
        "--scope", choices=SCOPES, help="image family for scoped rules (default: all count)"
    )
    p.add_argument(
        "--must-contain",
        action="append",
        default=[],
        metavar="SHA|#PR",
        help="NEW should contain this commit or PR (repeatable; exit 1 if not with --strict)",
    )
    p.add_argument(
        "--must-not-contain",
        action="append",
        default=[],
        metavar="SHA|#PR",
        help="NEW must not contain this commit or PR (repeatable; exit 1 if it does)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="also exit 1 when a --must-contain change is missing (a risk, C6 WARN)",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the JSON report")
    out.add_argument("--markdown", action="store_true", help="print Markdown tables (the default)")
    return p


def _image_repo(ref: str, path_in_image: str, into: Path) -> Path:
    """The image's `<path>/.git`, copied out and sanitised by `pipeline.enginerepo`, in `into`."""
    try:
        from relpipe.images import runtime
        from relpipe.images.reference import parse
    except ImportError as exc:  # the `images` extra (docker SDK) is not installed
        raise PipelineError(
            f"--repo image:REF needs the images extra ({exc.name} missing); "
            "pip install 'relpipe[images]'"
        ) from None
    if not ref:
        raise PipelineError("--repo image: needs a reference, e.g. image:rocm/atom-dev@sha256:...")
    reference = parse(ref)
    if reference.digest is None:
        from relpipe.images.registry import RegistryClient

        with RegistryClient() as client:
            ref = f"{reference.name}@{client.resolve(reference).digest}"
    return enginerepo.extract(runtime.Runtime.from_env(), ref, into, path=path_in_image)


def run(args: argparse.Namespace, workdir: Path) -> precision.PrecisionReport:
    """Open the repository named by `--repo` and compute the report (pure of output)."""
    rules = precision.load_rules(args.rules)
    upstream = [precision.parse_upstream("must-contain", r) for r in args.must_contain]
    upstream += [precision.parse_upstream("must-not-contain", r) for r in args.must_not_contain]
    source: str = args.repo
    if source.startswith(IMAGE_PREFIX):
        repo = _image_repo(source[len(IMAGE_PREFIX) :], args.image_path, workdir)
        display = f"{source}:{args.image_path}"
    elif gitio.is_url(source):
        repo = gitio.open_url(source, [args.old, args.new])
        display = gitio.redact(source)
    else:
        repo = Path(source)
        display = source
    return precision.diff(
        repo, args.old, args.new, rules, scope=args.scope, upstream=upstream, display=display
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    with tempfile.TemporaryDirectory(prefix="relpipe-diff-") as tmp:
        report = run(args, Path(tmp))
    if args.json:
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        print(precision.render_markdown(report))
    # A diff is information (the verdict weighs it). Upstream checks follow C6: a must-not-contain
    # change present is a failure; a must-contain change missing is a risk (WARN), 1 with --strict.
    failed = [u for u in report.upstream if not u.ok]
    if any(u.kind == "must-not-contain" for u in failed) or (failed and args.strict):
        return 1
    return 0
