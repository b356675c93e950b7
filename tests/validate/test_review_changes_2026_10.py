"""`relpipe review` on base -> head changes of a git copy of the 2026-10 tree (the base of PR
#3750, `inferencex-e2e/` layout, srt-slurm recipes): an image bump with and without its changelog
entry, an engine patch in the key's cluster hook, a duplicate key in the key's recipe."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest
from support import git

from relpipe.pipeline.cli import main as cli

KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"
E2E = "inferencex-e2e"
MASTER = f"{E2E}/configs/amd-master.yaml"
RECIPE = (
    f"{E2E}/benchmarks/single_node/srt-slurm-recipes/minimaxm3/atom/mi355x-fp4-mtp/agentic.yaml"
)
HOOK = f"{E2E}/runners/srt-slurm/hooks/mi355x-amds/setup.sh"  # the cluster's srt-slurm hook
CHANGELOG = f"{E2E}/perf-changelog.yaml"
OLD_IMAGE = "  image: rocm/atom-dev:nightly_202609281543\n  model: amd/MiniMax-M3-MXFP4"
NEW_IMAGE = OLD_IMAGE.replace("202609281543", "202610070333")


@pytest.fixture(scope="module")
def tree(inferencex_tree_2026_10: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("ix2610") / "InferenceX"
    skip = {"_derived", "_versions"}  # the reconstruction's notes, not repository files
    shutil.copytree(
        inferencex_tree_2026_10,
        repo,
        symlinks=True,
        ignore=lambda folder, names: [n for n in names if n in skip],
    )
    derived = inferencex_tree_2026_10 / "_derived"
    shutil.copy2(derived / "perf-changelog.base-before-3750.yaml", repo / CHANGELOG)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base of #3750")
    return repo


@pytest.fixture
def change(tree: Path) -> Iterator[Path]:
    """A branch off main for one change; main's tree is restored after the test."""
    git(tree, "checkout", "-q", "-B", "change", "main")
    yield tree
    git(tree, "checkout", "-q", "-f", "main")
    git(tree, "clean", "-qfd")


def _review(repo: Path, *checks: str) -> tuple[int, dict]:
    out = StringIO()
    args = ["review", "--repo", str(repo), "--base-ref", "main", "--head-ref", "HEAD", "--json"]
    for c in checks:
        args += ["--check", c]
    with redirect_stdout(out):
        code = cli(args)
    return code, {c["id"]: c for c in json.loads(out.getvalue())["checks"]}


def _bump_image(repo: Path) -> int:
    master = repo / MASTER
    text = master.read_text()
    assert text.count(OLD_IMAGE) == 1
    master.write_text(text.replace(OLD_IMAGE, NEW_IMAGE))
    return text[: text.index(OLD_IMAGE)].count("\n") + 1  # the image line


def _insert(repo: Path, path: str, after: int, text: str) -> None:
    lines = (repo / path).read_text().splitlines(keepends=True)
    lines.insert(after, text + "\n")
    (repo / path).write_text("".join(lines))


def test_an_image_bump_without_a_changelog_entry_fails(change: Path) -> None:
    line = _bump_image(change)
    git(change, "commit", "-qam", "bump the image only")
    code, checks = _review(change, "changelog-required")
    record = checks["changelog-required"]
    assert code == 1 and record["status"] == "FAIL", record
    assert KEY in record["reason"]
    assert any(w == f"{MASTER}:{line}" for w, _ in record["evidence"]), record["evidence"]


def test_the_same_bump_with_its_changelog_entry_passes(
    change: Path, inferencex_tree_2026_10: Path
) -> None:
    _bump_image(change)
    shutil.copy2(
        inferencex_tree_2026_10 / "_derived" / "perf-changelog.head-3750.yaml", change / CHANGELOG
    )
    git(change, "commit", "-qam", "bump the image with entry 1089")
    code, checks = _review(change, "changelog-required")
    record = checks["changelog-required"]
    assert code == 0 and record["status"] == "PASS", record


def test_an_engine_patch_in_the_keys_cluster_hook_fails(change: Path) -> None:
    _insert(change, HOOK, 3, "git -C /opt/atom apply /tmp/atom-fix.patch")
    git(change, "commit", "-qam", "patch the engine in the hook")
    code, checks = _review(change, "engine-patches")
    record = checks["engine-patches"]
    assert code == 1 and record["status"] == "FAIL", record
    assert f"{HOOK}:4" in record["reason"]


def test_a_duplicate_key_in_the_keys_recipe_fails(change: Path) -> None:
    lines = (change / RECIPE).read_text().splitlines()
    n = lines.index("        max-num-seqs: 30")
    _insert(change, RECIPE, n + 1, "        max-num-seqs: 64")
    git(change, "commit", "-qam", "a second max-num-seqs")
    code, checks = _review(change, "yaml-keys")
    record = checks["yaml-keys"]
    assert code == 1 and record["status"] == "FAIL", record
    assert record["reason"].startswith(f"{RECIPE}:{n + 2}: duplicate key `max-num-seqs`")
    assert f"(first at line {n + 1})" in record["reason"]
