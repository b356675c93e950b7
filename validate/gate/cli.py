"""The command line of `validate_perf_changelog`, its entry point (`relpipe.validate.gate.cli:main`;
the checks themselves are `validate/gate/hook.py`'s pure `check`): options, where base and head
come from (git refs, the index, the working tree, PRE_COMMIT_FROM_REF/TO_REF), the changelog,
masters and entry schema of the checkout's era (`changelog.repository`, the one detection every
command uses), output, and exit codes 0 valid, 1 invalid, 2 usage or environment error, 3
unexpected (one line and a log path). Standard library and PyYAML only.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from ...changelog.configs.load import keys_of, read_master
from ...changelog.entry import ERROR
from ...changelog.errors import ChangelogError
from ...changelog.repository.detect import (
    Located,
    canonical_repository,
    linked_repository,
    locate,
    pull_request_at_commit,
)
from ...changelog.repository.era import CHANGELOG_NAME, MASTER_SUFFIX, RUNNERS_NAME
from ...changelog.repository.eras import ERAS
from ..errors import ValidateError
from . import git as githook
from .basecache import BaseCache
from .hook import Policy, Report, check

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook does not import typing
if TYPE_CHECKING:
    from .append_only import Revision

# Every era of the repository (changelog.repository.eras), for --help.
CHANGELOG_PATHS = tuple(dict.fromkeys(era.changelog for era in ERAS))
MASTER_GLOBS = tuple(f"{era.masters}/*{MASTER_SUFFIX}" for era in ERAS)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="validate_perf_changelog",
        # A fixed width: the default formatter imports shutil for the terminal size on every
        # add_argument, a measurable share of a commit hook's start-up.
        formatter_class=lambda prog: argparse.HelpFormatter(prog, width=100),
        description=f"Check {CHANGELOG_NAME}: immutable history, appended entries valid.",
    )
    parser.add_argument(
        "--base-ref",
        help="git ref of the base (default: PRE_COMMIT_FROM_REF, "
        "else merge-base with the upstream branch, else HEAD)",
    )
    head = parser.add_mutually_exclusive_group()
    head.add_argument("--head-ref", help="git ref of the head (default: the index)")
    head.add_argument(
        "--worktree", action="store_true", help="use the file in the working tree as the head"
    )
    parser.add_argument(
        "--full", action="store_true", help="audit the whole head file as history (no base)"
    )
    parser.add_argument(
        "--changelog-file",
        metavar="F",
        help="the changelog (default: the file pre-commit passes, else the one the era has: "
        f"{', '.join(CHANGELOG_PATHS)})",
    )
    parser.add_argument(
        "--pr-number", type=int, metavar="N", help="PR mode: accept this PR's link or XXX"
    )
    parser.add_argument(
        "--repo-url", metavar="URL", help="repository URL for pr-links (default: origin)"
    )
    parser.add_argument(
        "--configs",
        nargs="+",
        metavar="GLOB",
        help=f"master configs (default: the era's, {', '.join(MASTER_GLOBS)}); for an "
        f"append-only entry they and the {RUNNERS_NAME} beside them are read at the base and "
        "the head",
    )
    parser.add_argument(
        "--skip-config-keys",
        action="store_true",
        help="do not resolve config keys (nor check append-only entries against the configs)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="house-style findings beyond InferenceX's rules are errors (default: warnings)",
    )
    parser.add_argument(
        "--all-evals",
        action="store_true",
        help="the PR carries the all-evals label (as InferenceX's CI passes it)",
    )
    parser.add_argument(
        "--evals-only",
        action="store_true",
        help="the PR carries the evals-only label (as InferenceX's CI passes it)",
    )
    parser.add_argument("--json", action="store_true", help="print every finding as JSON")
    parser.add_argument(
        "filenames",
        nargs="*",
        metavar="FILE",
        help="the changelog as pre-commit passes it (other files are ignored)",
    )
    return parser


def _read_worktree(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise ValidateError(f"cannot read {path}: {exc.strerror}; check --changelog-file") from exc


def _read_refs(refs: Sequence[str], path: str, explicit: bool) -> list[bytes | None]:
    """Blobs of `path` at `refs` (INDEX for the staged file); None where the file is absent.

    A missing blob at a named ref is only "file absent" if the ref itself exists: a mistyped
    ref, or one a shallow clone lacks, is a usage error rather than an empty base.
    """
    blobs = githook.read_blobs([githook.spec(ref, path) for ref in refs])
    for ref, blob in zip(refs, blobs, strict=False):
        if (
            blob is None
            and ref != githook.INDEX
            and (explicit or ref != "HEAD")
            and not githook.ref_exists(ref)
        ):
            raise ValidateError(
                f"git ref `{ref}` not found; check the name (in a shallow clone, "
                f"`git fetch --depth=1 origin {ref}` first)"
            )
    return blobs


def _inputs(
    args: argparse.Namespace,
) -> tuple[bytes | None, bytes, str, tuple[str, str | None] | None]:
    """(base, head, description of where they came from, (base ref, head ref: a ref, INDEX, or
    None for the working tree) or None without a base) as the options and environment say."""
    path = args.changelog_path
    base_ref, head_ref = args.base_ref, args.head_ref
    if base_ref is None and head_ref is None and not args.worktree:
        from_ref, to_ref = (
            os.environ.get("PRE_COMMIT_FROM_REF"),
            os.environ.get("PRE_COMMIT_TO_REF"),
        )
        if from_ref and to_ref:
            base_ref, head_ref = from_ref, to_ref
    explicit = bool(base_ref or head_ref)
    if args.full:
        if not head_ref:
            return None, _read_worktree(path), "working tree", None
        (head,) = _read_refs([head_ref], path, True)
        if head is None:
            raise ValidateError(f"{path} does not exist at {head_ref}; check --head-ref")
        return None, head, head_ref, None
    if base_ref is None:
        base_ref = githook.default_base()
    refs = [base_ref] if args.worktree else [base_ref, head_ref or githook.INDEX]
    try:
        blobs = _read_refs(refs, path, explicit)
    except ValidateError:
        if explicit or githook.in_repository():
            raise
        return (
            None,
            _read_worktree(path),
            "working tree (no git repository: full-file audit)",
            None,
        )
    if args.worktree:
        head = _read_worktree(path)
    elif blobs[1] is None:
        looked = ""
        if args.changelog_file is None and not _located(args).found:
            looked = f" (no layout found: looked for {', '.join(_located(args).looked_for())})"
        raise ValidateError(
            f"{path} does not exist in {head_ref or 'the index'}{looked}; "
            "stage it, or check --head-ref/--changelog-file"
        )
    else:
        head = blobs[1]
    base = blobs[0] or b""  # absent at the base (new file, or no commit yet): all of it is new
    source = f"{base_ref} -> {head_ref or ('working tree' if args.worktree else 'index')}"
    return base, head, source, (base_ref, None if args.worktree else head_ref or githook.INDEX)


def _config_paths(args: argparse.Namespace) -> list[str] | None:
    """The master config files in the working tree (None: config keys are not checked)."""
    if args.skip_config_keys:
        return None
    import glob  # deferred: not on the commit hook's usual path (start-up)

    patterns = args.configs or [f"{_located(args).era.masters}/*{MASTER_SUFFIX}"]
    paths = sorted({p for pattern in patterns for p in glob.glob(pattern)})
    if not paths:
        if args.configs:
            raise ValidateError(
                f"--configs {' '.join(args.configs)} matches no file; check the glob"
            )
        return None
    return paths


def _located(args: argparse.Namespace) -> Located:
    """The checkout's era (changelog.repository.detect), found once per run."""
    if getattr(args, "located", None) is None:
        args.located = locate(".")
    return args.located  # type: ignore[no-any-return]


