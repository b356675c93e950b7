"""Helpers for tests: real git repositories with fixed identities and dates."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from relpipe.core.record import fields as record_fields
from relpipe.core.record import is_record
from relpipe.pipeline.cli import main as cli_main

NAME, EMAIL = "relpipe-test", "test@relpipe.invalid"
DATE, EPOCH = "2026-01-01T00:00:00Z", 1767225600  # the same instant twice


def _env(repo: Path, env: dict[str, str] | None) -> dict[str, str]:
    base = {
        "GIT_AUTHOR_NAME": NAME,
        "GIT_AUTHOR_EMAIL": EMAIL,
        "GIT_COMMITTER_NAME": NAME,
        "GIT_COMMITTER_EMAIL": EMAIL,
        "GIT_AUTHOR_DATE": DATE,
        "GIT_COMMITTER_DATE": DATE,
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(repo),
    }
    return dict(os.environ, **base, **(env or {}))


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in `repo` with a fixed identity and dates; return stdout."""
    out = subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env=_env(repo, env),
    )
    return out.stdout


def corpus_checkout(root: Path, corpus_dir: Path) -> Path:
    """A git repository at `root` holding InferenceX's real changelog and masters (the 2026-08
    layout) at HEAD, with InferenceX as origin."""
    (root / "configs").mkdir(parents=True)
    shutil.copy(corpus_dir / "perf-changelog.yaml", root / "perf-changelog.yaml")
    for name in ("amd-master.yaml", "nvidia-master.yaml"):
        shutil.copy(corpus_dir / name, root / "configs" / name)
    git(root, "init", "-q", "-b", "main")
    git(root, "remote", "add", "origin", "git@github.com:SemiAnalysisAI/InferenceX.git")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def commit_files(
    repo: Path,
    files: dict[str, str | bytes | None],
    message: str,
    env: dict[str, str] | None = None,
) -> str:
    """Write (str/bytes) or delete (None) `files` in `repo` (git init'ed if new), commit it;
    return the sha."""
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        git(repo, "init", "-q", "-b", "main")
    for name, content in files.items():
        path = repo / name
        if content is None:
            git(repo, "rm", "-q", "--", name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        git(repo, "add", "--", name)
    git(repo, "commit", "-q", "--allow-empty", "-m", message, env=env)
    return git(repo, "rev-parse", "HEAD").strip()


def import_commit(repo: Path, files: dict[str, str], message: str) -> str:
    """Commit `files` on top of HEAD of the existing `repo` with one `git fast-import` (same
    identity and date as `commit_files`); return the sha. For commits of thousands of files,
    which would otherwise spend seconds writing and staging a work tree: the index and the work
    tree are left as they were, so follow with `git reset --hard` before `commit_files`."""

    def data(text: str) -> bytes:
        raw = text.encode()
        return b"data %d\n%s\n" % (len(raw), raw)

    parent = git(repo, "rev-parse", "HEAD").strip()
    stream = [
        b"commit refs/heads/main\n",
        f"committer {NAME} <{EMAIL}> {EPOCH} +0000\n".encode(),
        data(message),
        f"from {parent}\n".encode(),
    ]
    for path, content in files.items():
        stream += [f"M 100644 inline {path}\n".encode(), data(content)]
    subprocess.run(
        ["git", "-C", str(repo), "fast-import", "--quiet"],
        input=b"".join(stream),
        check=True,
        capture_output=True,
        env=_env(repo, None),
    )
    return git(repo, "rev-parse", "HEAD").strip()


REPO = Path(__file__).resolve().parents[1]
LAYERS = ("core", "pipeline", "changelog", "images", "engine", "validate")


def source_root() -> Path:
    """A folder whose `relpipe/` holds this checkout's layers (symlinks), laid out as the wheel.

    Put it on PYTHONPATH to import this source tree in a child started without site (`-S`) or
    without the editable install, as the engine payload is imported inside an image.
    """
    import hashlib
    import tempfile

    tag = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
    root = Path(tempfile.gettempdir()) / f"relpipe-src-{tag}"
    (root / "relpipe").mkdir(parents=True, exist_ok=True)
    for layer in LAYERS:
        link = root / "relpipe" / layer
        if not link.is_symlink():
            try:
                link.symlink_to(REPO / layer, target_is_directory=True)
            except FileExistsError:  # a parallel test worker made it first
                pass
    return root


def assert_keyword_only(record: type) -> None:
    """Every init field of a record is keyword-only (a `core.record.Record`'s always are), and a
    positional call is refused."""
    if is_record(record):
        fields: list[Any] = list(record_fields(record))
    else:
        fields = [f for f in dataclasses.fields(record) if f.init]
        assert all(f.kw_only for f in fields)
    assert fields
    # One value per field, positionally: refused before any field is looked at.
    with pytest.raises(TypeError, match="positional argument"):
        record(*["x"] * len(fields))


def checkout_snapshot(root: Path) -> tuple[dict[str, bytes], str]:
    """Every file of the checkout but `.git/` (bytes, symlinks as their target) and
    `git status --porcelain --ignored`: what a dry run must leave exactly as it was."""
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".git" or path.is_dir() and not path.is_symlink():
            continue
        files[str(rel)] = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    status = git(root, "status", "--porcelain=v1", "--ignored", "--untracked-files=all")
    return files, status


def empty_checkout(root: Path) -> Path:
    """A git repository in the InferenceX layout with one empty master config (no keys): what
    commands that need a benchmark repository, but none of its content, run in."""
    repo = root / "repo"
    (repo / "configs").mkdir(parents=True)
    (repo / "configs" / "x-master.yaml").write_text("{}\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "an empty master")
    return repo


def run_cli(*args: str) -> tuple[int, str, str]:
    """`relpipe ARGS` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(list(args))
    return code, out.getvalue(), err.getvalue()
