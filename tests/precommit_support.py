"""relpipe's hooks through the real pre-commit client: a committed snapshot of this source tree
as the hook repository (so uncommitted work is tested too), and `pre-commit run` in a benchmark
repository with its own PRE_COMMIT_HOME (pre-commit builds the hook's environment there)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from support import git

ROOT = Path(__file__).resolve().parent.parent
# What the hook needs to install: the distribution metadata and the packages on its path.
HOOK_FILES = ("pyproject.toml", "setup.py", "README.md", ".pre-commit-hooks.yaml")
HOOK_PACKAGES = ("core", "pipeline", "changelog", "images", "engine", "validate")


def hook_repo(tmp: Path) -> tuple[Path, str]:
    """A git repository holding a snapshot of relpipe, and its commit (pre-commit's `rev`)."""
    repo = tmp / "relpipe-hook"
    repo.mkdir()
    for name in HOOK_FILES:
        shutil.copy(ROOT / name, repo / name)
    for package in HOOK_PACKAGES:
        shutil.copytree(
            ROOT / package, repo / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "hook snapshot")
    return repo, git(repo, "rev-parse", "HEAD").strip()


def pre_commit(repo: Path, home: Path, *hooks: str) -> subprocess.CompletedProcess[str]:
    """`pre-commit run [HOOK]` on what is staged in `repo`."""
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never", HOME=str(repo))
    # A commit on a developer's machine: relpipe's own CI sets CI=true, under which the hook
    # judges as InferenceX's CI judges main (validate.gate.cli).
    for name in ("CI", "PRE_COMMIT_FROM_REF", "PRE_COMMIT_TO_REF"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", *hooks],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
