"""`relpipe diff OLD NEW`: engine commits between two builds and their precision relevance.

Owns where the repository comes from (`--repo PATH|URL|image:REF`) and the output format. A path
is used in place; a URL becomes a cached bare clone (`validate.gitio.open_url`); `image:REF`
copies the image's own history (`/app/ATOM/.git`, or `--image-path`) out through the container
runtime and sanitises it (`pipeline.enginerepo`, as qualification does), and diffs that. The diff
itself is `validate.precision.diff`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ...core import engines, sanitize
from ...core.files import read_capped
from ...core.reference import parse
from ...images.options import apply_registry_args
from ...images.registry import RegistryClient
from ...validate import precision
from ...validate.precision import gitio, keypath
from .. import enginerepo
from ..errors import PipelineError
from .parser import parser

IMAGE_PREFIX = "image:"
DEFAULT_IMAGE_PATH = enginerepo.ENGINE_PATH


def _parser() -> argparse.ArgumentParser:
    p = parser("relpipe diff", __doc__)
    p.add_argument(
        "old",
        metavar="OLD",
        nargs="?",
        help="old commit, tag, or version (0.1.7.dev43+gaa0c5c3a1)",
    )
    p.add_argument("new", metavar="NEW", nargs="?", help="new commit, tag, or version")
    p.add_argument(
        "--lint-rules",
        action="store_true",
        help="check the rules against one tree instead (`relpipe diff --lint-rules --repo PATH "
        "[REV]`, REV default HEAD, or `--paths FILE`): globs matching no file, files no rule "
        "matches; exit 1 if any",
    )
    p.add_argument(
        "--paths",
        metavar="FILE",
        help="with --lint-rules: a listing of paths, one per line, instead of a repository's tree "
        "(an engine too large to clone, e.g. ../shared/data/engines/vllm-paths.txt)",
    )
    src = p.add_argument_group("where the commits come from")
    src.add_argument(
        "--repo", metavar="PATH|URL|image:REF", default=".", help="the engine's git history"
    )
    src.add_argument(
        "--image-path",
        metavar="PATH",
        default=DEFAULT_IMAGE_PATH,
        help="repository folder inside the image for image:REF (AITER: /app/aiter-test)",
    )
    rules = p.add_argument_group("rules and watch list")
    rules.add_argument(
        "--rules",
        metavar="FILE|" + "|".join(precision.builtin_rules()),
        help="rules file or a rule set an engine declares (default: atom)",
    )
    rules.add_argument(
        "--scope",
        choices=engines.names(),
        help="the engine whose image family scoped rules apply to (default: all count)",
    )
    rules.add_argument(
        "--config-key",
        metavar="KEY",
        help="also say which relevant changes lie on this key's path (its model, draft model and "
        "what they import, engine-wide switches; e.g. minimaxm3-fp4-mi355x-atom-agentic-mtp) "
        "and which lie elsewhere",
    )
    rules.add_argument(
        "--must-contain",
        action="append",
        default=[],
        metavar="SHA|#PR",
        help="NEW should contain this commit or PR (repeatable; exit 1 if not with --strict)",
    )
    rules.add_argument(
        "--must-not-contain",
        action="append",
        default=[],
        metavar="SHA|#PR",
        help="NEW must not contain this commit or PR (repeatable; exit 1 if it does)",
    )
    output = p.add_argument_group("output")
    output.add_argument(
        "--strict",
        action="store_true",
        help="also exit 1 when a --must-contain change is missing (a risk, C6 WARN)",
    )
    out = output.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON document (the report)")
    out.add_argument("--markdown", action="store_true", help="print Markdown tables (the default)")
    from ...images.options import (
        add_registry_args,  # deferred: lazy: the git path needs no registry
    )

    add_registry_args(p)  # for --repo image:REF
    return p


def _image_repo(ref: str, path_in_image: str, into: Path) -> Path:
    """The image's `<path>/.git`, copied out and sanitised by `pipeline.enginerepo`, in `into`."""
    try:
        from ...images import runtime  # deferred: the images extra (docker SDK)
    except ImportError as exc:  # the `images` extra (docker SDK) is not installed
        raise PipelineError(
            f"--repo image:REF needs the images extra ({exc.name} missing); "
            "pip install 'relpipe[images]'"
        ) from None
    if not ref:
        raise PipelineError("--repo image: needs a reference, e.g. image:rocm/atom-dev@sha256:...")
    reference = parse(ref)
    if reference.digest is None:
        with RegistryClient() as client:
            ref = f"{reference.name}@{client.resolve(reference).digest}"
    return enginerepo.extract(runtime.Runtime.from_env(), ref, into, path=path_in_image)


