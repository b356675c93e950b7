"""The hook through the real pre-commit client: a benchmark repository whose
.pre-commit-config.yaml points at a committed copy of this source tree (so it works on a fresh
clone with uncommitted work too); pre-commit builds its own environment from PyPI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import git

from relpipe.changelog.append import append
from relpipe.changelog.entry import Entry, render

ROOT = Path(__file__).resolve().parents[2]
REPO_URL = "https://github.com/SemiAnalysisAI/InferenceX"
# What the hook needs to install: the distribution metadata and the two packages on its path.
HOOK_FILES = ("pyproject.toml", "setup.py", "README.md", ".pre-commit-hooks.yaml")
HOOK_PACKAGES = ("core", "pipeline", "changelog", "images", "engine", "validate")


def _hook_repo(tmp: Path) -> tuple[Path, str]:
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


def _pre_commit(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never", HOME=str(repo))
    env.pop("PRE_COMMIT_FROM_REF", None)
    env.pop("PRE_COMMIT_TO_REF", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "validate-perf-changelog"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
def test_pre_commit_passes_an_append_and_fails_a_mid_file_insertion(
    tmp_path: Path, corpus_dir: Path
) -> None:
    hook_repo, sha = _hook_repo(tmp_path)
    bench = tmp_path / "bench"
    (bench / "configs").mkdir(parents=True)
    shutil.copy(corpus_dir / "perf-changelog.yaml", bench / "perf-changelog.yaml")
    for name in ("amd-master.yaml", "nvidia-master.yaml"):
        shutil.copy(corpus_dir / name, bench / "configs" / name)
    (bench / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {sha}\n    hooks:\n"
        "      - id: validate-perf-changelog\n"
        f"        args: [--repo-url, {REPO_URL}]\n"
    )
    git(bench, "init", "-q", "-b", "main")
    git(bench, "add", "-A")
    git(bench, "commit", "-q", "-m", "base")
    home = tmp_path / "pre-commit-home"

    entry = Entry(
        config_keys=("dsr1-fp4-mi355x-atom",),
        description=("Bump ATOM nightly",),
        pr_link=f"{REPO_URL}/pull/2500",
    )
    append(bench / "perf-changelog.yaml", entry)
    git(bench, "add", "perf-changelog.yaml")
    good = _pre_commit(bench, home)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "validate perf-changelog.yaml" in good.stdout and "Passed" in good.stdout

    git(bench, "reset", "-q", "--hard")
    text = (bench / "perf-changelog.yaml").read_text()
    cut = text.index("- config-keys:", 2000)
    (bench / "perf-changelog.yaml").write_text(text[:cut] + render(entry) + "\n" + text[cut:])
    git(bench, "add", "perf-changelog.yaml")
    bad = _pre_commit(bench, home)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout
    assert "error: entry inserted before existing entries" in bad.stdout
    assert "move it to the end of the file" in bad.stdout
