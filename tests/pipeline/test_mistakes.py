"""A newcomer's mistakes (issue 36): a mistyped command, option, action, choice or config key and
an image without a tag are each one line on stderr with the closest real name where one is
close, and exit 2; every action of `pr` and `history` has its own --help."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from relpipe.changelog.configs.load import resolve_key
from relpipe.changelog.errors import ChangelogError
from relpipe.core import suggest
from relpipe.pipeline.cli import main as relpipe

ROOT = Path(__file__).resolve().parents[2]
KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "\n" not in err and "Traceback" not in err and captured.out == ""
    return err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["qualfy"], "unknown command 'qualfy'; did you mean 'qualify'?"),
        (["--verison"], "unknown command '--verison'; did you mean '--version'?"),
        (["doctor", "--jsn"], "unrecognized arguments: --jsn; did you mean '--json'?"),
        (
            ["review", "--config-keys", KEY],
            f"unrecognized arguments: --config-keys {KEY}; did you mean '--config-key'?",
        ),
        (
            ["pr", "opne", "--config-key", KEY, "--github-repo", "a/b"],
            "invalid choice: 'opne' (choose from open, update, status); did you mean 'open'?",
        ),
        (["history", "regresions"], "; did you mean 'regressions'?"),
        (
            ["notes", "render", "facts.json", "--lang", "bth"],
            "invalid choice: 'bth' (choose from en, zh, both); did you mean 'both'?",
        ),
        # An option of one action given to another is reported by that action's parser.
        (
            ["pr", "open", "--config-key", KEY, "--github-repo", "a/b", "--dry-rn"],
            "unrecognized arguments: --dry-rn; did you mean '--dry-run'?; "
            "run `relpipe pr open --help`",
        ),
        (
            ["history", "ingest", "x", "--jsno"],
            "unrecognized arguments: --jsno; did you mean '--json'?; "
            "run `relpipe history ingest --help`",
        ),
    ],
)
def test_a_mistyped_name_gets_the_closest_one(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert relpipe(argv) == 2
    assert said in _one_line(capsys)


def test_nothing_close_means_no_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert relpipe(["zzzzzz"]) == 2
    assert _one_line(capsys) == "relpipe: error: unknown command 'zzzzzz'; run `relpipe --help`"
    assert relpipe(["pr", "status", "--config-key", KEY, "--github-repo", "a/b", "--dry-run"]) == 2
    # status is read-only: it has no --dry-run, and nothing close to it
    assert _one_line(capsys) == (
        "relpipe pr: error: unrecognized arguments: --dry-run; run `relpipe pr status --help`"
    )


@pytest.fixture(scope="module")
def example_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("mistakes") / "benchmark-repo"
    shutil.copytree(ROOT / "examples" / "benchmark-repo", repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


@pytest.mark.parametrize(
    "argv",
    [
        ["qualify", "rocm/atom-dev:nightly_202610070333", "--config-key", KEY[:-2] + "pt"],
        [
            "release",
            "--config-key",
            KEY.replace("agentic", "agentc"),
            "--dry-run",
            "--image",
            "rocm/atom-dev:nightly_202610070333",
        ],  # fmt: skip - the two halves of one command line
    ],
)
def test_a_mistyped_config_key_names_the_real_one(
    argv: list[str], example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert relpipe([*argv, "--repo", str(example_repo)]) == 2
    assert _one_line(capsys).endswith(f"did you mean {KEY!r}?")


def test_the_hook_and_review_suggest_a_config_key_too() -> None:
    keys = (KEY, "dsv4-fp4-mi355x-atom")
    with pytest.raises(ChangelogError) as info:
        resolve_key("minimaxm3-fp4-mi355x-atom-agentic-mpt", keys)
    assert str(info.value).endswith(f"; did you mean {KEY!r}?")
    with pytest.raises(ChangelogError) as info:
        resolve_key("qwen3", keys)
    assert str(info.value).endswith("not found in the master configs; check its spelling")


def test_an_image_without_tag_or_digest_is_refused_before_any_request(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: `--image rocm/atom-dev` became `:latest` and went to the network. The registry
    named here does not exist: the refusal comes first, so no request is even tried."""
    for argv in (
        ["release", "--config-key", KEY, "--image", "rocm/atom-dev", "--repo", str(example_repo)],
        ["images", "resolve", "rocm/atom-dev", "--registry-mirror", "docker.io=127.0.0.1:9"],
    ):
        assert relpipe([*argv, "--dry-run"] if argv[0] == "release" else argv) == 2
        assert _one_line(capsys).endswith(
            "image reference 'rocm/atom-dev' has no tag or digest: write rocm/atom-dev:TAG or "
            "rocm/atom-dev@sha256:DIGEST (relpipe never assumes :latest)"
        )


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as done:
        relpipe([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def test_every_action_of_pr_and_history_has_its_own_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    opened = _help(["pr", "open"], capsys)
    assert opened.startswith("usage: relpipe pr open ")
    assert "--dry-run" in opened and "--label L" in opened and "--notes FILE" in opened
    assert "--open-missing" not in opened
    assert "--open-missing" in _help(["pr", "update"], capsys)
    status = _help(["pr", "status"], capsys)
    assert "--dry-run" not in status and "--label" not in status and "--json" in status
    overview = _help(["pr"], capsys)
    assert all(f"    {action}  " in overview for action in ("open", "update", "status"))
    for action in ("ingest", "regressions"):
        assert _help(["history", action], capsys).startswith(f"usage: relpipe history {action} ")


def test_the_suggestion_reads_a_bounded_word() -> None:
    """The typed word is outside input: compared only up to MAX_WORD characters."""
    assert suggest.closest("open" + "x" * 100_000, ["open", "update"]) is None
    assert suggest.closest("updte", ["open", "update"]) == "update"
    assert suggest.did_you_mean("open", ["open"]) == ""
