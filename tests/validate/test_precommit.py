"""The hook through the real pre-commit client: a benchmark repository whose
.pre-commit-config.yaml points at a committed copy of this source tree (so it works on a fresh
clone with uncommitted work too); pre-commit builds its own environment from PyPI."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from precommit_support import hook_repo, pre_commit
from support import git

from relpipe.changelog.append import append
from relpipe.changelog.entry import Entry, render

REPO_URL = "https://github.com/SemiAnalysisAI/InferenceX"


def _hook_repo(tmp: Path) -> tuple[Path, str]:
    return hook_repo(tmp)  # (test_review.py loads this module for it)


def _pre_commit(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return pre_commit(repo, home, "validate-perf-changelog")


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
