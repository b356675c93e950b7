"""`relpipe history` as a user meets it, on ATOM's real dashboards: one noise model whatever the
filter, safe defaults (no store created by a reader, unknown series named, `| head` quiet), units
and tables, `series`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import corpus
import pytest

from relpipe.pipeline import cli

SERIES = "ATOM::DeepSeek-V4-Pro MTP3"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    dashboards = corpus.results_dir() / "atom-dashboards"
    path = str(tmp_path_factory.mktemp("store") / "h.sqlite")
    for name in ("benchmark-dashboard.js", "atomesh-accuracy-dashboard.js"):
        assert cli.main(["history", "ingest", "--history", path, str(dashboards / name)]) == 0
    return path


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = cli.main(["history", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_series_filter_changes_what_is_printed_never_the_verdict(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, everything = _json(capsys, "regressions", "--history", db, "--every", "--all-points")
    _, one = _json(
        capsys, "regressions", "--history", db, "--every", "--all-points", "--series", SERIES
    )

    def verdicts(doc: dict) -> dict:
        return {
            (f["point"], f["metric"], f["old_commit"], f["new_commit"]): (f["kind"], f["band"])
            for f in doc["findings"]
            if f["series"] == SERIES
        }

    assert verdicts(one) and verdicts(one) == verdicts(everything)
    assert {f["series"] for f in one["findings"]} == {SERIES}
    # the band was learned from the whole store: a series this short has too few pairs alone
    assert any("of this metric everywhere" in f["band_source"] for f in one["findings"])


def test_every_value_has_its_unit_in_json_and_text(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, doc = _json(capsys, "regressions", "--history", db, "--all-points", "--series", SERIES)
    units = {(f["metric"], f["unit"]) for f in doc["findings"]}
    assert {("throughput", "tok/s"), ("tpot", "ms"), ("ttft", "ms")} <= units
    assert ("acceptance_rate", "fraction") in units
    assert all(f["unit"] for f in doc["findings"])
    assert cli.main(["history", "regressions", "--history", db, "--series", SERIES]) == 1
    text = capsys.readouterr().out
    assert "point" in text and "verdict" in text and " ms " in text


def test_series_lists_what_is_stored(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _json(capsys, "series", "--history", db)
    names = {s["series"]: s for s in doc["series"]}
    assert code == 0 and SERIES in names and names[SERIES]["runs"] >= 3
    assert cli.main(["history", "series", "--history", db]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["series", "points", "metrics"]
    assert lines[-1] == f"{len(names)} series in {db}"


def test_a_store_that_does_not_exist_is_exit_2_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope" / "h.sqlite"
    for action in ("regressions", "series", "report"):
        assert cli.main(["history", action, "--history", str(missing)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "no results store at" in err[0]
    assert not missing.parent.exists()


def test_an_unknown_series_is_exit_2_naming_close_matches(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = "ATOM::DeepSeek-V4-Pro MTP33"
    assert cli.main(["history", "regressions", "--history", db, "--series", typo]) == 2
    err = capsys.readouterr().err.strip()
    assert f"no series {typo!r}" in err and f"did you mean '{SERIES}'" in err


def test_a_closed_stdout_ends_quietly(db: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.environ.get("RELPIPE_SRC", os.getcwd())}
    argv = [sys.executable, "-m", "relpipe.pipeline", "history", "regressions", "--history", db]
    proc = subprocess.Popen(
        [*argv, "--every", "--all-points"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # what `| head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert err == ""


def test_bisect_inside_one_image_narrows_by_the_recorded_runs(
    atom_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ATOM's May dashboard: GOOD 6619cc7d and BAD d41076e5 both ran on nightly_202605181640; the
    runs between them narrow the Qwen3.5 MTP collapse to one commit, ranked for its model."""
    may = corpus.results_dir() / "atom-dashboards" / "benchmark-dashboard-2026-05-23.js"
    db = str(tmp_path / "may.sqlite")
    assert cli.main(["history", "ingest", "--history", db, str(may)]) == 0
    capsys.readouterr()
    argv = ["bisect", "--config-key", "qwen3.5-fp8-mi355x-atom-mtp", "--engine-repo"]
    argv += [str(atom_repo), "--history", db, "--series", "ATOM::Qwen3.5-397B-A17B-FP8 MTP"]
    assert cli.main([*argv, "--json", "6619cc7d", "d41076e5"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["good"][:8], doc["bad"][:8], doc["commits"]) == ("6619cc7d", "0bb75144", 1)
    assert doc["next_probe"] is None and doc["measured"] >= 3
    (culprit,) = doc["suspects"]["culprits"]
    assert culprit["pr"] == 817 and "draft-model" in culprit["on_path"]
    # BAD before GOOD is one line, exit 2
    assert cli.main([*argv, "d41076e5", "6619cc7d"]) == 2
    assert "does not descend from GOOD" in capsys.readouterr().err
