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
    out = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                         text=True, env=full)
    return out.stdout
