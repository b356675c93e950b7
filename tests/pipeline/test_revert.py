"""`relpipe revert`: the previous pinned image from the lock's history, an appended entry with the
reason, and a PR opened the way `relpipe pr open` opens one (validated by Prism), that passes the
perf-changelog hook."""

from __future__ import annotations

import hashlib
from pathlib import Path

import github_api
import pytest
from pr_support import CHANGELOG, KEY, MASTER, REPO, TOKEN, fetch, hook_passes, remote_file
from support import checkout_snapshot, git

from relpipe.core.pin import Pin
from relpipe.pipeline.cli import main as relpipe
from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.revert import previous_image

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
        ("rocm/atom-dev:nightly_209912312359", "is not in relpipe's pins; pin it first"),
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


def _pin(tag: str, created: str | None) -> Pin:
    digest = "sha256:" + hashlib.sha256(tag.encode()).hexdigest()
    return Pin(
        key=f"docker.io/rocm/atom-dev:{tag}",
        digest=digest,
        platform="linux/amd64",
        platform_digest=digest,
        media_type="application/vnd.oci.image.manifest.v1+json",
        resolved_at="2026-10-02T00:00:00Z",
        created=created,
    )


def test_the_previous_image_is_the_one_created_last_before_as_instants_not_text() -> None:
    pins = {
        p.key: p
        for p in (
            _pin("nightly_a", "2026-10-01T12:00:00Z"),
            _pin("nightly_b", "2026-10-01T14:00:00.5+00:00"),  # the truly previous one
            _pin("nightly_c", "2026-10-01T10:00:00-05:00"),  # the current one: 15:00 UTC
            _pin("nightly_d", "2026-10-01T16:00:00+00:30"),  # 15:30 UTC: newer
            _pin("nightly_e", None),  # no evidence: never chosen
        )
    }
    # As text, c's `2026-10-01T10...` sorts before every other: nothing would precede it.
    key, digest = previous_image(pins, "rocm/atom-dev:nightly_c", None, "pins")
    assert key == "docker.io/rocm/atom-dev:nightly_b" and digest == pins[key].digest
    with pytest.raises(PipelineError, match="no image of docker.io/rocm/atom-dev was pinned"):
        previous_image(pins, "rocm/atom-dev:nightly_a", None, "pins")
    with pytest.raises(PipelineError, match="has no created time"):
        previous_image(pins, "rocm/atom-dev:nightly_e", None, "pins")


def test_revert_dry_run_writes_nothing_in_the_checkout(
    world: Path,
    api: github_api.GitHubDouble,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = checkout_snapshot(world)
    assert revert(world, api, "--dry-run") == 0
    out = capsys.readouterr().out
    assert "+  image: rocm/atom-dev:nightly_202609281543" in out  # the diff it would write
    assert f"POST {api.url}/repos/{REPO}/pulls" in out and api.seen == []
    assert checkout_snapshot(world) == before  # byte-identical, same `git status`


def test_revert_of_two_keys_is_one_entry_naming_both(
    world: Path, api: github_api.GitHubDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    other = "dsv4-fp4-mi355x-atom-agentic-mtp"  # pins the same nightly as KEY in the example
    before = checkout_snapshot(world)
    assert revert(world, api, "--config-key", other, "--dry-run") == 0
    out = capsys.readouterr().out
    assert out.count("+  image: rocm/atom-dev:nightly_202609281543") == 2
    assert f"+- config-keys:\n+    - {KEY}\n+    - {other}\n" in out
    assert "relpipe/revert/" in out and "-and-1-more-" in out
    assert checkout_snapshot(world) == before
