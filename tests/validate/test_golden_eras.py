"""Golden acceptance length: where a key's golden AL comes from is a fact of the era
(`Era.acceptance`), and `relpipe review --check golden-al` and a release's C9 ask one function
(`validate.golden_al.verdict`) and give one verdict.

At the base of InferenceX PR #3750 (`tree-2026-10/`) no recipe sets the acceptance length of
`minimaxm3-fp4-mi355x-atom-agentic-mtp`: the srt-slurm harness injects the golden value (2.78 for
K=3, thinking on), which the run's `srt-single-node-submission.json` confirms and the
repository's own changelog states. InferenceX's reviewer passed check 11; so do both here. In the
2026-08 era the same missing setting is a FAIL of both."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from relpipe.core.status import FAIL, PASS
from relpipe.pipeline.cli import main as cli
from relpipe.pipeline.stages import golden_al_result
from relpipe.pipeline.verdict import Outcome, evaluate
from relpipe.pipeline.workspace import Workspace
from relpipe.validate import golden_al

KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"
HARNESS = "srt-slurm: infx/srt_slurm/synthetic_acceptance.py"


def _review(repo: Path, key: str, capsys: pytest.CaptureFixture[str]) -> dict:
    code = cli(
        ["review", "--repo", str(repo), "--config-key", key, "--check", "golden-al", "--json"]
    )
    (check,) = json.loads(capsys.readouterr().out)["checks"]
    assert code == (1 if check["status"] == "FAIL" else 0)
    return check


def _c9(repo: Path, key: str):
    (c9,) = [
        c
        for c in evaluate(Outcome(golden=golden_al_result(Workspace(repo), key))).checks
        if c.id == "C9"
    ]
    return c9


def test_the_harness_injects_the_golden_al_in_2026_10(
    inferencex_tree_2026_10: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = golden_al.verdict(inferencex_tree_2026_10, [KEY])
    assert found.status == PASS
    (row,) = found.rows
    assert (row.golden, row.configured, row.k, row.thinking, row.golden_file) == (
        golden_al.Decimal("2.78"),
        golden_al.Decimal("2.78"),
        3,
        "thinking_on",
        "minimaxm3_eagle3_gqa",
    )
    assert f"injected by the harness ({HARNESS})" in row.reason
    review = _review(inferencex_tree_2026_10, KEY, capsys)
    assert (review["status"], review["reason"]) == ("PASS", found.reason)
    c9 = _c9(inferencex_tree_2026_10, KEY)
    assert c9.status == PASS
    assert any("injected by the harness" in e.what for e in c9.evidence)


def test_without_a_harness_the_same_key_fails_review_and_c9_alike(
    inferencex_tree_2026_10: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same key, recipe and golden curve laid out as in 2026-08 (no harness injecting the
    value): no synthetic target, so FAIL, in the review and in C9, with one reason."""
    e2e = inferencex_tree_2026_10 / "inferencex-e2e"
    root = tmp_path / "ix"
    shutil.copytree(e2e / "configs", root / "configs")
    recipes = "benchmarks/single_node/srt-slurm-recipes/minimaxm3"
    shutil.copytree(e2e / recipes, root / recipes)
    shutil.copytree(e2e / "infx" / "golden_al_distribution", root / "golden_al_distribution")
    shutil.copy(e2e / "perf-changelog.yaml", root / "perf-changelog.yaml")
    found = golden_al.verdict(root, [KEY])
    assert found.status == FAIL
    assert "no synthetic target" in found.rows[0].reason
    assert (
        "their golden curve: minimaxm3_eagle3_gqa thinking_on K=3 AL 2.78" in found.rows[0].reason
    )
    review = _review(root, KEY, capsys)
    assert (review["status"], review["reason"]) == ("FAIL", found.reason)
    c9 = _c9(root, KEY)
    assert c9.status == FAIL and found.rows[0].reason in c9.reason
