"""An image's engine history on the host: its `.git` copied out, sanitised, and joined for a pair.

Both `relpipe diff --repo image:REF` (one image) and the qualification's precision stage (the
baseline and the image under test) read engine commits out of images; this module is the one
way they do it. A `.git` copied out of an image is untrusted: its config, hooks, alternates and
grafts could run programs or read host files the moment git touches it. So every copy goes
through `validate.gitio.sanitize_git_dir` before any git command runs in it, and every git
command goes through `validate.gitio.run`, whose command line overrides the settings (pager,
fsmonitor, hooks path, external diff, ext transport) that could still start a program.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core import engines
from ..core.reference import parse
from ..images.nightly import engine_of
from ..validate.precision import gitio
from ..validate.precision.rules import rules_of
from .errors import PipelineError

# the engine's source tree in an ATOM image (its declaration's); its history is `.git` below
ENGINE_PATH = engines.engine(engines.DEFAULT_ENGINE).checkout
OLD_REF = "refs/relpipe/old"
NEW_REF = "refs/relpipe/new"


def source_of(ref: str, rules: str | None) -> tuple[str | None, str]:
    """(rules, source tree) for the image `ref`, as the declaration of the engine its tag family
    serves (`images.nightly.engine_of`) says: ATOM's `/app/ATOM` with `rules` as given (None:
    the default set, ATOM's); another engine's checkout (`/vllm-workspace`,
    `/sgl-workspace/sglang`) and, unless `rules` names others, the rule set it declares."""
    engine = engines.engine(engine_of(parse(ref).repository))
    if engine.name == engines.DEFAULT_ENGINE:  # its rules are the default set (None)
        return rules, engine.checkout
    return rules or rules_of(engine.name), engine.checkout


def extract(
    runtime: Any, new_ref: str, dest: Path, old_ref: str | None = None, path: str = ENGINE_PATH
) -> Path:
    """Copy `<path>/.git` out of `new_ref` (and `old_ref`) into `dest`; return the repository.

    With `old_ref`, the returned repository holds both HEADs as `OLD_REF` and `NEW_REF`.
    `runtime` is an `images.runtime.Runtime` (or anything with its `extract_path`).
    """
    git_path = f"{path.rstrip('/')}/.git"
    new_git = runtime.extract_path(new_ref, git_path, dest / "new.git")
    old_git = runtime.extract_path(old_ref, git_path, dest / "old.git") if old_ref else None
    return prepare(Path(new_git), Path(old_git) if old_git else None)


def prepare(new_git: Path, old_git: Path | None = None) -> Path:
    """Make extracted git directories safe to use and, for a pair, join them in `new_git`.

    Each is sanitised before git runs in it (the fetch runs git in `old_git` too). Release branches
    make non-ancestor pairs, so the old HEAD's commits are fetched across rather than assumed.
    """
    repos = [new_git] if old_git is None else [new_git, old_git]
    for git_dir in repos:
        gitio.sanitize_git_dir(git_dir)
        # Without refs/ git would not take the folder for a repository and would look for one
        # in the folders above it.
        refs = git_dir / "refs"
        if refs.is_symlink() or (refs.exists() and not refs.is_dir()):
            raise PipelineError(
                f"{git_dir}: refs is not a folder; the image's engine history is damaged"
            )
        refs.mkdir(exist_ok=True)
    if old_git is None:
        return new_git
    new_head = _head(new_git)
    old_head = _head(old_git)
    # An absolute path: git runs in new_git (`-C`), where a relative one would name another folder.
    source = str(old_git.resolve())
    fetch = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules"]
    gitio.run(new_git, *fetch, source, f"+{old_head}:{OLD_REF}", what="fetch")
    gitio.run(new_git, "update-ref", NEW_REF, new_head, what="update-ref")
    return new_git


def _head(git_dir: Path) -> str:
    out = gitio.run(git_dir, *gitio.rev_parse_args(["HEAD"]), what="rev-parse")
    return gitio.parse_shas(out, 1)[0]
