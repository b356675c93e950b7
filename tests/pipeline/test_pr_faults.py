"""Bad input and failures of `relpipe pr`: one line each naming what to do, nothing half-done.

Faults are injected at the network boundary (the `GitHubDouble` proxy in front of Prism, every
request still validated by Prism) and in the real bare remote (a pre-receive hook that refuses,
a branch someone else pushed). "Nothing half-done": no PR without its branch, no branch pointing
at a commit that failed (the hook) or whose PR could not be opened.
"""

from __future__ import annotations

import time
from pathlib import Path

import github_api
import pytest
from pr_support import BRANCH, KEY, REPO, TOKEN, pr, stage_release
from support import git

from relpipe.changelog.append import append
from relpipe.changelog.entry import Entry
from relpipe.pipeline import github as gh
from relpipe.pipeline.cli import main as relpipe

PULLS = rf"/repos/{REPO}/pulls"


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert TOKEN not in err
    return err


def no_branch(world: Path) -> bool:
    return git(world, "ls-remote", "origin", BRANCH) == ""


@pytest.mark.parametrize(
    ("labels", "said"),
    [
        (["full-sweep-enabled", "sweep-please"], "unknown label 'sweep-please'"),
        (["all-evals"], "0 primary sweep labels"),
        (["full-sweep-enabled", "full-sweep-fail-fast"], "2 primary sweep labels"),
    ],
)
def test_bad_labels_are_refused_before_anything_is_sent(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    labels: list[str],
    said: str,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    stage_release(world, "nightly_202610070333")
    args = [a for label in labels for a in ("--label", label)]
    assert pr(world, api, "open", *args) == 2
    assert said in one_line_error(capsys)
    assert api.seen == [] and no_branch(world)


def test_a_label_the_repository_lacks_is_refused_before_the_push(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    api.labels.discard("agentx-fast")
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open", "--label", "full-sweep-enabled", "--label", "agentx-fast") == 1
    assert "label 'agentx-fast' does not exist" in one_line_error(capsys)
    assert no_branch(world) and api.sent("POST", PULLS) == []


def test_missing_token(
    world: Path, api: github_api.GitHubDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open") == 2
    err = one_line_error(capsys)
    assert "no GitHub token" in err and "GITHUB_TOKEN" in err and "gh auth login" in err
    assert api.seen == [] and no_branch(world)


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (
            github_api.Fault("GET", PULLS, 401, body={"message": "Bad credentials"}),
            "401 bad credentials",
        ),
        (
            github_api.Fault(
                "POST",
                PULLS,
                403,
                headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1798761600"},
                body={"message": "API rate limit exceeded"},
            ),
            "403 rate limit exhausted; retry after 00:00:00 UTC",
        ),
        (
            github_api.Fault(
                "POST",
                PULLS,
                403,
                headers={"retry-after": "60"},
                body={"message": "You have exceeded a secondary rate limit"},
            ),
            "403 secondary rate limit (You have exceeded a secondary rate limit); retry in 60 s",
        ),
        (
            github_api.Fault(
                "POST",
                PULLS,
                422,
                body={
                    "message": "Validation Failed",
                    "errors": [{"message": "No commits between main and x"}],
                },
            ),
            "422 GitHub refused the request (Validation Failed; No commits between main and x)",
        ),
        (
            github_api.Fault("POST", PULLS, 503, headers={"retry-after": "0"}, times=9),
            "503 from GitHub after retries",
        ),
    ],
)
def test_api_errors_leave_no_branch_without_its_pr(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fault: github_api.Fault,
    said: str,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    api.faults.append(fault)
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open") == 2
    assert said in one_line_error(capsys)
    assert no_branch(world) and api.pulls == {}


def test_transient_5xx_is_retried(
    world: Path, api: github_api.GitHubDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    api.faults.append(github_api.Fault("POST", PULLS, 502, headers={"retry-after": "0"}, times=2))
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open") == 0
    assert [s.status for s in api.sent("POST", PULLS)] == [502, 502, 201]
    assert list(api.pulls) == [1] and not no_branch(world)


def _pre_receive(tmp_path: Path, script: str) -> None:
    """The bare remote's pre-receive hook: `script` (sh) decides each push."""
    hook = tmp_path / "remote.git" / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\n" + script)
    hook.chmod(0o755)


def test_a_remote_that_rejects_the_push(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    _pre_receive(tmp_path, "echo 'protected: no pushes' >&2\nexit 1\n")
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open") == 1
    assert "origin refused the push" in one_line_error(capsys)
    assert no_branch(world) and api.sent("POST", PULLS) == []


def test_a_refused_second_push_leaves_the_pr_open_with_its_placeholder(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """The remote takes the first push (the XXX placeholder) and refuses the one that carries the
    PR's link: the PR is open and labelled, and the warning says the placeholder stayed."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    _pre_receive(
        tmp_path,
        "while read old new ref; do\n"
        '  if [ "$old" != 0000000000000000000000000000000000000000 ]; then\n'
        "    echo 'no force pushes' >&2; exit 1\n  fi\ndone\n",
    )
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open") == 0
    out = capsys.readouterr().out
    assert "warning: PR #1 keeps the XXX pr-link placeholder" in out
    assert list(api.pulls) == [1] and [lb["name"] for lb in api.pulls[1]["labels"]]
    assert not no_branch(world)


def test_a_branch_name_clash(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    git(world, "push", "-q", "origin", f"HEAD:refs/heads/{BRANCH}")
    theirs = git(world, "ls-remote", "origin", BRANCH)
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open") == 1
    assert f"branch {BRANCH} already exists on origin without a PR" in one_line_error(capsys)
    assert git(world, "ls-remote", "origin", BRANCH) == theirs and api.pulls == {}
    # --branch picks another name, and the PR opens there.
    assert pr(world, api, "open", "--branch", f"{BRANCH}-2") == 0
    assert api.pulls[1]["head"]["ref"] == f"{BRANCH}-2"


def test_a_commit_the_hook_rejects_is_never_pushed(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    stage_release(world, "nightly_202610070333")
    wrong = Entry(
        config_keys=(KEY,), description=("Another",), pr_link="https://github.com/other/repo/pull/5"
    )
    append(world / "perf-changelog.yaml", wrong)
    assert pr(world, api, "open") == 1
    assert "the perf-changelog hook fails on the PR commit" in one_line_error(capsys)
    assert no_branch(world) and api.sent("POST", PULLS) == []
    assert git(world, "worktree", "list").count("\n") == 1  # the temporary worktree is gone


def test_a_config_change_main_made_conflicting_is_refused_and_the_pr_left_alone(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    from pr_support import MASTER

    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open") == 0
    pushed = git(world, "ls-remote", "origin", BRANCH)
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(tmp_path / "remote.git"), str(other))
    text = (other / MASTER).read_text()
    (other / MASTER).write_text(text.replace("nightly_202610011210", "nightly_202610050000"))
    git(other, "commit", "-q", "-am", "someone else bumped the same key")
    git(other, "push", "-q", "origin", "main")
    assert pr(world, api, "update") == 1
    assert "no longer applies on the current base" in one_line_error(capsys)
    assert git(world, "ls-remote", "origin", BRANCH) == pushed
    assert api.sent("PATCH", r".*") == []


def test_a_pr_github_created_whose_reply_was_lost_is_kept_with_its_branch(
    world: Path, api: github_api.GitHubDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GitHub made the PR but every answer was a 502 (retries meet "already exists"): the PR that
    now exists for the branch is ours; the branch must not be deleted from under it."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    api.faults.append(
        github_api.Fault("POST", PULLS, 502, headers={"retry-after": "0"}, times=9, applied=True)
    )
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open") == 0
    assert [s.status for s in api.sent("POST", PULLS)] == [502, 502, 502, 502]
    assert list(api.pulls) == [1] and api.pulls[1]["state"] == "open"
    assert [lb["name"] for lb in api.pulls[1]["labels"]] == ["full-sweep-enabled"]
    assert not no_branch(world)


def test_a_rate_limit_reset_no_calendar_holds_is_one_line(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    api.faults.append(
        github_api.Fault(
            "POST",
            PULLS,
            403,
            headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": "99999999999999999999"},
        )
    )
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open") == 2
    assert "403 rate limit exhausted; retry after later" in one_line_error(capsys)
    assert no_branch(world)


def test_a_created_pr_whose_number_overflows_undoes_the_push(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """GitHub's answer to the create is `"number": 1e400` (a float, inf, once parsed), on the
    create and on the list that looks for a PR whose answer was lost: exit 2, one line, and the
    pushed branch deleted again (no branch without a PR relpipe can name)."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    garbage = (
        b'[{"number": 1e400, "state": "open", "html_url": "x", "head": {"ref": "'
        + BRANCH.encode()
        + b'"}}]'
    )
    api.faults += [
        github_api.Fault("POST", PULLS, 201, raw=garbage[1:-1], applied=True),
        github_api.Fault("GET", PULLS, 200, raw=garbage, times=9),
    ]
    api.faults.insert(0, github_api.Fault("GET", PULLS, 200, raw=b"[]"))  # before the push
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open") == 2
    err = one_line_error(capsys)
    # refused where the number is read (or already by the bounded JSON reader: not a number)
    assert "without a number (1 to 2**31-1)" in err or "the answer is not JSON" in err
    assert no_branch(world)


def test_an_answer_that_drips_meets_the_one_deadline_of_its_request(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each byte arrives before any read timeout, so only an overall deadline stops it: 200 bytes
    at 0.25 s would take 50 s; the 2-second deadline ends the command in a few."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    api.faults.append(github_api.Fault("GET", PULLS, 200, raw=b" " * 198 + b"[]", drip_s=0.25))
    stage_release(world, "nightly_202610070333")
    started = time.monotonic()
    assert pr(world, api, "open", "--api-deadline", "2") == 2
    assert time.monotonic() - started < 20
    assert "no whole answer within the 2 s deadline of one request" in one_line_error(capsys)
    assert no_branch(world)


def test_the_deadline_is_stated_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        relpipe(["pr", "open", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--api-deadline SECONDS overall deadline of each GitHub request" in out


@pytest.mark.parametrize("number", [float("inf"), 1e400, True, 0, 2**31, "7"])
def test_a_pr_number_outside_32_bits_or_not_an_integer_is_refused(number: object) -> None:
    raw = {"number": number, "state": "open", "html_url": "x", "head": {"ref": "b"}}
    with pytest.raises(gh.GitHubError, match=r"without a number \(1 to 2\*\*31-1\)"):
        gh.Pull.from_json(raw)


def test_a_fork_that_refuses_the_push_opens_nothing(
    world: Path,
    api: github_api.GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    fork = tmp_path / "fork.git"
    git(tmp_path, "clone", "-q", "--bare", str(tmp_path / "remote.git"), str(fork))
    hook = fork / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'fork: pushes disabled' >&2\nexit 1\n")
    hook.chmod(0o755)
    git(world, "remote", "add", "fork", str(fork))
    stage_release(world, "nightly_202610070333")
    assert pr(world, api, "open", "--push-remote", "fork", "--fork-owner", "jane") == 1
    assert "fork refused the push" in one_line_error(capsys)
    assert git(world, "ls-remote", "fork", BRANCH) == "" and no_branch(world)
    assert api.sent("POST", PULLS) == []
