"""`relpipe revert`: the previous pinned image from the lock's history, an appended entry with the
reason, and a PR opened the way `relpipe pr open` opens one (validated by Prism), that passes the
perf-changelog hook."""

from __future__ import annotations

from pathlib import Path

import github_api
import pytest
from pr_support import CHANGELOG, KEY, MASTER, REPO, TOKEN, fetch, hook_passes, remote_file
from support import git

from relpipe.pipeline.cli import main as relpipe

BRANCH = f"relpipe/revert/{KEY}"
REASON = "gsm8k dropped 3 points at conc 8 (#131)"


def revert(world: Path, api: github_api.GitHubDouble, *args: str) -> int:
    return relpipe(
        [
            "revert",
            "--config-key",
            KEY,
            "--github-repo",
            REPO,
            "--repo",
            str(world),
            "--api-url",
            api.url,
            "--reason",
            REASON,
            *args,
        ]
    )


def test_revert_restores_the_previous_pinned_image_and_opens_a_pr_that_passes_the_hook(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    history = (world / CHANGELOG).read_bytes()
    assert "rocm/atom-dev:nightly_202610011210" in (world / MASTER).read_text()
    assert revert(world, api) == 0
    assert f"opened PR #1: https://github.com/{REPO}/pull/1" in capsys.readouterr().out
    fetch(world)
    head = f"origin/{BRANCH}"
    config = remote_file(world, head, MASTER).decode()
    assert "rocm/atom-dev:nightly_202609281543" in config
    changelog = remote_file(world, head, str(CHANGELOG))
    assert changelog.startswith(history)  # nothing deleted: an appended entry
    added = changelog[len(history) :].decode()
    assert (
        "Revert to rocm/atom-dev:nightly_202609281543 from rocm/atom-dev:nightly_202610011210"
        in added
    )
    assert f"Reason: {REASON}" in added
    assert git(world, "diff", "--name-only", "origin/main", head).split() == [
        MASTER,
        str(CHANGELOG),
    ]
    done = hook_passes(world, "origin/main", head, 1)
    assert done.returncode == 0, done.stdout
    pull = api.pulls[1]
    assert pull["title"] == f"Revert {KEY} to rocm/atom-dev:nightly_202609281543"
    assert "## 简体中文" in pull["body"] and "原因" in pull["body"]
    assert "`#131`" in pull["body"]  # the reason's #N is escaped, GitHub does not link it


@pytest.mark.parametrize(
    ("to", "said"),
    [
        ("rocm/atom-dev:nightly_209912312359", "is not in images.lock.yaml; pin it first"),
        ("rocm/atom-dev:nightly_202610011210", "already pins"),
    ],
)
def test_revert_to_an_image_it_cannot_restore(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    to: str,
    said: str,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    before = (world / CHANGELOG).read_bytes()
    assert revert(world, api, "--to", to) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1
    assert (world / CHANGELOG).read_bytes() == before and api.seen == []
