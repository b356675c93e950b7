"""`relpipe doctor` on the real trees: the repository's own validator, matrix validation and
generator (in InferenceX's own environment) agree with relpipe on both layouts, and a rule or a
field the repository adds is printed as a disagreement."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
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


def _copy_with_validator_tail(tree: Path, tmp_path: Path, tail: str) -> Path:
    """A copy of `tree` whose validator ends with `tail` (code the doctor will run)."""
    repo = tmp_path / "InferenceX"
    shutil.copytree(tree, repo)
    with open(repo / VALIDATOR, "a") as handle:
        handle.write(tail)
    return repo


def _doctor(repo: Path, python: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = cli(["doctor", "--repo", str(repo), "--python", python, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_agree_on_2026_08_and_incomplete_on_the_2026_10_reconstruction(
    inferencex_tree: Path,
    inferencex_tree_2026_10: Path,
    oracle_python: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, old = _doctor(inferencex_tree, oracle_python, capsys)
    assert (code, old["layout"], old["outcome"]) == (0, "2026-08", "agree")
    assert old["disagreements"] == []
    assert old["compared"][0] == "8 changelog case(s)" and old["compared"][2].startswith("points")
    assert old["skipped"] == []
    code, new = _doctor(inferencex_tree_2026_10, oracle_python, capsys)
    # The reconstruction has no sweep generator: nothing differs in what was compared, but the
    # points were not compared, so the outcome is incomplete (exit 1), never "agree".
    assert (code, new["layout"], new["outcome"], new["disagreements"]) == (
        1,
        "2026-10",
        "incomplete",
        [],
    )
    assert new["skipped"] == [
        "points: ModuleNotFoundError: No module named 'generate_sweep_configs'"
    ]
    assert int(new["compared"][1].split()[0]) >= 40  # the 2026-10 models' master fields
    assert not any(c.startswith("points") for c in new["compared"])
    assert cli(["doctor", "--repo", str(inferencex_tree_2026_10), "--python", oracle_python]) == 1
    out = capsys.readouterr().out.splitlines()
    reason = "ModuleNotFoundError: No module named 'generate_sweep_configs'"
    assert f"not compared: points: {reason}" in out
    assert out[-1] == (
        "relpipe and the repository: incomplete (1 part(s) not compared: points; "
        "no disagreement in the rest)"
    )
    assert not any("agree (" in line for line in out)


def test_a_rule_and_a_field_the_repository_adds_are_printed(
    inferencex_tree_2026_10: Path,
    oracle_python: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo = _copy_with_validator_tail(inferencex_tree_2026_10, tmp_path, NEW_RULE)
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
        said = capsys.readouterr().err.strip().splitlines()
        # progress while it builds (a line every 10 s), then the error in one line
        assert said[0].startswith("relpipe doctor: building its Python (pydantic>=2.7,<3 ")
        assert said[-2].startswith("relpipe doctor: building its Python") and "stopped" in said[-2]
        err = said[-1]
        assert "cannot build the doctor's venv (pydantic>=2.7,<3 PyYAML>=6.0): ERROR: No" in err
        assert err.endswith("give --python PY") and "Traceback" not in err
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


LEAK_PROBE = """

import json as _json, os as _os
with open({seen!r}, "w") as _handle:
    _seen = {{"env": dict(_os.environ), "home_files": _os.listdir(_os.environ["HOME"])}}
    _json.dump(_seen, _handle)
open(_os.path.join(_os.environ["HOME"], "left-behind"), "w").close()
"""


def test_the_repositorys_code_gets_no_credentials_and_a_temporary_home(
    inferencex_tree_2026_10: Path,
    oracle_python: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 34 item 7: the validator doctor runs sees none of the user's secrets, whatever they
    are called, and a HOME that is not the user's and is gone afterwards."""
    seen = tmp_path / "seen.json"
    repo = _copy_with_validator_tail(
        inferencex_tree_2026_10, tmp_path, LEAK_PROBE.format(seen=str(seen))
    )
    secrets = {
        "GITHUB_TOKEN": "ghp_secret1",
        "GH_TOKEN": "gho_secret2",
        "RELPIPE_REGISTRY_PASSWORD": "secret3",
        "RELPIPE_HISTORY": "postgresql://u:secret4@127.0.0.1/h",
        "AWS_SECRET_ACCESS_KEY": "secret5",
        "SOME_NEW_CI_VARIABLE": "secret6",
        "PYTHONPATH": str(tmp_path),
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LANG", "C.UTF-8")
    code, doc = _doctor(repo, oracle_python, capsys)
    assert (code, doc["outcome"], doc["disagreements"]) == (1, "incomplete", [])
    got = json.loads(seen.read_text())
    env = got["env"]
    assert not set(secrets) & set(env)
    assert not any(value in json.dumps(env) for value in secrets.values())
    assert set(env) <= {*doctor.PASSED_ENV, "HOME", "TMPDIR", "PYTHONDONTWRITEBYTECODE"}
    assert env["LANG"] == "C.UTF-8" and env["TMPDIR"] == env["HOME"]
    home = Path(env["HOME"])
    assert home != Path.home() and got["home_files"] == []
    assert not home.exists()  # removed with what the code wrote there


HANGING_VALIDATOR = """

import os as _os, subprocess as _subprocess, time as _time
_child = _subprocess.Popen(["sleep", "300"])
with open({pids!r}, "w") as _handle:
    _handle.write(f"{{_os.getpid()}} {{_child.pid}}")
_time.sleep(300)
"""


def _running(pid: int) -> bool:
    """The process exists and is not a zombie waiting for a parent that never reaps it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat.rpartition(b")")[2].split()[:1] != [b"Z"]


def test_a_timeout_kills_the_repositorys_code_and_every_child_it_started(
    inferencex_tree_2026_10: Path,
    oracle_python: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pids = tmp_path / "pids"
    repo = _copy_with_validator_tail(
        inferencex_tree_2026_10, tmp_path, HANGING_VALIDATOR.format(pids=str(pids))
    )
    code = cli(["doctor", "--repo", str(repo), "--python", oracle_python, "--timeout", "3"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert err.endswith("did not finish in 3 s; killed"), err
    probe, child = (int(p) for p in pids.read_text().split())
    for _ in range(50):  # SIGKILL is delivered at once; the orphan's reaping may lag
        if not (_running(probe) or _running(child)):
            break
        time.sleep(0.1)
    assert not _running(probe) and not _running(child)


def test_doctor_help_says_it_runs_the_repositorys_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        cli(["doctor", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Runs the repository's own code" in text
    assert "no tokens or credentials" in text and "a temporary HOME" in text
    assert "--timeout S" in text and "process group is killed" in text


def test_a_repository_without_a_validator_of_its_own_has_nothing_to_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example repository says in .relpipe.toml that it has no validator: doctor runs
    nothing, says so, and does not stop the nightly workflow (exit 0), but never says agree."""
    repo = tmp_path / "benchmark-repo"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "benchmark-repo", repo)
    assert cli(["doctor", "--repo", str(repo), "--python", "python3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == (
        "relpipe and the repository: nothing to compare (everything: the repository declares "
        "no validator (.relpipe.toml))"
    )
    assert not any("agree" in line for line in out)
    code, doc = _doctor(repo, "python3", capsys)
    assert (code, doc["outcome"], doc["agree"]) == (0, "nothing to compare", False)