def _located_or_none(args: argparse.Namespace) -> Located | None:
    """The era, or None where explicit paths make it unnecessary (a checkout mixing layouts
    with --changelog-file and --configs)."""
    try:
        return _located(args)
    except ChangelogError:
        if args.changelog_file:
            return None
        raise


def _on_a_feature_branch(located: Located | None) -> Callable[[], bool]:
    """Whether this commit is on a branch other than the base branch (`detect.
    pull_request_at_commit`), asked once and only when a pr-link is not canonical."""
    answer: list[bool] = []

    def ask() -> bool:
        if not answer:
            base_branch = located.base_branch if located else None
            in_ci = os.environ.get("CI") == "true"
            answer.append(pull_request_at_commit(githook.current_branch(), base_branch, in_ci))
        return answer[0]

    return ask


def _at_commit_time(args: argparse.Namespace) -> bool:
    """The hook judging what is about to be committed: the index or the working tree against
    the default base (no --base-ref/--head-ref, no pre-push refs, not a --full audit)."""
    explicit = args.base_ref or args.head_ref or os.environ.get("PRE_COMMIT_FROM_REF")
    return not (explicit or args.full)


def _changelog_path(args: argparse.Namespace) -> str:
    """--changelog-file, else the changelog pre-commit passed, else the layout's."""
    if args.changelog_file:
        return args.changelog_file  # type: ignore[no-any-return]
    passed = [f for f in args.filenames if os.path.basename(f) == CHANGELOG_NAME]
    if len(set(passed)) > 1:
        raise ValidateError(
            f"two changelogs in one change ({', '.join(sorted(set(passed)))}): the checkout mixes "
            "layouts; keep one, or pass --changelog-file"
        )
    return passed[0] if passed else _located(args).era.changelog


