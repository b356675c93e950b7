"""`relpipe review` in every InferenceX layout, on git copies of the real trees.

The acceptance case is PR #3750 on the 2026-10 tree, reviewed from the repository root: the base
is the reconstruction (changelog cut at `_derived/perf-changelog.base-before-3750.yaml`), the
head makes the PR's own changes (image bump, `ATOM_MONO_ENABLE=0` removed, the changelog entry).
InferenceX's reviewer decided 13 checks from the repository on that PR; every check whose files
exist must reach a decision here too (no N/A for a file that is there).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import git

from relpipe.pipeline.cli import main as cli

KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"
E2E = "inferencex-e2e"
RECIPE = (
    f"{E2E}/benchmarks/single_node/srt-slurm-recipes/minimaxm3/atom/mi355x-fp4-mtp/agentic.yaml"
)
# Checks whose input is not in the repository (a sign-off, results, a PR body), that do not
# apply to an ATOM key (upstream vLLM/SGLang images) or to an entry without `append-only`.
NOT_FROM_FILES = {"owners", "checklist", "pareto", "notes", "upstream-images", "append-only"}


@pytest.fixture(scope="module")
def pr3750(inferencex_tree_2026_10: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("pr3750") / "InferenceX"
    skip = {"_derived", "_versions"}  # the reconstruction's notes, not repository files
    shutil.copytree(
        inferencex_tree_2026_10,
        repo,
        symlinks=True,
        ignore=lambda folder, names: [n for n in names if n in skip],
    )
    derived = inferencex_tree_2026_10 / "_derived"
    changelog = repo / E2E / "perf-changelog.yaml"
    shutil.copy2(derived / "perf-changelog.base-before-3750.yaml", changelog)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base of #3750")
    git(repo, "tag", "base")
    shutil.copy2(derived / "perf-changelog.head-3750.yaml", changelog)
    master = repo / E2E / "configs" / "amd-master.yaml"
    master.write_text(
        master.read_text().replace(
            "  image: rocm/atom-dev:nightly_202609281543\n  model: amd/MiniMax-M3-MXFP4",
            "  image: rocm/atom-dev:nightly_202610070333\n  model: amd/MiniMax-M3-MXFP4",
        )
    )
    recipe = repo / RECIPE
    recipe.write_text(recipe.read_text().replace("        ATOM_MONO_ENABLE: '0'\n", ""))
    git(repo, "commit", "-q", "-am", "#3750")
    git(repo, "tag", "head")
    return repo


def _review(repo: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, dict]:
    code = cli(["review", "--repo", str(repo), "--json", *extra])
    out = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    return {c["id"]: c for c in out["checks"]}


def test_pr3750_from_the_repository_root(pr3750: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checks = _review(pr3750, capsys, "--config-key", KEY, "--base-ref", "base")  # head: checked out
    undecided = {cid for cid, c in checks.items() if c["status"] == "N/A"}
    assert undecided <= NOT_FROM_FILES, {cid: checks[cid]["reason"] for cid in undecided}
    assert not any("not in the repository" in c["reason"] for c in checks.values())
    for cid in ("deprecated", "arch-hacks", "chat-template", "engine-patches"):
        assert checks[cid]["status"] == "PASS", (cid, checks[cid])
    # No recipe sets the acceptance length: in this era the srt-slurm harness injects the golden
    # value itself (the repository's changelog says so; the run's submission JSON has
    # `spec-decode-acceptance-length=2.78`), so check 11 passes, as InferenceX's reviewer said.
    assert checks["golden-al"]["status"] == "PASS", checks["golden-al"]
    assert "inferencex-e2e/docs/MODELS.md" in checks["deprecated"]["reason"]
    chat = checks["chat-template"]["evidence"]
    assert [f"{RECIPE}:52", f"{KEY}: use_chat_template"] in chat
    golden = " ".join(what for _, what in checks["golden-al"]["evidence"])
    assert "AL 2.78 injected by the harness" in golden
    assert "golden 2.78 (minimaxm3_eagle3_gqa, thinking_on, K=3)" in golden
    assert "owners of 3 changed files listed" in checks["owners"]["reason"]
    assert "no new changelog entry says" in checks["append-only"]["reason"]


def test_inside_inferencex_e2e_is_the_same_review(
    pr3750: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _review(pr3750, capsys, "--config-key", KEY, "--check", "golden-al")
    inner = _review(pr3750 / E2E, capsys, "--config-key", KEY, "--check", "golden-al")
    assert root == inner and root["golden-al"]["status"] == "PASS"


def test_a_pre_2026_07_checkout_finds_its_keys(
    inferencex_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "old"
    repo.mkdir()
    for name in ("MODELS.md", "golden_al_distribution", "benchmarks", "runners", "docs"):
        shutil.copytree(inferencex_tree / name, repo / name, symlinks=True) if (
            inferencex_tree / name
        ).is_dir() else shutil.copy2(inferencex_tree / name, repo / name)
    shutil.copytree(inferencex_tree / "configs", repo / ".github" / "configs")
    key = "dsv4-fp4-mi355x-atom-agentic-mtp"
    checks = _review(repo, capsys, "--config-key", key)
    assert checks["golden-al"]["status"] == "PASS"
    assert checks["deprecated"]["status"] != "N/A"
    assert checks["arch-hacks"]["status"] != "N/A"


def test_json_lists_every_evidence_row(
    inferencex_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checks = _review(inferencex_tree, capsys, "--all-keys", "--check", "golden-al")
    rows = checks["golden-al"]["evidence"]
    assert len(rows) > 40
    assert not any("not shown" in what for _, what in rows)
    argv = ["review", "--repo", str(inferencex_tree), "--all-keys", "--check", "golden-al"]
    assert cli(argv) in (0, 1)
    assert "`--json` lists them all" in capsys.readouterr().out
