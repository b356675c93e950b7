"""`relpipe pr open|update|status` against GitHub's own contract (Prism) and a real bare remote.

The benchmark repository is the example one, pushed to a bare git repository; a release is staged
in the clone with the functions `relpipe release` writes with (the config pin's minimal edit, the
locked changelog append, the lock file's renderer) and the notes rendered by `changelog.notes`
from facts. Every request relpipe sends passes through `GitHubDouble` to Prism serving
`api.github.com.json`; each test ends by asserting Prism found no request violating the contract.
"""

from __future__ import annotations

import json
from pathlib import Path

import github_api
import pytest
from pr_support import (
    BRANCH,
    CHANGELOG,
    KEY,
    MASTER,
    PINNED,
    REPO,
    THEIRS,
    TOKEN,
    USER,
    entry_for,
    fetch,
    hook_passes,
    pr,
    remote_file,
    stage_release,
)
from support import checkout_snapshot, git

from relpipe.changelog.append import append
from relpipe.changelog.entry import render
from relpipe.pipeline.cli import main as relpipe
from relpipe.pipeline.errors import PipelineError


def test_open_pushes_one_commit_and_opens_a_labelled_pr(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    notes = stage_release(world, "nightly_202610070333")
    main_before = git(world, "rev-parse", "HEAD").strip()
    assert pr(world, api, "open", "--label", "full-sweep-enabled", "--label", "all-evals") == 0
    out = capsys.readouterr()
    assert f"opened PR #1: https://github.com/{REPO}/pull/1" in out.out
    assert TOKEN not in out.out + out.err
    fetch(world)
    head = f"origin/{BRANCH}"
    assert git(world, "rev-parse", f"{head}~1").strip() == main_before  # one commit on main
    assert git(world, "log", "-1", "--format=%an <%ae>", head).strip() == f"{USER[0]} <{USER[1]}>"
    changed = git(world, "diff", "--name-only", "origin/main", head).split()
    assert changed == ["configs/amd-master.yaml", "images.lock.yaml", "perf-changelog.yaml"]
    # The release wrote the XXX placeholder; the PR carries its own link once GitHub numbered it
    # (the commit rebuilt and pushed again: still one commit), and the working tree is untouched.
    staged = (world / CHANGELOG).read_bytes()
    assert staged.endswith(f"pr-link: https://github.com/{REPO}/pull/XXX\n".encode())
    linked = staged[: -len(b"XXX\n")] + b"1\n"
    assert remote_file(world, head, str(CHANGELOG)) == linked
    assert "(pr-link of #1)" in out.out
    pull = api.pulls[1]
    title = notes.read_text().splitlines()[0][2:]
    assert (
        pull["title"] == title and pull["head"]["ref"] == BRANCH and pull["base"]["ref"] == "main"
    )
    assert "## Validation: WARN" in pull["body"] and "| C1 | PASS |" in pull["body"]
    assert "简体中文" in pull["body"] or any("\u4e00" <= ch <= "\u9fff" for ch in pull["body"])
    assert [lb["name"] for lb in pull["labels"]] == ["full-sweep-enabled", "all-evals"]
    # The token went to the API, on every request, and the commit passes the hook as PR #1.
    assert all(s.headers.get("authorization") == f"Bearer {TOKEN}" for s in api.seen)
    assert hook_passes(world, "origin/main", head, 1).returncode == 0


def test_a_newer_nightly_updates_the_same_pr(
    world: Path, api: github_api.GitHubDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open") == 0
    git(world, "checkout", "-q", "--", ".")
    notes = stage_release(world, "nightly_202610090101")
    assert pr(world, api, "update", "--notes", str(notes)) == 0
    fetch(world)
    head = f"origin/{BRANCH}"
    assert git(world, "rev-list", "--count", f"origin/main..{head}").strip() == "1"
    changelog = remote_file(world, head, str(CHANGELOG))
    assert (
        changelog.count(b"nightly_202610090101") == 1 and b"nightly_202610070333" not in changelog
    )
    assert b"rocm/atom-dev:nightly_202610090101" in remote_file(world, head, MASTER)
    assert len(api.pulls) == 1 and api.pulls[1]["title"] == notes.read_text().splitlines()[0][2:]
    assert len(api.sent("PATCH", rf"/repos/{REPO}/pulls/1")) == 1


def test_main_moving_underneath_re_appends_the_same_entry_and_the_hook_passes(
    world: Path, api: github_api.GitHubDouble, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open") == 0
    # Someone else appends an entry to main: the PR's appended entry now conflicts.
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(tmp_path / "remote.git"), str(other))
    append(other / CHANGELOG, THEIRS)
    git(other, "commit", "-q", "-am", "someone else's entry")
    git(other, "push", "-q", "origin", "main")
    assert pr(world, api, "update") == 0
    fetch(world)
    head = f"origin/{BRANCH}"
    assert git(world, "rev-parse", f"{head}~1") == git(world, "rev-parse", "origin/main")
    moved = remote_file(world, "origin/main", str(CHANGELOG))
    ours = render(entry_for("nightly_202610070333")).encode()
    linked = render(entry_for("nightly_202610070333", "1")).encode()  # XXX made PR #1's link
    assert remote_file(world, head, str(CHANGELOG)) == moved + b"\n" + linked
    assert ours in (world / CHANGELOG).read_bytes()  # byte for byte the release's entry
    done = hook_passes(world, "origin/main", head, 1)
    assert done.returncode == 0, done.stdout


@pytest.mark.parametrize("merged", [False, True])
def test_a_pr_closed_by_someone_else_is_never_reopened_or_overwritten(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    merged: bool,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open") == 0
    fetch(world)
    pushed = git(world, "rev-parse", f"origin/{BRANCH}")
    api.close_pull(1, merged=merged)
    for action in ("update", "open"):
        assert pr(world, api, action) == 1
        err = capsys.readouterr().err
        assert f"was {'merged' if merged else 'closed'} by someone else" in err
        assert err.count("\n") == 1
    fetch(world)
    assert git(world, "rev-parse", f"origin/{BRANCH}") == pushed
    assert api.sent("PATCH", r".*") == [] and api.pulls[1]["state"] == "closed"


def test_dry_run_prints_the_exact_requests_without_a_token_or_network(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = stage_release(world, "nightly_202610070333")
    code = relpipe(
        [
            "pr",
            "open",
            "--dry-run",
            "--config-key",
            KEY,
            "--github-repo",
            REPO,
            "--repo",
            str(world),
            "--api-url",
            "http://127.0.0.1:9",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert f"POST http://127.0.0.1:9/repos/{REPO}/pulls\n" in out
    title = notes.read_text().splitlines()[0][2:]
    assert json.dumps(title, ensure_ascii=False) in out
    assert f'"head": "{BRANCH}"' in out and '"labels": [\n    "full-sweep-enabled"\n  ]' in out
    assert (
        f"once the PR is numbered: git commit with pr-link https://github.com/{REPO}/pull/" in out
    )
    assert git(world, "ls-remote", "origin", BRANCH) == ""


def test_status_reports_branch_and_pr(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open") == 0
    capsys.readouterr()
    assert pr(world, api, "status", "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["pr"] == {"number": 1, "state": "open", "url": f"https://github.com/{REPO}/pull/1"}
    assert doc["remote_commit"] == git(world, "ls-remote", "origin", BRANCH).split()[0]


def test_token_from_gh_stored_login(tmp_path: Path) -> None:
    from relpipe.pipeline.github import token_from

    (tmp_path / "hosts.yml").write_text(
        "github.com:\n  oauth_token: gho_fromgh\n  user: jane\n"
        "ghe.example.com:\n  oauth_token: gho_ghe\n"
    )
    env = {"GH_CONFIG_DIR": str(tmp_path)}
    assert token_from(env, "https://api.github.com") == "gho_fromgh"
    assert token_from(env, "https://ghe.example.com/api/v3") == "gho_ghe"
    assert token_from(env, "http://127.0.0.1:4010") is None
    assert token_from({**env, "GH_TOKEN": "x1"}, "https://api.github.com") == "x1"
    assert (
        token_from({**env, "GITHUB_TOKEN": "x2", "GH_TOKEN": "x1"}, "https://api.github.com")
        == "x2"
    )


def test_prism_rejects_a_request_the_contract_does_not_allow(prism: github_api.Prism) -> None:
    from relpipe.pipeline.github import ApiRequest, GitHub, GitHubError

    double = github_api.GitHubDouble(prism.url)
    try:
        with GitHub(double.url, TOKEN) as client, pytest.raises(GitHubError, match="422"):
            client.send(ApiRequest(method="POST", path=f"/repos/{REPO}/pulls", body={"head": 3}))
        assert any("must have required property 'base'" in v for v in double.violations)
    finally:
        double.close()


def test_only_what_a_release_writes_goes_into_the_pr(
    world: Path, api: github_api.GitHubDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A benchmark repository that does not ignore .relpipe/ and had no lock file yet."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    git(world, "rm", "-q", ".gitignore", "images.lock.yaml")
    git(world, "commit", "-q", "-m", "no ignore file, no lock yet")
    git(world, "push", "-q", "origin", "main")
    (world / "images.lock.yaml").write_text("# images.lock.yaml\n")
    (world / "scratch.txt").write_text("not the release's\n")
    stage_release(world, "nightly_202610070333")
    index = (world / ".git" / "index").read_bytes()
    assert pr(world, api, "open") == 0
    fetch(world)
    changed = git(world, "diff", "--name-only", "origin/main", f"origin/{BRANCH}").split()
    assert changed == ["configs/amd-master.yaml", "images.lock.yaml", "perf-changelog.yaml"]
    assert (world / ".git" / "index").read_bytes() == index  # the user's index is untouched


def test_the_demo_shows_the_dry_run_offline(world: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from relpipe.pipeline.demo import show_pull_request

    stage_release(world, "nightly_202610070333")
    assert show_pull_request(world, [KEY], world / ".relpipe") == 0
    out = capfd.readouterr().out
    assert f"POST https://api.github.com/repos/{REPO}/pulls" in out
    assert "dry run: nothing pushed or sent" in out


def test_a_release_made_with_its_pr_number_is_checked_against_that_number(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`relpipe release --pr-number 1` (the demo's way): the hook checks the link it names."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    stage_release(world, "nightly_202610070333", pr="1")
    assert pr(world, api, "open") == 0
    assert "warning" not in capsys.readouterr().out
    git(world, "checkout", "-q", "--", ".")
    stage_release(world, "nightly_202610090101", pr="7")
    assert pr(world, api, "update") == 1  # PR #1's gate refuses a link to #7
    assert "pr-link" in capsys.readouterr().err


def test_the_token_goes_only_to_the_api_origin() -> None:
    import httpx

    from relpipe.pipeline.github import _auth_class

    auth = _auth_class()(TOKEN, "https://api.github.com")
    for url, sent in [
        ("https://api.github.com/repos/o/r/pulls", True),
        ("https://api.github.com:443/x", True),
        ("http://api.github.com/x", False),
        ("https://api.github.com.evil.example/x", False),
        ("https://uploads.github.com/x", False),
    ]:
        request = next(auth.auth_flow(httpx.Request("GET", url)))
        assert ("authorization" in request.headers) is sent, url
    assert TOKEN not in repr(auth)


def test_update_stops_at_a_commit_relpipe_did_not_write(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """A colleague pushed a commit onto the PR branch: `update` (which rebuilds the branch as one
    commit) stops with one line naming it, and the branch keeps the colleague's commit."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open") == 0
    colleague = tmp_path / "colleague"
    git(tmp_path, "clone", "-q", "-b", BRANCH, str(tmp_path / "remote.git"), str(colleague))
    (colleague / "NOTES.txt").write_text("numbers from our cluster\n")
    git(colleague, "add", "NOTES.txt")
    git(colleague, "commit", "-q", "-m", "Add cluster numbers")
    theirs = git(colleague, "rev-parse", "HEAD").strip()
    git(colleague, "push", "-q", "origin", BRANCH)
    git(world, "checkout", "-q", "--", ".")
    notes = stage_release(world, "nightly_202610090101")
    capsys.readouterr()
    assert pr(world, api, "update", "--notes", str(notes)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f'carries a commit relpipe did not write ({theirs[:12]} "Add cluster numbers"' in err
    assert git(world, "ls-remote", "origin", BRANCH).split()[0] == theirs
    assert api.sent("PATCH", r".*") == []
    # relpipe's own commit on the branch is not foreign: without the colleague's, update runs.
    git(world, "push", "-q", "--force", "origin", f"{theirs}~1:refs/heads/{BRANCH}")
    assert pr(world, api, "update", "--notes", str(notes)) == 0


def test_pr_open_dry_run_writes_nothing_in_the_checkout(
    world: Path, api: github_api.GitHubDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    stage_release(world, "nightly_202610070333")
    objects = sorted(p.name for p in (world / ".git" / "objects").rglob("*"))
    before = checkout_snapshot(world)
    assert pr(world, api, "open", "--dry-run") == 0
    assert "dry run: nothing pushed or sent" in capsys.readouterr().out
    assert checkout_snapshot(world) == before
    assert sorted(p.name for p in (world / ".git" / "objects").rglob("*")) == objects


def test_notes_of_another_release_are_refused_in_one_line(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """The notes must be the release's in the working tree: notes of the same key from another
    baseline (a release made on an older checkout) name an image HEAD does not pin."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    notes = stage_release(world, "nightly_202610070333")
    other = tmp_path / "other-notes.md"
    other.write_text(notes.read_text().replace(PINNED, "rocm/atom-dev:nightly_202609281543"))
    assert pr(world, api, "open", "--notes", str(other)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "are not the notes of the release in the working tree" in err and PINNED in err
    assert api.seen == [] and git(world, "ls-remote", "origin", BRANCH) == ""


def test_from_a_fork_the_branch_goes_to_the_fork_and_the_pr_to_the_canonical_repository(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """`origin` is the canonical repository's remote here, the fork a second bare remote: the
    branch is pushed to the fork only, as one commit on the canonical main; the PR is created on
    the canonical repository with head = owner:branch, the canonical default branch as base and
    maintainer_can_modify (every request valid for GitHub's contract, Prism)."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    fork = tmp_path / "fork.git"
    git(tmp_path, "clone", "-q", "--bare", str(tmp_path / "remote.git"), str(fork))
    git(world, "remote", "add", "fork", str(fork))
    stage_release(world, "nightly_202610070333")
    main_sha = git(world, "rev-parse", "HEAD").strip()
    assert pr(world, api, "open", "--push-remote", "fork", "--fork-owner", "jane") == 0
    [created] = api.sent("POST", rf"/repos/{REPO}/pulls")
    assert created.body["head"] == f"jane:{BRANCH}"
    assert created.body["base"] == "main" and created.body["maintainer_can_modify"] is True
    assert api.sent("GET", rf"/repos/{REPO}")  # the base is the canonical default branch
    listed = api.sent("GET", rf"/repos/{REPO}/pulls")
    assert listed and all("head=jane%3A" in s.query for s in listed)
    assert git(world, "ls-remote", "origin", BRANCH) == ""  # nothing pushed upstream
    git(world, "fetch", "-q", "fork", f"+refs/heads/{BRANCH}:refs/remotes/fork/{BRANCH}")
    assert git(world, "rev-list", "--count", f"{main_sha}..fork/{BRANCH}").strip() == "1"
    assert git(world, "rev-parse", f"fork/{BRANCH}~1").strip() == main_sha


def test_a_fork_is_detected_when_origin_is_not_the_canonical_repository(tmp_path: Path) -> None:
    from relpipe.pipeline.pullrequest import Target, github_name, with_fork

    repo = tmp_path / "clone"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "remote", "add", "origin", "git@github.com:jane/benchmark-repo.git")
    git(repo, "remote", "add", "upstream", f"https://github.com/{REPO}.git")
    found = with_fork(Target(root=repo, github_repo=REPO))
    assert (found.remote, found.push_remote, found.fork_owner) == ("upstream", "origin", "jane")
    assert found.fork and found.pushes_to == "origin"
    git(repo, "remote", "remove", "upstream")
    with pytest.raises(PipelineError, match="git remote add upstream") as refused:
        with_fork(Target(root=repo, github_repo=REPO))
    assert "\n" not in str(refused.value)
    git(repo, "remote", "set-url", "origin", f"https://github.com/{REPO}")
    assert not with_fork(Target(root=repo, github_repo=REPO)).fork
    assert github_name("ssh://git@github.com/o/n.git") == "o/n"
    assert github_name("https://gitlab.com/o/n") is None
