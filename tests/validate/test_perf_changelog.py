"""validate_perf_changelog on the real corpus in real git repositories: what passes, what is
rejected (each edit with its own message and head line), modes, JSON, and the hook's imports."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import corpus_checkout, git

from relpipe.changelog.append import append
from relpipe.changelog.entry import Entry, render
from relpipe.validate.gate.cli import main

REPO_URL = "https://github.com/SemiAnalysisAI/InferenceX"
GOOD = Entry(
    config_keys=("dsr1-fp4-mi355x-atom",),
    description=("Bump ATOM to rocm/atom-dev:nightly_202610070333", "说明：精度不变"),
    pr_link=f"{REPO_URL}/pull/2500",
)
CORPUS_LINES = 6380  # lines of the real changelog; an appended entry starts two lines later


@pytest.fixture
def repo(tmp_path: Path, corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository holding the real changelog and masters at HEAD, with an InferenceX origin."""
    root = corpus_checkout(tmp_path / "bench-repo", corpus_dir)
    monkeypatch.chdir(root)
    return root


def hook(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["--base-ref", "HEAD", "--worktree", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def write_appended(repo: Path, text: str) -> None:
    path = repo / "perf-changelog.yaml"
    path.write_bytes(path.read_bytes() + text.encode())


def test_appending_a_rendered_entry_passes(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    append(repo / "perf-changelog.yaml", GOOD)
    code, out = hook(capsys)
    assert code == 0, out
    assert "ok (append: 1 appended" in out and "773 entries" in out


def test_full_mode_parses_all_772_entries_and_warns_on_known_quirks(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--full", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["ok"] and report["entries"] == 772
    codes = {f["code"] for f in report["findings"]}
    assert {"whitespace-line", "duplicate-entry", "pr-link"} <= codes
    assert {f["severity"] for f in report["findings"]} == {"warning"}
    links = {f["message"] for f in report["findings"] if f["code"] == "pr-link"}
    assert any("/pull/XXX" in m for m in links) and any("/pull/2305/changes" in m for m in links)
    assert sum(f["code"] == "whitespace-line" for f in report["findings"]) == 43
    assert sum(f["code"] == "duplicate-entry" for f in report["findings"]) == 5


def _lines(repo: Path) -> list[str]:
    return (repo / "perf-changelog.yaml").read_text().split("\n")


def _set_lines(repo: Path, lines: list[str]) -> None:
    (repo / "perf-changelog.yaml").write_text("\n".join(lines))


NEW = render(GOOD)


def _insert_mid(repo: Path) -> None:
    lines = _lines(repo)
    index = lines.index("- config-keys:", 100)
    _set_lines(repo, lines[:index] + NEW.rstrip("\n").split("\n") + [""] + lines[index:])


def _change_description(repo: Path) -> None:
    text = (repo / "perf-changelog.yaml").read_text()
    (repo / "perf-changelog.yaml").write_text(
        text.replace("6-7% uplift for llama", "7-8% uplift for llama", 1)
    )


def _delete_entry(repo: Path) -> None:
    text = (repo / "perf-changelog.yaml").read_text()
    start = text.index("- config-keys:\n    - gptoss-fp4-b200-trt\n")
    end = text.index("\n\n", start) + 2
    (repo / "perf-changelog.yaml").write_text(text[:start] + text[end:])


def _crlf(repo: Path) -> None:
    path = repo / "perf-changelog.yaml"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))


def _conflict(repo: Path) -> None:
    write_appended(repo, "\n<<<<<<< HEAD\n" + NEW + "=======\n" + NEW + ">>>>>>> feature\n")


ALIAS_BOMB = (
    "\n- config-keys:\n    - &a dsr1-fp4-mi355x-atom\n"
    "  description: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    "  scenario-type: [*b, *b, *b, *b, *b, *b, *b, *b]\n"
    f"  pr-link: {REPO_URL}/pull/2500\n"
)

# (edit, expected head line or None, expected message fragment)
REJECTED = {
    "insert-mid-file": (_insert_mid, None, "entry inserted before existing entries"),
    "changed-description": (_change_description, 5, "existing entry changed"),
    "deleted-entry": (_delete_entry, None, "existing entry deleted"),
    "crlf": (_crlf, 1, "CR line ending (CRLF)"),
    "tab": (
        lambda r: write_appended(r, "\n" + NEW.replace("  description", "\tdescription")),
        CORPUS_LINES + 4,
        "tab character",
    ),
    "duplicate-key": (
        lambda r: write_appended(r, "\n" + NEW + f"  pr-link: {REPO_URL}/pull/2501\n"),
        CORPUS_LINES + 8,
        "duplicate key `pr-link`",
    ),
    "two-blank-lines": (
        lambda r: write_appended(r, "\n\n" + NEW),
        CORPUS_LINES + 3,
        "2 blank lines before the entry",
    ),
    "no-final-newline": (
        lambda r: write_appended(r, "\n" + NEW.rstrip("\n")),
        CORPUS_LINES + 7,
        "no newline at end of file",
    ),
    "conflict-markers": (_conflict, CORPUS_LINES + 2, "merge conflict marker `<<<<<<<`"),
    "alias-bomb": (lambda r: write_appended(r, ALIAS_BOMB), CORPUS_LINES + 3, "YAML anchor `&a`"),
    "unknown-key": (
        lambda r: write_appended(r, "\n" + NEW + "  owner: me\n"),
        CORPUS_LINES + 8,
        "unknown key `owner`",
    ),
    "pr-link-tbd": (
        lambda r: write_appended(r, "\n" + NEW.replace(f"{REPO_URL}/pull/2500", "TBD")),
        CORPUS_LINES + 7,
        "pr-link `TBD` is not a canonical PR link",
    ),
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_each_bad_edit_is_rejected_with_its_own_message(
    name: str, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit, line, message = REJECTED[name]
    edit(repo)
    code, out = hook(capsys)
    assert code == 1, out
    errors = [row for row in out.splitlines() if ": error: " in row]
    assert any(message in row for row in errors), out
    if line is not None:
        assert any(
            row.startswith(f"perf-changelog.yaml:{line}: error: {message}") for row in errors
        ), out
    assert all("(hint: " in row for row in errors)


def test_insertion_names_the_line_to_move_after(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _insert_mid(repo)
    code, out = hook(capsys)
    assert code == 1
    assert f"move it to the end of the file (after line {CORPUS_LINES + 7})" in out


def test_stale_branch_is_explained_as_rebase(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = repo / "perf-changelog.yaml"
    original = path.read_bytes()
    # main moved on by one entry; the branch was cut before it and appends its own.
    append(
        path,
        Entry(
            config_keys=("gptoss-fp4-mi355x-atom",),
            description=("landed on main meanwhile",),
            pr_link=f"{REPO_URL}/pull/2499",
        ),
    )
    git(repo, "commit", "-qam", "main moves on")
    path.write_bytes(original + b"\n" + NEW.encode())
    code, out = hook(capsys)
    assert code == 1
    assert "the branch is behind the base" in out and "rebase onto the base" in out
    assert "deleted" not in out


def test_pr_link_only_correction_passes_but_not_mixed_with_an_append(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = repo / "perf-changelog.yaml"
    fixed = path.read_text().replace(f"{REPO_URL}/pull/XXX", f"{REPO_URL}/pull/1888")
    path.write_text(fixed)
    code, out = hook(capsys)
    assert code == 0, out
    assert "1 pr-link correction(s)" in out
    path.write_text(fixed + "\n" + NEW)
    code, out = hook(capsys)
    assert code == 1 and "pr-link corrections mixed with new entries" in out


def test_pr_mode_accepts_this_prs_link_or_xxx_only(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)  # a developer's machine (relpipe's CI sets it)
    write_appended(repo, "\n" + NEW.replace("/pull/2500", "/pull/XXX"))
    assert hook(capsys, "--pr-number", "2500")[0] == 0
    code, out = hook(capsys)  # on main a placeholder is not enough
    assert code == 1 and "never on the base branch" in out
    # At commit time on a feature branch the PR number is not known yet: InferenceX judges the
    # entry as a PR run does, so the placeholder passes, and so does any link of this repository.
    git(repo, "checkout", "-q", "-b", "bump-atom")
    git(repo, "add", "perf-changelog.yaml")
    assert main([]) == 0, capsys.readouterr()
    assert hook(capsys)[0] == 1  # explicit refs (a CI job, a script): main's rules
    monkeypatch.setenv("CI", "true")  # CI on main: as InferenceX judges main
    assert main([]) == 1
    monkeypatch.delenv("CI")
    git(repo, "reset", "-q")
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "--", "perf-changelog.yaml")
    write_appended(repo, "\n" + NEW)
    assert hook(capsys, "--pr-number", "2500")[0] == 0
    code, out = hook(capsys, "--pr-number", "2600")
    assert code == 1 and f"write `pr-link: {REPO_URL}/pull/2600`" in out


def test_config_keys_resolve_against_the_masters(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = Entry(
        config_keys=("no-such-config", "nosuch*", "dsr1-fp4-*-atom"),
        description=("x",),
        pr_link=f"{REPO_URL}/pull/2500",
    )
    append(repo / "perf-changelog.yaml", entry)
    code, out = hook(capsys)
    assert code == 1
    assert (
        f"perf-changelog.yaml:{CORPUS_LINES + 3}: error: config key `no-such-config` not found"
        in out
    )
    assert (
        f"perf-changelog.yaml:{CORPUS_LINES + 4}: error: glob `nosuch*` matches no config key"
        in out
    )
    assert "dsr1-fp4-*-atom" not in out
    assert hook(capsys, "--skip-config-keys")[0] == 0


def test_remembered_master_keys_follow_the_masters_content(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second run takes the masters' keys from the hook's cache; a master edited after it
    is read again (the cache is by content), so the verdict follows the edit."""
    monkeypatch.setenv("RELPIPE_HOOK_CACHE", str(repo.parent / "hook-cache"))
    append(repo / "perf-changelog.yaml", GOOD)
    assert hook(capsys) == hook(capsys)
    assert hook(capsys)[0] == 0
    master = repo / "configs" / "amd-master.yaml"
    text = master.read_text()
    master.write_text(text.replace("\ndsr1-fp4-mi355x-atom:", "\nrenamed-fp4-mi355x-atom:", 1))
    code, out = hook(capsys)
    assert code == 1 and "config key `dsr1-fp4-mi355x-atom` not found" in out


def test_json_lists_every_finding(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_appended(repo, "\n\n" + NEW.replace(f"{REPO_URL}/pull/2500", "TBD") + "  owner: me\n")
    code = main(["--base-ref", "HEAD", "--worktree", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["ok"] is False
    assert {f["code"] for f in report["findings"]} >= {"separator", "schema"}
    assert all(f["hint"] for f in report["findings"])


def test_default_base_is_head_and_head_is_the_index(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    append(repo / "perf-changelog.yaml", GOOD)
    assert main([]) == 0  # unstaged append: the index equals HEAD, nothing to check
    assert "0 appended" in capsys.readouterr().out
    git(repo, "add", "perf-changelog.yaml")
    assert main([]) == 0
    assert "1 appended" in capsys.readouterr().out


def test_usage_and_environment_errors_exit_2(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--base-ref", "no-such-ref", "--worktree"]) == 2
    assert "git ref `no-such-ref` not found" in capsys.readouterr().err
    assert main(["--bogus"]) == 2
    assert (
        main(["--configs", "nothing/*.yaml", "--base-ref", "HEAD", "--worktree"]) == 0
    )  # no change: not loaded


def test_hook_process_imports_only_stdlib_and_pyyaml(repo: Path) -> None:
    # `eval-min-prefill-ep: 2` is a plain scalar YAML 1.1 could read otherwise: PyYAML's resolver
    # runs (booleans such as `evals-only: true` are read without it).
    append(
        repo / "perf-changelog.yaml",
        Entry(
            config_keys=("dsr1-fp4-*-atom",),
            description=("x",),
            pr_link=f"{REPO_URL}/pull/2500",
            evals_only=True,
            eval_min_prefill_ep=2,
        ),
    )
    git(repo, "add", "perf-changelog.yaml")
    third_party = _hook_then_print(
        repo,
        "mods = {m.split('.')[0] for m in sys.modules}\n"
        "mods |= {'relpipe.' + m.split('.')[1] for m in sys.modules if m.startswith('relpipe.')}\n"
        "print(sorted(mods - set(sys.stdlib_module_names)))\n",
    )
    ours = {"relpipe", "relpipe.core", "relpipe.changelog", "relpipe.validate", "__main__"}
    allowed = ours | {"yaml", "_yaml", "cython_runtime"}  # PyYAML's C extension is Cython-built
    leftovers = {
        m
        for m in third_party
        if m not in allowed and not m.startswith(("_distutils", "__editable__", "_cython_"))
    }
    assert leftovers == set()
    assert "yaml" in third_party


def _hook_then_print(repo: Path, printer: str) -> list[str]:
    """Run the hook with its defaults in a fresh interpreter, then `printer` (code printing one
    Python list); the hook must pass (its verdict line is checked), the list is returned."""
    probe = (
        "import sys\nfrom relpipe.validate.gate.cli import main\ncode = main([])\n"
        f"{printer}sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok (append: 1 appended" in done.stdout
    return list(eval(done.stdout.strip().splitlines()[-1]))  # noqa: S307 - our own printed list


def test_console_script_runs_as_a_module(repo: Path) -> None:
    append(repo / "perf-changelog.yaml", GOOD)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "relpipe.validate.gate.cli",
            "--base-ref",
            "HEAD",
            "--worktree",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "1 appended" in done.stdout


def test_normalising_whitespace_between_old_entries_is_a_history_change(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = repo / "perf-changelog.yaml"
    path.write_text(path.read_text().replace("\n  \n", "\n\n"))  # the corpus' whitespace-only lines
    code, out = hook(capsys)
    assert code == 1
    assert "perf-changelog.yaml:1884: error: history changed without a new entry" in out


def test_pre_commit_refs_from_the_environment_are_used(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    append(repo / "perf-changelog.yaml", GOOD)
    git(repo, "commit", "-qam", "append")
    monkeypatch.setenv("PRE_COMMIT_FROM_REF", "HEAD~1")
    monkeypatch.setenv("PRE_COMMIT_TO_REF", "HEAD")
    assert main([]) == 0
    assert "1 appended" in capsys.readouterr().out
    monkeypatch.setenv("PRE_COMMIT_FROM_REF", "HEAD")
    monkeypatch.setenv("PRE_COMMIT_TO_REF", "HEAD~1")  # backwards: the entry disappears
    assert main([]) == 1
    assert "entries of the base are missing" in capsys.readouterr().out


def test_outside_a_repository_it_audits_the_file(
    tmp_path: Path,
    corpus_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(corpus_dir / "perf-changelog.yaml", plain / "perf-changelog.yaml")
    monkeypatch.chdir(plain)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert main([]) == 0
    assert "full: 0 appended, 0 pr-link correction(s), 772 entries" in capsys.readouterr().out
    assert main(["--base-ref", "HEAD"]) == 2
