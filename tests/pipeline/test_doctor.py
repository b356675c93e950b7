"""`relpipe doctor` on the real trees: the repository's own validator, matrix validation and
generator (in InferenceX's own environment) agree with relpipe on both layouts, and a rule or a
field the repository adds is printed as a disagreement."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from relpipe.pipeline import doctor
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
    assert "not an InferenceX checkout: looked for inferencex-e2e/configs/*-master.yaml" in err
    assert "\n" not in err


def test_without_python_the_doctor_builds_its_own_once_and_offline_says_so_in_one_line(
    inferencex_tree_2026_10: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No --python: the doctor makes a venv with the repository's dependencies, once. Where pip
    can reach no index (a machine offline), the run is one line naming the way out, and nothing
    half-built is taken for ready; the next run with an index builds it and keeps it."""
    monkeypatch.setattr(doctor, "CACHE", tmp_path / "doctor-cache")
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    with monkeypatch.context() as offline:
        offline.setenv("PIP_CONFIG_FILE", os.devnull)  # no mirror or find-links of this machine
        offline.setenv("PIP_NO_INDEX", "1")
        offline.delenv("PIP_FIND_LINKS", raising=False)
        assert cli(["doctor", "--repo", str(inferencex_tree_2026_10)]) == 2
        err = capsys.readouterr().err.strip()
        assert "cannot build the doctor's venv (pydantic>=2.7,<3 PyYAML>=6.0): ERROR: No" in err
        assert err.endswith("give --python PY") and "\n" not in err and "Traceback" not in err
        assert not list((tmp_path / "doctor-cache").glob("venv-*/.ready"))
    python = doctor.isolated_python(None)  # this machine's package index, as a user's
    assert Path(python).is_file() and list((tmp_path / "doctor-cache").glob("venv-*/.ready"))
    done = subprocess.run(
        [python, "-c", "import pydantic, yaml; print(pydantic.VERSION)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.startswith("2.")
    with monkeypatch.context() as offline:  # built once: no pip run the second time
        offline.setenv("PIP_NO_INDEX", "1")
        offline.setenv("PIP_CONFIG_FILE", os.devnull)
        assert doctor.isolated_python(None) == python