def _schema_of(args: argparse.Namespace) -> str:
    """The entry schema of the era whose changelog this is (the checkout's era otherwise)."""
    path = os.path.normpath(args.changelog_path).replace(os.sep, "/")
    schemas = {era.entry_schema for era in ERAS if era.changelog == path}
    if len(schemas) == 1:  # the path says (every era at that path has one schema)
        return schemas.pop()
    return _located(args).era.entry_schema


def _config_keys(paths: Sequence[str], bases: BaseCache) -> Sequence[str]:
    """The masters' top-level keys; the line scan of a master (a few ms for the real ones) is
    done once per content (`BaseCache.master_keys`)."""
    keys: list[str] = []
    for path in paths:
        data = read_master(path)
        known = bases.master_keys(data)
        if known is None:
            known = keys_of(data, path)
            bases.remember_master_keys(data, known)
        keys.extend(known)
    return keys


def _revisions(
    paths: Sequence[str], base_ref: str, head_ref: str | None
) -> Callable[[], tuple[Revision, Revision]]:
    """A loader of the masters (the files `paths` names) and the runners.yaml beside them at
    the base and the head (a ref, the index, or None: the working tree), in one git process."""

    def load() -> tuple[Revision, Revision]:
        from .append_only import (
            revision,  # deferred: not on the commit hook's usual path (start-up)
        )

        files = [*paths, os.path.join(os.path.dirname(paths[0]), RUNNERS_NAME)]
        refs = [base_ref] if head_ref is None else [base_ref, head_ref]
        blobs = githook.read_blobs([githook.spec(ref, f) for ref in refs for f in files])
        sides = [blobs[: len(files)]]
        if head_ref is None:
            sides.append([_read_optional(f) for f in files])
        else:
            sides.append(blobs[len(files) :])
        out = []
        head = "index" if head_ref == githook.INDEX else head_ref or "working tree"
        for side, ref in zip(sides, (base_ref, head), strict=True):
            named = [(f"{ref}:{f}", blob) for f, blob in zip(files, side, strict=True)]
            masters = [(where, blob) for where, blob in named[:-1] if blob is not None]
            where, blob = named[-1]
            runners = None if blob is None else (where, blob)
            out.append(revision(masters, runners))
        return out[0], out[1]

    return load


