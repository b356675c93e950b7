"""A run is (image, engine commit), never a file name: same-named artifacts of two nights are two
runs, the same content twice is one; bad input is recorded as what it is, nothing stored is lost."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import corpus
import pytest

from relpipe.changelog.results import ingest, regressions, store
from relpipe.changelog.results.records import AMBIGUOUS, OK
from relpipe.pipeline import cli

NAME = (
    "kimik2.5_1k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc4_MI355-gbt350-odcdh5-wbb3"
)
SCALE = 0.36  # the second night's throughput: a 64 % drop


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two nights of one sweep, each folder holding `NAME.json` and `agg_NAME.json`: the real
    artifacts, then the same names with another image, a later date and 64 % less throughput."""
    src = corpus.results_dir() / "inferencex"
    root = tmp_path_factory.mktemp("nights")
    one, two = root / "night1", root / "night2"
    one.mkdir()
    two.mkdir()
    for name in (f"{NAME}.json", f"agg_{NAME}.json"):
        shutil.copy(src / name, one / name)
    raw = json.loads((src / f"{NAME}.json").read_text())
    agg = json.loads((src / f"agg_{NAME}.json").read_text())
    raw["date"] = "20260603-075026"
    for key in ("output_throughput", "total_token_throughput"):
        raw[key] *= SCALE
    agg["image"] = "vllm/vllm-openai-rocm:v0.22.0"
    for key in ("tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu"):
        agg[key] *= SCALE
    (two / f"{NAME}.json").write_text(json.dumps(raw))
    (two / f"agg_{NAME}.json").write_text(json.dumps(agg))
    return root


def test_same_named_artifacts_of_two_images_are_both_stored_and_the_drop_reported(
    nights: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "h.sqlite")
    added = []
    for night in ("night1", "night2"):
        assert cli.main(["history", "ingest", "--json", "--history", db, str(nights / night)]) == 0
        added.append(json.loads(capsys.readouterr().out)["added"])
    assert added == [13, 13]  # every agg metric of each night, none lost to the shared name
    # both nights in one ingest: each stored, the shared name with two contents said in one line
    both = ingest.ingest([nights / "night1", nights / "night2"])
    assert len(both.samples) == 26
    assert [n.split(": ", 1)[1][:48] for n in both.notes if "same name" in n] == [
        "same name as another file read, different conten"
    ] * 2  # the raw file and its agg_ row
    # the same content again, from another folder: nothing new
    copy = tmp_path / "elsewhere"
    shutil.copytree(nights / "night2", copy)
    assert cli.main(["history", "ingest", "--json", "--history", db, str(copy)]) == 0
    assert json.loads(capsys.readouterr().out)["added"] == 0
    assert cli.main(["history", "regressions", "--json", "--history", db]) == 1
    doc = json.loads(capsys.readouterr().out)
    drop = [f for f in doc["findings"] if f["metric"] == "tput_per_gpu"]
    assert [(f["kind"], f["old_image"], f["new_image"], f["unit"]) for f in drop] == [
        (
            "regression",
            "vllm/vllm-openai-rocm:v0.21.0",
            "vllm/vllm-openai-rocm:v0.22.0",
            "tok/s/gpu",
        )
    ]
    assert drop[0]["change"] == pytest.approx(SCALE - 1)


def _dashboard(entries: list[dict[str, object]]) -> str:
    return "window.BENCHMARK_DATA = " + json.dumps({"entries": {"Benchmark": entries}})


def _entry(commit: object, date: object, value: object) -> dict[str, object]:
    extra = "Run: https://x/actions/runs/7 | Docker: rocm/atom-dev:nightly_202601010000"
    bench = {"name": "A::M 1024/1024 c=4 throughput (tok/s)", "value": value, "unit": "tok/s"}
    return {"commit": commit, "date": date, "benches": [{**bench, "extra": extra}]}


def test_bad_commit_fields_and_numbers_are_recorded_as_what_they_are(tmp_path: Path) -> None:
    path = tmp_path / "data.js"
    late = 2**53  # within the bounded-number policy, but no time in milliseconds
    path.write_text(
        _dashboard(
            [
                _entry({"id": "a" * 40}, 1000, 100.0),
                _entry({}, 2000, 101.0),  # no commit id
                _entry({"id": "not a sha; $(rm -rf)"}, 3000, 99.0),  # malformed
                _entry("a string, not an object", 4000, 100.0),
                _entry({"id": "b" * 40}, late, 98.0),  # a date beyond any time
                _entry({"id": "c" * 40}, 6000, "fast"),  # a value that is no number
            ]
        ),
        encoding="utf-8",
    )
    got = ingest.ingest([path])
    assert got.rejected == []
    by_seq = {s.seq: s for s in got.samples}
    assert by_seq[1000].image.engine_commit == "a" * 40
    assert by_seq[2000].image.engine_commit is None and by_seq[2000].status == OK
    assert by_seq[3000].image.engine_commit is None
    assert by_seq[0].value == 98.0  # the run kept, ordered first: its date is no time
    value = by_seq[6000]
    assert (value.status, value.value) == (AMBIGUOUS, None)
    assert "not a number" in value.note
    assert [line.split(": ", 1)[1] for line in got.notes] == [
        "entry 1: no commit id: its runs are identified by image only",
        "entry 2: commit id 'not a sha; $(rm -rf)' is not a git sha: ignored, runs keyed by image",
        "entry 3: no commit id: its runs are identified by image only",
        f"entry 4: date '{late}' is not a time in milliseconds: ordered first",
    ]
    # stored, read back, nothing duplicated by a second ingest
    with store.open_store(str(tmp_path / "h.sqlite")) as db:
        assert db.add(got.samples) == 6
        assert db.add(ingest.ingest([path]).samples) == 0
        assert db.count() == 6
    # A number outside the bounded-number policy (core.numbers: a date of 10**20, a value no
    # float holds) refuses the file with one line (issue 34.3: both were exit 3).
    for date, number in ((10**20, 98.0), (6000, 10**400)):
        path.write_text(_dashboard([_entry({"id": "b" * 40}, date, number)]), encoding="utf-8")
        got = ingest.ingest([path])
        assert got.samples == [] and [r.reason for r in got.rejected] == [
            f"{str(date if date > 6000 else number)[:12]}... ({len(str(max(date, int(number))))}"
            " digits) is out of range (relpipe reads finite numbers up to 2**53)"
        ]


def test_an_artifact_without_an_image_is_ambiguous_with_one_line(tmp_path: Path) -> None:
    src = corpus.results_dir() / "inferencex" / f"agg_{NAME}.json"
    row = json.loads(src.read_text())
    del row["image"]
    path = tmp_path / f"agg_{NAME}.json"
    path.write_text(json.dumps(row))
    got = ingest.ingest([path])
    assert {s.status for s in got.samples} == {AMBIGUOUS}
    assert got.notes == [
        f"{path}: the artifact names no image: its results cannot be attributed; "
        "kept as ambiguous, never compared"
    ]
    assert regressions.compare(got.samples, all_points=True) == []
