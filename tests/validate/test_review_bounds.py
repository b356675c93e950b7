"""`relpipe review` bounded over hostile input: linear CODEOWNERS matching, a huge sign-off, a
master padded over the cap (WARN, never N/A), refs that look like options, paths git quotes."""

from __future__ import annotations

import json
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest
from support import git

from relpipe.pipeline.cli import main as cli
from relpipe.validate.review.owners import _compile
from relpipe.validate.review.source import MAX_FILE_BYTES

SCRIPT = "benchmarks/single_node/fixed_seq_len/dsr1_fp4_mi355x.sh"
RUNNER = "runners/launch_mi355x-amds.sh"


def _review(repo: Path, *args: str) -> tuple[int, dict]:
    out = StringIO()
    with redirect_stdout(out):
        code = cli(["review", "--repo", str(repo), "--json", *args])
    text = out.getvalue()
    return code, ({c["id"]: c for c in json.loads(text)["checks"]} if text else {})


def _repo(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    repo = tmp_path / "ix"
    files = {"configs/amd-master.yaml": "{}\n", **files}  # what makes it an InferenceX layout
    for name, body in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body.encode() if isinstance(body, str) else body)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo


@pytest.mark.timeout(60)
def test_codeowners_pattern_matching_is_linear() -> None:
    pattern = _compile("*a*a*a*a*a*a*a*a*a*a*a*a*b")
    assert pattern.match("a" * 50_000 + "c") is None
    assert pattern.match("dir/" + "a" * 12 + "b") is not None


@pytest.mark.timeout(120)
def test_a_950_kb_signoff_is_bounded(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {"docs/PR_REVIEW_CHECKLIST.md": "## Template\n```\n- [ ] one item\n- [ ] two\n```\n"},
    )
    signoff = tmp_path / "signoff.md"
    signoff.write_text("- [x] one item\n- [x] two\nSigned: @someone\n" + "- [x] " + "y" * 950_000)
    code, checks = _review(repo, "--check", "checklist", "--signoff", str(signoff))
    assert checks["checklist"]["status"] == "PASS" and code == 0
    many = tmp_path / "many.md"
    many.write_text("- [x] one item\n- [x] two\nSigned: @someone\n" + "- [x] more\n" * 50_000)
    code, checks = _review(repo, "--check", "checklist", "--signoff", str(many))
    assert checks["checklist"]["status"] == "WARN" and "not read" in checks["checklist"]["reason"]


def test_an_option_as_a_ref_is_refused_and_git_writes_nothing(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"README.md": "x\n"})
    code, _ = _review(repo, "--check", "owners", "--base-ref=--output=x")
    assert code == 2 and not (repo / "x").exists() and not Path("x").exists()


def test_paths_git_quotes_stay_in_the_owners_check(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {".github/CODEOWNERS": "* @owner\n", "README.md": "x\n"})
    git(repo, "checkout", "-q", "-b", "odd")
    names = ['runners/a"b.sh', "runners/tab\there.sh", "runners/esc\x1bx.sh"]
    for name in names:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("echo hi\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "odd names")
    _, checks = _review(repo, "--check", "owners", "--base-ref", "main", "--head-ref", "HEAD")
    text = json.dumps(checks["owners"])
    for name in names:
        assert json.dumps(name)[1:-1] in text, name


@pytest.mark.timeout(300)
def test_a_master_padded_over_the_cap_warns_not_na(inferencex_tree: Path, tmp_path: Path) -> None:
    import shutil

    repo = tmp_path / "ix"
    shutil.copytree(inferencex_tree, repo, symlinks=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    master = repo / "configs/amd-master.yaml"
    master.write_text(master.read_text() + "#" + " " * (MAX_FILE_BYTES + 10) + "\n")
    lines = (repo / RUNNER).read_text().splitlines(keepends=True)
    lines.insert(2, "git apply /tmp/vllm.patch\n")
    (repo / RUNNER).write_text("".join(lines))
    git(repo, "commit", "-qam", "pad and patch")
    code, checks = _review(
        repo, "--check", "engine-patches", "--base-ref", "main", "--head-ref", "HEAD"
    )
    record = checks["engine-patches"]
    assert record["status"] == "WARN" and "not read:" in record["reason"]
    assert "configs/amd-master.yaml" in record["reason"]
