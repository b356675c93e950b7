"""`relpipe doctor` on the real trees: the repository's own validator, matrix validation and
generator (in InferenceX's own environment) agree with relpipe on both layouts, and a rule or a
field the repository adds is printed as a disagreement."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from relpipe.pipeline.cli import main as cli

VALIDATOR = "inferencex-e2e/infx/workflows/validate_perf_changelog.py"
MATRIX = "inferencex-e2e/infx/matrix/validation.py"
NEW_RULE = """

_compare_without_the_new_rule = compare_entries


def compare_entries(base_entries, head_entries, pr_number):
    additions, corrections = _compare_without_the_new_rule(base_entries, head_entries, pr_number)
    for entry in additions:
        if "reviewed-by" not in entry:
            raise ChangelogValidationError("a new entry needs reviewed-by")
    return additions, corrections
"""


def _doctor(repo: Path, python: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = cli(["doctor", "--repo", str(repo), "--python", python, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_no_disagreement_on_either_tree(
    inferencex_tree: Path,
    inferencex_tree_2026_10: Path,
    oracle_python: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, old = _doctor(inferencex_tree, oracle_python, capsys)
    assert (code, old["layout"], old["disagreements"]) == (0, "2026-08", [])
    assert old["compared"][0] == "8 changelog case(s)" and old["compared"][2].startswith("points")
    code, new = _doctor(inferencex_tree_2026_10, oracle_python, capsys)
    assert (code, new["layout"], new["disagreements"]) == (0, "2026-10", [])
    # The reconstruction has no sweep generator: said, not passed silently.
    assert new["skipped"] == [
        "points: ModuleNotFoundError: No module named 'generate_sweep_configs'"
    ]
    assert int(new["compared"][1].split()[0]) >= 40  # the 2026-10 models' master fields


def test_a_rule_and_a_field_the_repository_adds_are_printed(
    inferencex_tree_2026_10: Path,
    oracle_python: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo = tmp_path / "InferenceX"
    shutil.copytree(inferencex_tree_2026_10, repo)
    with open(repo / VALIDATOR, "a") as handle:
        handle.write(NEW_RULE)
    matrix = repo / MATRIX
    text = matrix.read_text()
    at = text.index(
        "    tp: int | None = None\n", text.index("class AgenticCodingSearchSpaceEntry(")
    )
    field = '    warmup_policy: str | None = Field(default=None, alias="warmup-policy")\n'
    matrix.write_text(text[:at] + field + text[at:])
    assert cli(["doctor", "--repo", str(repo), "--python", oracle_python]) == 1
    out = capsys.readouterr().out.splitlines()
    assert (
        "verdict: entry 1101: repository: rejects (ChangelogValidationError: a new entry needs "
        "reviewed-by); relpipe: accepts"
    ) in out
    assert sum(line.startswith("verdict: entry ") for line in out) == 5
    assert "field: warmup-policy: repository: a master-config field; relpipe: unknown" in out
    assert out[-1] == "relpipe and the repository disagree (6 disagreement(s))"


def test_a_repository_of_no_known_layout_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(["doctor", "--repo", str(tmp_path), "--python", "python3"]) == 2
    err = capsys.readouterr().err.strip()
    assert "not an InferenceX checkout: looked for configs/*-master.yaml" in err
    assert "\n" not in err
