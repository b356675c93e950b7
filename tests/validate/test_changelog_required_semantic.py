"""`changelog-required` is semantic: a comment-only or whitespace-only edit of a launch script
(read with the bash reader), a recipe or a master block (YAML comments) moves no benchmark and
needs no changelog entry; a real change of a command, flag, environment variable or value does.
On a git copy of the 2026-10 tree, for the key of InferenceX PR #3750."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from support import git

from relpipe.pipeline.cli import main as cli

KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"
E2E = "inferencex-e2e"
SCRIPT = f"{E2E}/benchmarks/srt_agentic.sh"
RECIPE = (
    f"{E2E}/benchmarks/single_node/srt-slurm-recipes/minimaxm3/atom/mi355x-fp4-mtp/agentic.yaml"
)
MASTER = f"{E2E}/configs/amd-master.yaml"


@pytest.fixture(scope="module")
def tree(inferencex_tree_2026_10: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("semantic") / "InferenceX"
    shutil.copytree(inferencex_tree_2026_10, root, symlinks=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def _required(tree: Path, path: str, edit: Callable[[str], str], capsys) -> dict:
    file = tree / path
    before = file.read_text()
    after = edit(before)
    assert after != before
    file.write_text(after)
    try:
        code = cli(["review", "--repo", str(tree), "--check", "changelog-required", "--json"])
        (check,) = json.loads(capsys.readouterr().out)["checks"]
    finally:
        git(tree, "checkout", "--", path)
    assert code == (1 if check["status"] == "FAIL" else 0)
    return check


def _line(text: str, needle: str, new: str) -> str:
    assert needle in text
    return text.replace(needle, new, 1)


NO_ENTRY_NEEDED = {
    "script: a comment": (
        SCRIPT,
        lambda t: _line(t, "exec env", "# launch the AgentX client\nexec env"),
    ),
    "script: whitespace": (SCRIPT, lambda t: _line(t, "exec env", "\n\n   exec   env")),
    "recipe: a YAML comment": (
        RECIPE,
        lambda t: _line(t, "  engine: atom\n", "  engine: atom  # the engine\n  # more\n"),
    ),
    "master block: a YAML comment": (
        MASTER,
        lambda t: _line(t, f"{KEY}:\n  image:", f"{KEY}:\n  # bumped weekly\n  image:"),
    ),
}
ENTRY_NEEDED = {
    "script: an environment variable": (
        SCRIPT,
        lambda t: _line(
            t, "exec env PYTHONSAFEPATH=1", "exec env PYTHONSAFEPATH=1 NCCL_DEBUG=INFO"
        ),
    ),
    "script: a command": (SCRIPT, lambda t: _line(t, "exec env", "ulimit -n 65536\nexec env")),
    "script: a flag": (SCRIPT, lambda t: _line(t, 'agentic "$@"', 'agentic --verbose "$@"')),
    "recipe: a value": (RECIPE, lambda t: _line(t, "gpus_per_node: 8", "gpus_per_node: 4")),
    "master block: the image": (
        MASTER,
        lambda t: _line(t, "nightly_202609281543", "nightly_202610070333"),
    ),
}


@pytest.mark.parametrize("case", NO_ENTRY_NEEDED)
def test_a_comment_or_whitespace_edit_needs_no_entry(tree: Path, case: str, capsys) -> None:
    path, edit = NO_ENTRY_NEEDED[case]
    check = _required(tree, path, edit, capsys)
    assert check["status"] == "N/A", check
    assert check["reason"] == "the change affects no config key's benchmark"


@pytest.mark.parametrize("case", ENTRY_NEEDED)
def test_a_real_change_needs_an_entry(tree: Path, case: str, capsys) -> None:
    path, edit = ENTRY_NEEDED[case]
    check = _required(tree, path, edit, capsys)
    assert check["status"] == "FAIL", check
    assert "no inferencex-e2e/perf-changelog.yaml entry appended" in check["reason"]
    rows = [(where, what) for where, what in check["evidence"] if what.startswith(f"{KEY}:")]
    assert rows and all(where.startswith(path) for where, _ in rows), check["evidence"]
