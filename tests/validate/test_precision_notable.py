"""The upstream PRs a release names (issue 36), on ATOM's real history: commits that touch only
tests, docs, CI or another model's recipe are left out; a recipe of the released model stays;
how the facts write them is tests/pipeline/test_release_facts.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from relpipe.validate.precision import PrecisionReport
from relpipe.validate.precision.classify import diff
from relpipe.validate.precision.notable import notable

MINIMAX = "minimaxm3-fp4-mi355x-atom-agentic-mtp"
# ATOM between #1938 (cd577b9c1) and #1950 (d5ef6729e): 2e5168066 (#1939) touches only
# recipes/GLM-5.md, d5ef6729e (#1950) and 5b8c90044 (#1925) only CI files.
SPAN = ("cd577b9c12dc765c58dde00d1db733ce09f568d7", "d5ef6729e626")
# 673e6e016 (#1688): only recipes/atom_sglang/MiniMax-M3.md.
MINIMAX_RECIPE = "673e6e016f04"


@pytest.fixture(scope="module")
def span_report(atom_repo: Path) -> PrecisionReport:
    return diff(atom_repo, *SPAN)


def test_ci_docs_and_other_models_recipes_are_not_notable(span_report: PrecisionReport) -> None:
    prs = {c.pr for c in span_report.commits}
    assert {1939, 1950} <= prs
    kept = {c.pr for c in notable(span_report.commits, span_report.files, MINIMAX)}
    assert 1950 not in kept and 1939 not in kept  # CI only; GLM-5's recipe only
    assert kept and kept < prs  # the engine changes stay
    assert all(c.pr in kept for c in span_report.commits if c.pr in (1936, 1943))
    # For a GLM-5 key, GLM-5's own recipe is notable.
    assert 1939 in {
        c.pr for c in notable(span_report.commits, span_report.files, "glm5-fp8-mi355x-atom")
    }


def test_a_recipe_of_the_released_model_is_notable(atom_repo: Path) -> None:
    report = diff(atom_repo, f"{MINIMAX_RECIPE}~1", MINIMAX_RECIPE)
    (only,) = report.commits
    assert only.pr == 1688
    assert notable(report.commits, report.files, MINIMAX) == (only,)
    assert notable(report.commits, report.files, "dsr1-fp4-mi355x-atom") == ()


def test_commits_without_known_files_stay(span_report: PrecisionReport) -> None:
    assert notable(span_report.commits, (), MINIMAX) == tuple(span_report.commits)