def _read_optional(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _render_json(report: Report, source: str) -> str:
    from ...core.sanitize import (
        json_text,  # deferred: not on the commit hook's usual path (start-up)
    )

    return json_text(
        {
            "ok": report.ok,
            "file": report.path,
            "source": source,
            "mode": report.mode,
            "entries": report.entries,
            "appended": report.appended,
            "corrections": report.corrections,
            "config_keys_checked": report.configs_checked,
            "findings": [
                {
                    "severity": f.severity,
                    "line": f.line,
                    "code": f.code,
                    "message": f.message,
                    "hint": f.hint,
                }
                for f in report.findings
            ],
        },
        indent=2,
    )


def _without_collector(run: Callable[..., Report], *args: object) -> Report:
    """`run(*args)` with Python's cyclic garbage collector paused.

    A check builds no reference cycles (tests/changelog/test_entries.py holds it to that), so
    the collector would free nothing; but its passes over a heap growing by hundreds of thousands
    of findings cost as much as the parse of a large file (4 of 9 s on a 9 MB one)."""
    import gc  # deferred: not on the commit hook's usual path (start-up)

    if not gc.isenabled():
        return run(*args)
    gc.disable()
    try:
        return run(*args)
    finally:
        gc.enable()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the gate; exit 0 valid, 1 invalid, 2 usage or environment error, 3 unexpected (one
    line and the path of a log with the traceback, as the `relpipe` command line does)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("validate_perf_changelog: interrupted", file=sys.stderr)
        return 130
    except Exception:  # noqa: BLE001 - the one handler of unexpected errors (exit 3 + log)
        from ...core.errors import (
            report_unexpected,  # deferred: not on the commit hook's usual path (start-up)
        )

        return report_unexpected("validate_perf_changelog", sys.argv[1:] if argv is None else argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if args.configs:
        # pre-commit appends the file names after the hook's args: `--configs GLOB` takes them.
        passed = [p for p in args.configs if os.path.basename(p) == CHANGELOG_NAME]
        args.configs = [p for p in args.configs if p not in passed] or None
        args.filenames = [*passed, *args.filenames]
    if args.pr_number is not None and args.pr_number < 1:
        print("validate_perf_changelog: --pr-number must be a positive integer", file=sys.stderr)
        return 2
    try:
        args.changelog_path = _changelog_path(args)
        base, head, source, refs = _inputs(args)
        changed = base is None or head != base
        repo_url = githook.canonical_repo_url(args.repo_url) if args.repo_url else None
        pull_request: bool | Callable[[], bool] = False
        if changed:
            located = _located_or_none(args)
            if repo_url is None:
                repo_url = canonical_repository(
                    named=None,
                    override=located.repository if located else None,
                    remotes=githook.remote_urls(),
                    linked=linked_repository(base or b""),
                )
            if args.pr_number is None and _at_commit_time(args):
                pull_request = _on_a_feature_branch(located)
        paths = _config_paths(args) if changed and base is not None else None
        bases = BaseCache()
        policy = Policy(
            repo_url=repo_url,
            pr_number=args.pr_number,
            pull_request=pull_request,
            config_keys=None if paths is None else _config_keys(paths, bases),
            strict=args.strict,
            all_evals=args.all_evals,
            evals_only=args.evals_only,
            revisions=None if paths is None or refs is None else _revisions(paths, *refs),
            schema=_schema_of(args),
        )
        report = _without_collector(check, base, head, policy, args.changelog_path, bases)
    except (ValidateError, ChangelogError) as exc:
        print(f"validate_perf_changelog: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(_render_json(report, source))
    else:
        errors = 0 if report.ok else sum(f.severity == ERROR for f in report.findings)
        verdict = "ok" if report.ok else f"{errors} error(s)"
        lines = [finding.format(report.path) for finding in report.findings]
        lines.append(
            f"{report.path}: {verdict} ({report.mode}: {report.appended} appended, "
            f"{report.corrections} pr-link correction(s), {report.entries} entries; {source})"
        )
        lines.append("")  # the final newline, without copying the text to add it
        # One write: a history audit may print hundreds of thousands of warnings.
        sys.stdout.write("\n".join(lines))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
