"""Hostile and broken result files: recorded as failed or ambiguous with one line, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

from relpipe.changelog.results import ingest, regressions
from relpipe.changelog.results.records import AMBIGUOUS, FAILED, OK
from relpipe.pipeline import cli


def _dash(benches_per_entry: list[list[dict[str, object]]], *, tail: str = "") -> str:
    entries = [
        {"commit": {"id": (f"{i:x}" * 40)[:40]}, "date": 1_000 + i, "benches": benches}
        for i, benches in enumerate(benches_per_entry)
    ]
    return "window.BENCHMARK_DATA = " + json.dumps({"entries": {"Benchmark": entries}}) + tail


def _bench(
    name: str, value: object, unit: str, docker: str, threshold: float = 0.9
) -> dict[str, object]:
    extra = f"Run: https://x/actions/runs/1 | Threshold: {threshold} | Docker: {docker}"
    return {"name": name, "value": value, "unit": unit, "extra": extra}


def test_hostile_dashboard_values_are_kept_as_what_they_are(tmp_path: Path) -> None:
    nightly = "rocm/atom-dev:nightly_202601010000"
    entry = [
        _bench("A::M accuracy (GSM8K)", 95.2, "score", nightly),  # percent written as a score
        _bench("A::M MTP acceptance (%)", 250.0, "%", nightly),
        _bench("A::M 1024/1024 c=4 throughput (tok/s)", 0, "tok/s", nightly),  # failed run
        _bench("A::N accuracy (GSM8K)", 0.9, "score", "rocm/atom-dev:latest"),  # no fixed image
        _bench("A::P 1024/1024 c=4 TTFT (ms)", "fast", "ms", nightly),
    ]
    path = tmp_path / "data.js"
    path.write_text(_dash([entry], tail=";\n"), encoding="utf-8")
    got = ingest.ingest([path])
    statuses = [(s.series, s.status) for s in got.samples]
    assert statuses == [("A::M", AMBIGUOUS), ("A::M", AMBIGUOUS), ("A::M", FAILED)] + [
        ("A::N", AMBIGUOUS),
        ("A::P", AMBIGUOUS),
    ]
    assert got.samples[0].note == "score 95.2 above 1: percent or fraction?"
    assert regressions.compare(got.samples, every=True) == []  # nothing here is a measurement


def test_threshold_changing_mid_series_judges_each_score_by_its_own_bar(tmp_path: Path) -> None:
    old, new = "rocm/atom-dev:nightly_1", "rocm/atom-dev:nightly_2"
    entries = [[_bench("A::M accuracy (GSM8K)", 0.935, "score", old, threshold=0.93)]]
    entries.append([_bench("A::M accuracy (GSM8K)", 0.935, "score", new, threshold=0.94)])
    path = tmp_path / "data.js"
    path.write_text(_dash(entries), encoding="utf-8")
    samples = ingest.ingest([path]).samples
    assert [s.threshold for s in samples] == [0.93, 0.94] and {s.status for s in samples} == {OK}
    found = regressions.compare(samples)
    assert [(f.kind, f.new_image) for f in found] == [("below-threshold", new)]


def test_unreadable_files_are_one_line_each_and_exit_1(tmp_path: Path, capsys) -> None:
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "nul.json").write_bytes(b'{"a": 1}\x00')
    (tmp_path / "other.json").write_text('{"hello": "world"}', encoding="utf-8")
    (tmp_path / "nan.json").write_text('{"max_concurrency": NaN}', encoding="utf-8")
    store = tmp_path / "h.sqlite"
    assert cli.main(["history", "ingest", "--history", str(store), str(tmp_path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 4
    assert any("nul.json: not ingested: contains a NUL byte" in line for line in err)
    assert any("nan.json: not ingested: NaN is not a number relpipe reads" in line for line in err)


def test_regressions_text_is_a_table_per_series_with_units(tmp_path: Path, capsys) -> None:
    old, new = "rocm/atom-dev:nightly_1", "rocm/atom-dev:nightly_2"
    runs = [
        [_bench("A::M 1024/1024 c=4 throughput (tok/s)", v, "tok/s", old)]
        for v in (100, 101, 99, 100, 100.5, 99.5)
    ]
    runs.append([_bench("A::M 1024/1024 c=4 throughput (tok/s)", 70, "tok/s", new)])
    path = tmp_path / "data.js"
    path.write_text(_dash(runs), encoding="utf-8")
    store = str(tmp_path / "h.sqlite")
    assert cli.main(["history", "ingest", "--history", store, str(path)]) == 0
    capsys.readouterr()
    assert cli.main(["history", "regressions", "--history", store]) == 1
    out = capsys.readouterr().out.splitlines()
    # each entry of _dash is its own engine commit: the runs compared are the last two
    assert out[1] == f"A::M: {old} @{'5' * 12} -> {new} @{'6' * 12}"
    assert out[2].split() == ["point", "metric", "old", "new", "change", "band", "verdict"]
    assert out[3].split()[:8] == [
        "1024/1024",
        "c=4",
        "throughput",
        "99.5",
        "tok/s",
        "70",
        "tok/s",
        "-29.6%",
    ]  # fmt: skip - one table row
    assert out[3].split()[-1] == "regression"
    assert out[-1] == f"1 findings (1 regression) in {store}"
