"""Shared by the `relpipe pr` / `relpipe revert` tests: the example repository with a bare remote,
a staged release, the GitHub double in front of Prism (the `prism` fixture is in conftest.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import github_api
import pytest
from support import git

from relpipe.changelog.append import append
from relpipe.changelog.configs.pin import edit_image
from relpipe.changelog.entry import Entry
from relpipe.changelog.notes import ReleaseFacts, render_title
from relpipe.changelog.notes import render as render_notes
from relpipe.pipeline.cli import main as relpipe
from relpipe.pipeline.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "benchmark-repo"
CHANGELOG = Workspace(EXAMPLE).changelog  # where the example repository's layout keeps it
FACTS = ROOT / "changelog" / "notes" / "example.json"
MASTER = "configs/amd-master.yaml"
KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"
PINNED = "rocm/atom-dev:nightly_202610011210"  # KEY's image in the example repository
REPO = "example-org/benchmark-repo"
BRANCH = f"relpipe/bump/{KEY}"
TOKEN = "ghp_relpipeTestToken0123456789"
USER = ("Jane Maintainer", "jane@example.invalid")
THEIRS = Entry(
    config_keys=("qwen3.5-fp8-mi355x-atom",),
    description=("An entry someone else merged meanwhile",),
    pr_link=f"https://github.com/{REPO}/pull/120",
)


def github_double(prism: github_api.Prism) -> Iterator[github_api.GitHubDouble]:
    double = github_api.GitHubDouble(prism.url)
    try:
        yield double
        assert double.violations == [], "requests GitHub's contract rejects"
    finally:
        double.close()


def benchmark_clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clone of the example repository with a bare remote; the user's identity in HOME."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GITHUB_TOKEN", "GH_TOKEN", "GH_CONFIG_DIR", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    subprocess.run(["git", "config", "--global", "user.name", USER[0]], check=True)
    subprocess.run(["git", "config", "--global", "user.email", USER[1]], check=True)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    clone = tmp_path / "clone"
    shutil.copytree(EXAMPLE, clone, ignore=shutil.ignore_patterns(".relpipe"))
    (clone / ".gitignore").write_text(".relpipe/\n")
    git(clone, "init", "-q", "-b", "main")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "benchmark repository")
    git(clone, "remote", "add", "origin", str(remote))
    git(clone, "push", "-q", "origin", "main")
    return clone


def stage_release(clone: Path, tag: str, pr: str = "XXX") -> Path:
    """What `relpipe release` leaves: pin, appended entry, lock entry, and its record's notes."""
    new = f"rocm/atom-dev:{tag}"
    master = clone / MASTER
    text, _ = edit_image(master.read_text(), KEY, new, MASTER)
    master.write_text(text)
    append(clone / CHANGELOG, entry_for(tag, pr))
    lock = clone / "images.lock.yaml"
    digest = "sha256:" + tag[-12:].rjust(64, "0")
    lock.write_text(
        lock.read_text()
        + f"docker.io/{new}:\n  digest: {digest}\n  platform: linux/amd64\n"
        + f"  platform-digest: {digest}\n"
        + "  media-type: application/vnd.docker.distribution.manifest.v2+json\n"
        + "  resolved-at: '2026-11-30T00:00:00Z'\n  created: null\n  facts: {}\n"
    )
    facts = json.loads(FACTS.read_text())
    facts["new_image"]["ref"] = new
    facts["old_image"]["ref"] = PINNED  # the image HEAD pins: these are this release's notes
    release = ReleaseFacts.from_json(facts)
    record = clone / ".relpipe" / "releases" / tag
    record.mkdir(parents=True)
    (record / "run.json").write_text(json.dumps({"schema": 1, "request": {"config_key": KEY}}))
    notes = f"# {render_title(release)}\n\n{render_notes(release, 'both')}"
    (record / "notes.md").write_text(notes)
    checks = [{"id": "C1", "title": "digest verified", "status": "PASS"}]
    (record / "report.json").write_text(
        json.dumps({"verdict": {"overall": "WARN", "checks": checks}})
    )
    return record / "notes.md"


def entry_for(tag: str, pr: str = "XXX") -> Entry:
    return Entry(
        config_keys=(KEY,),
        description=(f"Update to rocm/atom-dev:{tag}",),
        pr_link=f"https://github.com/{REPO}/pull/{pr}",
        scenario_type=("agentic-coding",),
    )


def pr(clone: Path, api: github_api.GitHubDouble, *args: str) -> int:
    return relpipe(
        [
            "pr",
            *args,
            "--config-key",
            KEY,
            "--github-repo",
            REPO,
            "--repo",
            str(clone),
            "--api-url",
            api.url,
        ]
    )


def remote_file(clone: Path, ref: str, path: str) -> bytes:
    return subprocess.run(
        ["git", "-C", str(clone), "show", f"{ref}:{path}"], capture_output=True, check=True
    ).stdout


def fetch(clone: Path) -> None:
    git(clone, "fetch", "-q", "origin", "+refs/heads/*:refs/remotes/origin/*", "--prune")


def hook_passes(clone: Path, base: str, head: str, number: int) -> subprocess.CompletedProcess[str]:
    code = "import sys; from relpipe.validate.gate.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "--base-ref",
            base,
            "--head-ref",
            head,
            "--repo-url",
            f"https://github.com/{REPO}",
            "--pr-number",
            str(number),
        ],
        cwd=clone,
        capture_output=True,
        text=True,
        check=False,
    )
