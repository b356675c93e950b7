"""Helpers for tests: real git repositories with fixed identities and dates."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in `repo` with a fixed identity and dates; return stdout."""
    base = {
        "GIT_AUTHOR_NAME": "relpipe-test",
        "GIT_AUTHOR_EMAIL": "test@relpipe.invalid",
        "GIT_COMMITTER_NAME": "relpipe-test",
        "GIT_COMMITTER_EMAIL": "test@relpipe.invalid",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(repo),
    }
    full = dict(os.environ, **base, **(env or {}))
    out = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=full
    )
    return out.stdout


def commit_files(
    repo: Path,
    files: dict[str, str | bytes | None],
    message: str,
    env: dict[str, str] | None = None,
) -> str:
    """Write (str/bytes) or delete (None) `files` in `repo` (git init'ed if new), commit; return the sha."""
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
