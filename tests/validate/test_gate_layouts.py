"""validate_perf_changelog in every era InferenceX has had (changelog.repository), with the file
names pre-commit passes; every finding of a change at once; exit 3 on a crash.

The 2026-10 layout is a real git repository holding the 2026-10 tree's masters and the changelog
exactly before and after PR #3750's entry (`tree-2026-10/_derived/`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import corpus
import pytest
import yaml
from support import git

from relpipe.changelog.errors import ChangelogError
from relpipe.changelog.repository.detect import locate
from relpipe.validate.gate.cli import main

ROOT = Path(__file__).resolve().parents[2]
REPO_URL = "https://github.com/SemiAnalysisAI/InferenceX"
KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"


def _derived() -> tuple[bytes, bytes]:
    derived = corpus.inferencex_e2e().parent / "_derived"
    return (
        (derived / "perf-changelog.base-before-3750.yaml").read_bytes(),
        (derived / "perf-changelog.head-3750.yaml").read_bytes(),
    )


def _repo(root: Path, changelog: str, masters: str, base: bytes) -> Path:
    """A git repository with `base` committed at `changelog` and the 2026-10 masters (and
    runners.yaml) in the folder `masters`, with InferenceX as origin."""
    (root / masters).mkdir(parents=True)
    for source in (corpus.inferencex_e2e() / "configs").glob("*.yaml"):
        shutil.copy(source, root / masters / source.name)
    (root / changelog).parent.mkdir(parents=True, exist_ok=True)
    (root / changelog).write_bytes(base)
    git(root, "init", "-q", "-b", "main")
    git(root, "remote", "add", "origin", "git@github.com:SemiAnalysisAI/InferenceX.git")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


@pytest.mark.parametrize(
    ("changelog", "masters"),
    [
        ("inferencex-e2e/perf-changelog.yaml", "inferencex-e2e/configs"),  # 2026-10
        ("perf-changelog.yaml", "configs"),  # 2026-08
        ("perf-changelog.yaml", ".github/configs"),  # before 2026-07-02
    ],
)
def test_the_3750_change_passes_with_the_defaults_in_every_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, changelog: str, masters: str
) -> None:
    base, head = _derived()
    root = _repo(tmp_path / "ix", changelog, masters, base)
    monkeypatch.chdir(root)
    monkeypatch.delenv("PRE_COMMIT_FROM_REF", raising=False)
    (root / changelog).write_bytes(head)
    git(root, "add", "-A")
    assert main([]) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    assert f"{changelog}: ok (append: 1 appended" in out and "1089 entries" in out
    # The key is resolved against the layout's masters: an unknown one fails, at its line.
    bad = head[: len(base)] + head[len(base) :].replace(KEY.encode(), b"no-such-key")
    (root / changelog).write_bytes(bad)
    git(root, "add", "-A")
    assert main([changelog]) == 1  # the file name as pre-commit passes it
    out = capsys.readouterr().out
    line = bad.count(b"\n", 0, bad.index(b"no-such-key")) + 1
    assert f"{changelog}:{line}: error: config key `no-such-key` not found" in out


def test_a_checkout_with_two_layouts_gets_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    base, head = _derived()
    root = _repo(
        tmp_path / "ix", "inferencex-e2e/perf-changelog.yaml", "inferencex-e2e/configs", base
    )
    (root / "configs").mkdir()
    shutil.copy(root / "inferencex-e2e/configs/amd-master.yaml", root / "configs/amd-master.yaml")
    monkeypatch.chdir(root)
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "mixes layouts" in err
    assert "inferencex-e2e/configs/*-master.yaml" in err and " configs/*-master.yaml" in err
    # Explicit paths decide: no guess needed.
    argv = ["--changelog-file", "inferencex-e2e/perf-changelog.yaml", "--configs", "configs/*.yaml"]
    assert main(argv) == 0, capsys.readouterr()
    # Two changelogs passed by pre-commit: the same single line.
    assert main(["perf-changelog.yaml", "inferencex-e2e/perf-changelog.yaml"]) == 2
    assert "two changelogs in one change" in capsys.readouterr().err


def test_layout_detection_by_files(tmp_path: Path) -> None:
    empty = locate(str(tmp_path))
    assert not empty.found and empty.era.changelog == "perf-changelog.yaml"
    assert "inferencex-e2e/perf-changelog.yaml" in empty.looked_for()
    (tmp_path / "perf-changelog.yaml").write_text("")
    assert locate(str(tmp_path)).era.name == "2026-08"  # a root changelog, no masters yet
    (tmp_path / ".github/configs").mkdir(parents=True)
    (tmp_path / ".github/configs/amd-master.yaml").write_text("")
    found = locate(str(tmp_path))
    assert (found.found, found.era.name, found.era.masters) == (
        True,
        "pre-2026-07",
        ".github/configs",
    )
    assert found.era.runners == ".github/configs/runners.yaml"
    (tmp_path / "inferencex-e2e").mkdir()
    (tmp_path / "inferencex-e2e/perf-changelog.yaml").write_text("")
    with pytest.raises(ChangelogError, match="mixes layouts"):
        locate(str(tmp_path))


def test_every_finding_of_a_mid_file_insertion_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Issue 23: an inserted entry's placeholder link, a missing link and an unknown key, each at
    its line, besides "inserted" itself; exit 1."""
    base, _ = _derived()
    changelog = "inferencex-e2e/perf-changelog.yaml"
    root = _repo(tmp_path / "ix", changelog, "inferencex-e2e/configs", base)
    cut = base.index(b"\n- config-keys:", len(base) // 2) + 1
    first = b'- config-keys:\n    - no-such-key\n  description:\n    - "x"\n  pr-link: XXX\n\n'
    second = f'- config-keys:\n    - {KEY}\n  description:\n    - "y"\n\n'.encode()
    (root / changelog).write_bytes(base[:cut] + first + second + base[cut:])
    git(root, "add", "-A")
    monkeypatch.chdir(root)
    assert main([]) == 1
    out = capsys.readouterr().out
    at = base.count(b"\n", 0, cut) + 1
    for line, text in (
        (at, "error: entry inserted before existing entries"),
        (at + 1, "error: config key `no-such-key` not found"),
        (at + 4, "error: pr-link `XXX` is not a canonical PR link"),
        (at + 6, "error: entry inserted before existing entries"),
        (at + 6, "error: entry has no `pr-link`"),
    ):
        assert f"{changelog}:{line}: {text}" in out, out
    assert re.search(r": 5 error\(s\) \(diff:", out), out


SITECUSTOMIZE = """
import sys
class _Fault:
    def find_spec(self, name, path=None, target=None):
        if name == "difflib":
            raise RuntimeError("injected fault importing difflib")
        return None
sys.meta_path.insert(0, _Fault())
"""


def test_a_crash_exits_3_with_one_line_and_a_log(tmp_path: Path) -> None:
    base, _ = _derived()
    root = _repo(tmp_path / "ix", "perf-changelog.yaml", "configs", base)
    cut = base.index(b"\n- config-keys:", len(base) // 2) + 1
    (root / "perf-changelog.yaml").write_bytes(
        base[:cut] + base[cut:].replace(b"    - ", b"    - x", 1)
    )
    git(root, "add", "-A")
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {**os.environ, "PYTHONPATH": str(hook), "XDG_STATE_HOME": str(tmp_path / "state")}
    env.pop("PRE_COMMIT_FROM_REF", None)
    done = subprocess.run(
        [str(Path(sys.executable).with_name("validate_perf_changelog"))],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "validate_perf_changelog: unexpected error: RuntimeError: injected fault" in done.stderr
    log = Path(re.search(r"\(traceback in (\S+)\)$", done.stderr.strip()).group(1))  # type: ignore[union-attr]
    assert log.is_relative_to(tmp_path / "state" / "relpipe")
    assert "Traceback (most recent call last)" in log.read_text()


@pytest.mark.parametrize(
    ("changelog", "masters", "code"),
    [
        ("inferencex-e2e/perf-changelog.yaml", "inferencex-e2e/configs", 0),
        ("perf-changelog.yaml", "configs", 1),
    ],
)
def test_no_evals_is_judged_by_the_layout_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, changelog: str, masters: str, code: int
) -> None:
    """2026-10's ChangelogEntry knows `no-evals`; 2026-08's forbids it."""
    base, head = _derived()
    root = _repo(tmp_path / "ix", changelog, masters, base)
    (root / changelog).write_bytes(head + b"  no-evals: true\n")
    git(root, "add", "-A")
    monkeypatch.chdir(root)
    assert main([]) == code, capsys.readouterr()
    if code:
        assert "unknown key `no-evals`" in capsys.readouterr().out


def test_pre_commit_file_names_after_configs_are_the_changelog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """pre-commit appends the staged file names after the hook's `args:`; after `--configs GLOB`
    they are the changelog, not master configs."""
    base, head = _derived()
    changelog = "inferencex-e2e/perf-changelog.yaml"
    root = _repo(tmp_path / "ix", changelog, "inferencex-e2e/configs", base)
    (root / changelog).write_bytes(head)
    git(root, "add", "-A")
    monkeypatch.chdir(root)
    assert main(["--configs", "inferencex-e2e/configs/*-master.yaml", changelog]) == 0
    assert f"{changelog}: ok (append: 1 appended" in capsys.readouterr().out


def test_the_pre_commit_hook_runs_for_the_changelog_of_every_layout() -> None:
    """`.pre-commit-hooks.yaml`: the changelog at the root or under inferencex-e2e/ triggers the
    hook, which gets the file name (pass_filenames)."""
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (gate,) = [h for h in hooks if h["id"] == "validate-perf-changelog"]
    assert gate["pass_filenames"] is True
    pattern = re.compile(gate["files"])
    assert pattern.search("perf-changelog.yaml")
    assert pattern.search("inferencex-e2e/perf-changelog.yaml")
    assert not pattern.search("docs/perf-changelog.yaml")


@pytest.mark.parametrize("remotes", ["fork origin, canonical upstream", "fork origin only"])
def test_the_canonical_repository_is_the_repositorys_identity_not_a_forks_origin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, remotes: str
) -> None:
    """Most contributors commit from a fork: `origin` is theirs. The canonical repository comes
    from an `upstream` remote, else from the links of the repository's own changelog; the real
    `https://github.com/SemiAnalysisAI/InferenceX/pull/N` passes and a link to the fork fails."""
    base, head = _derived()
    changelog = "inferencex-e2e/perf-changelog.yaml"
    root = _repo(tmp_path / "ix", changelog, "inferencex-e2e/configs", base)
    git(root, "remote", "set-url", "origin", "git@github.com:someone/InferenceX.git")
    if "upstream" in remotes:
        git(root, "remote", "add", "upstream", f"{REPO_URL}.git")
    monkeypatch.chdir(root)
    monkeypatch.delenv("CI", raising=False)
    (root / changelog).write_bytes(
        head
    )  # #3750's own entry: .../SemiAnalysisAI/InferenceX/pull/3750
    git(root, "add", "-A")
    assert main([]) == 0, capsys.readouterr()
    fork = head[: len(base)] + head[len(base) :].replace(
        b"SemiAnalysisAI/InferenceX/pull/3750", b"someone/InferenceX/pull/3750"
    )
    (root / changelog).write_bytes(fork)
    git(root, "add", "-A")
    assert main([]) == 1
    assert "is not a canonical PR link" in capsys.readouterr().out
    # On a feature branch before the PR exists: the canonical repository's placeholder passes,
    # the fork's does not.
    git(root, "checkout", "-q", "-b", "bump")
    for link, code in (
        (f"{REPO_URL}/pull/XXX", 0),
        ("https://github.com/someone/InferenceX/pull/XXX", 1),
    ):
        (root / changelog).write_bytes(
            head[: len(base)]
            + head[len(base) :].replace(f"{REPO_URL}/pull/3750".encode(), link.encode())
        )
        git(root, "add", "-A")
        assert main([]) == code, (link, capsys.readouterr())
        capsys.readouterr()


def test_placeholders_on_a_feature_branch_are_what_inferencex_accepts_on_a_pr_run() -> None:
    """Oracle: each era's own validator (`validate_added_pr_link`, run in its own environment)
    on a PR run accepts a link for some PR number exactly when the hook accepts it at commit
    time on a feature branch, where the number is not known yet."""
    from relpipe.changelog.entry import parse_appended
    from relpipe.validate.gate.hook import Policy, _pr_link_finding

    links = [
        "XXX",
        f"{REPO_URL}/pull/XXX",
        f"{REPO_URL}/pull/3750",
        "https://github.com/someone/InferenceX/pull/XXX",
        "https://github.com/someone/InferenceX/pull/12",
        f"{REPO_URL}/pull/xxx",
        "TBD",
    ]
    script = (
        "import importlib, json, sys\nv = importlib.import_module(sys.argv[2])\nout = []\n"
        "for link in json.loads(sys.argv[1]):\n"
        "    n = int(link.rsplit('/', 1)[1]) if link.rsplit('/', 1)[-1].isdigit() else 1\n"
        "    try:\n        v.validate_added_pr_link(link, n)\n        out.append(True)\n"
        "    except Exception:\n        out.append(False)\n"
        "print(json.dumps(out))\n"
    )
    policy = Policy(repo_url=REPO_URL, pr_number=None, pull_request=True, config_keys=None)
    ours = []
    for link in links:
        block = parse_appended(
            b"",
            f"- config-keys:\n    - {KEY}\n  description:\n    - x\n  pr-link: {link}\n".encode(),
        ).blocks[0]
        ours.append(_pr_link_finding(block, policy, "perf-changelog.yaml") is None)
    assert ours == [True, True, True, False, False, False, False]
    for path, module in _validators():
        done = subprocess.run(
            [corpus.oracle_python(), "-c", script, json.dumps(links), module],
            cwd=path,
            capture_output=True,
            text=True,
            check=True,
            env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(path)},
        )
        assert json.loads(done.stdout) == ours, module


def _validators() -> list[tuple[Path, str]]:
    """(import path, module) of each era's validator (the two early trees have none)."""
    data = corpus.inferencex_dir()
    return [
        (data / "eras" / "2026-07-01" / "utils", "validate_perf_changelog"),
        (data / "tree" / "utils", "validate_perf_changelog"),
        (data / "tree-2026-10" / "inferencex-e2e", "infx.workflows.validate_perf_changelog"),
    ]