def run(
    args: argparse.Namespace, workdir: Path
) -> tuple[precision.PrecisionReport, keypath.Scoped | None]:
    """Open the repository named by `--repo` and compute the report, scoped to `--config-key`
    when given (pure of output)."""
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
    report = precision.diff(
        repo, args.old, args.new, rules, scope=args.scope, upstream=upstream, display=display
    )
    return report, keypath.scope(repo, report, args.config_key) if args.config_key else None


MAX_LISTING = 64 * 1024 * 1024


def _listing(path: str) -> list[str]:
    """The paths of a listing file: one per line, blank lines skipped; untrusted (capped, UTF-8,
    no NUL, no absolute or `..` paths)."""

    data = read_capped(path, MAX_LISTING, "path listing", error=PipelineError)
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise PipelineError(f"path listing {path} is not UTF-8 text") from None
    paths = [line.strip() for line in lines if line.strip()]
    for number, item in enumerate(paths, 1):
        if "\x00" in item or item.startswith("/") or ".." in item.split("/"):
            raise PipelineError(f"path listing {path}: entry {number} is not a relative path")
    return paths


def _lint(args: argparse.Namespace) -> int:
    if args.new is not None:
        raise PipelineError("--lint-rules takes at most one revision (default HEAD)")
    rules = precision.load_rules(args.rules)
    if args.paths:
        if args.old is not None:
            raise PipelineError("--lint-rules --paths FILE takes no revision")
        report = precision.lint_paths(_listing(args.paths), rules, args.paths)
    else:
        if args.repo.startswith(IMAGE_PREFIX) or gitio.is_url(args.repo):
            raise PipelineError("--lint-rules needs a local repository: --repo PATH")
        report = precision.lint(Path(args.repo), rules, args.old or "HEAD")
    print(sanitize.json_text(report.to_json(), indent=2) if args.json else report.render(rules))
    return 0 if report.ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.lint_rules:
        return _lint(args)
    if args.paths:
        raise PipelineError("--paths goes with --lint-rules")
    if args.old is None or args.new is None:
        raise PipelineError("relpipe diff needs OLD and NEW (or --lint-rules); see --help")
    if str(args.repo or "").startswith("image:"):
        apply_registry_args(args)  # used by --repo image:REF
    with tempfile.TemporaryDirectory(prefix="relpipe-diff-") as tmp:
        report, scoped = run(args, Path(tmp))
    if args.config_key and scoped is None:
        print(
            sanitize.terminal(
                f"relpipe diff: no module of {args.config_key}'s model in the engine tree at "
                f"{report.new[:12]}: not scoped, every relevant change counts"
            ),
            file=sys.stderr,
        )
    if args.json:
        # One line: json's C encoder serves only unindented output, and on a release span
        # the indenting pure-Python encoder costs more than classifying the files.
        doc = report.to_json()
        if scoped is not None:
            doc["key_scope"] = scoped.to_json()
        print(sanitize.json_text(doc))
    else:
        print(precision.render_markdown(report))
        if scoped is not None:
            print("\n" + scoped.markdown())
    # A diff is information (the verdict weighs it). Upstream checks follow C6: a must-not-contain
    # change present is a failure; a must-contain change missing is a risk (WARN), 1 with --strict.
    failed = [u for u in report.upstream if not u.ok]
    if any(u.kind == "must-not-contain" for u in failed) or (failed and args.strict):
        return 1
    return 0
