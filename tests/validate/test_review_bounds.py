"""`relpipe review` bounded over hostile input: linear CODEOWNERS matching, a huge sign-off, a
master padded over the cap (WARN, never N/A), refs that look like options, paths git quotes."""

from __future__ import annotations

import json
import os
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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


# Pieces of file names: every character git quotes in its output (`"`, `\`, tab, newline, ESC,
# non-ASCII) and bytes that are not UTF-8 (issue 34.10: such paths went missing, or a newline
# kept a path from its owner: RE2's `.` did not cross it).
NAME_PIECES = [b"a", b'"', b"\\", b"\t", b"\n", b"\x1b", b" ", "\u00e9".encode(), "\u4e2d".encode()]
NAME_PIECES += [b"\xff", b"\xfe", b"*", b"?"]
OWNERS = "* @all\n*.py @py\n/configs/ @cfg\n/docs/** @docs\n"


def _expected_owner(path: str) -> str:
    """The winning line of OWNERS (the last that matches), for the folders the names use."""
    if path.startswith("docs/"):
        return "@docs"
    if path.startswith("configs/"):
        return "@cfg"
    return "@py" if path.endswith(".py") else "@all"


@pytest.fixture(scope="module")
def owners_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _repo(tmp_path_factory.mktemp("own"), {".github/CODEOWNERS": OWNERS, "README.md": "x\n"})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from([b"", b"configs/", b"docs/", b"runners/"]),
            st.lists(st.sampled_from(NAME_PIECES), min_size=1, max_size=6).map(b"".join),
            st.sampled_from([b".py", b".sh", b""]),
        ).map(lambda t: t[0] + t[1] + t[2]),
        min_size=1,
        max_size=5,
        unique=True,
    )
)
def test_owners_lists_every_changed_path_with_its_owner(
    owners_repo: Path, names: list[bytes]
) -> None:
    repo = owners_repo
    git(repo, "checkout", "-q", "-B", "odd", "main")
    try:
        for name in names:
            path = os.path.join(os.fsencode(repo), name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(b"x\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "odd names")
        _, checks = _review(repo, "--check", "owners", "--base-ref", "main", "--head-ref", "HEAD")
        rows = checks["owners"]["evidence"]
        wanted = {name.decode("utf-8", "backslashreplace") for name in names}
        assert len(rows) == len(wanted) and {where for where, _ in rows} == wanted
        for where, what in rows:
            assert what.split(" (")[0] == _expected_owner(where), (where, what)
    finally:
        git(repo, "checkout", "-q", "-f", "main")
        git(repo, "clean", "-qfdx")
