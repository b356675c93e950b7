"""The history store on SQLite and on a real PostgreSQL server: the same schema, the same answers.

Every test here runs twice (`history_url`: sqlite, postgresql) and requires what an in-memory
comparison of the same ingest gives, so the two backends agree with each other by construction.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from relpipe.changelog.results import regressions, store
from relpipe.changelog.results.records import HIGHER, OK, PERF, Image, Sample
from relpipe.pipeline import cli

ROOT = Path(__file__).resolve().parents[2]


def _sample(i: int, *, image: str = "r:nightly_1", value: float = 100.0, seq: int = 0) -> Sample:
    return Sample(
        series="s",
        point=f"c={i % 4}",
        metric="throughput",
        kind=PERF,
        better=HIGHER,
        unit="tok/s",
        image=Image(ref=image, tag=image.split(":")[-1]),
        run=f"run{i}",
        seq=seq or i,
        status=OK,
        value=value,
        source="test",
    )


def test_samples_round_trip_and_re_adding_adds_nothing(history_url: str) -> None:
    samples = [_sample(i, value=100.0 + i) for i in range(12)]
    with store.open_store(history_url) as db:
        assert db.add(samples) == 12
        assert db.add(samples) == 0
        back = db.samples()
    assert sorted(back, key=lambda s: s.id) == sorted(samples, key=lambda s: s.id)
    with store.open_store(history_url) as db:  # a second open migrates nothing again
        assert db.count() == 12


WRITER = """
import sys
from relpipe.changelog.results import store
from relpipe.changelog.results.records import OK, Image, Sample
url, who = sys.argv[1], int(sys.argv[2])
def s(run):
    return Sample(series="w", point="p", metric="m", kind="perf", better="higher", unit="",
                  image=Image(ref="r:t"), run=run, seq=1, status=OK, value=1.0, source="w")
with store.open_store(url) as db:
    for batch in range(10):
        db.add([s(f"{who}-{batch}-{i}") for i in range(20)] + [s(f"shared-{batch}")])
"""


def test_concurrent_writers_lose_nothing(history_url: str) -> None:
    with store.open_store(history_url):
        pass  # migrated once; the writers race on inserts only
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, history_url, str(who)]) for who in range(4)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    with store.open_store(history_url) as db:
        assert db.count() == 4 * 10 * 20 + 10


def test_store_gives_the_same_findings_as_the_samples_themselves(history_url: str) -> None:
    # image A: five runs around 100; image B: one run at 80 (a 20 % drop, far outside the noise)
    a = [
        _sample(i * 4, image="r:nightly_a", value=v, seq=i + 1)
        for i, v in enumerate([100, 101, 99, 100.5, 99.5, 100])
    ]
    b = [_sample(100, image="r:nightly_b", value=80.0, seq=50)]
    with store.open_store(history_url) as db:
        db.add(a + b)
        stored = db.samples()
        rows = db.measurements()  # the fast path: statuses selected as core Status values
    found = regressions.compare(stored)
    assert found == regressions.compare(a + b) == regressions.compare(rows)
    assert {s.status for s in stored} == {OK} and {r.status for r in rows} == {OK}
    assert [(f.kind, f.old_image, f.new_image, f.old_value, f.new_value) for f in found] == [
        ("regression", "r:nightly_a", "r:nightly_b", 100.0, 80.0)
    ]


def test_cli_ingest_and_regressions_json(history_url: str, tmp_path: Path) -> None:
    dash = tmp_path / "data.js"
    dash.write_text(_dashboard([0.95, 0.951, 0.949, 0.95, 0.952, 0.70]), encoding="utf-8")
    assert cli.main(["history", "ingest", "--history", history_url, str(dash)]) == 0
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "relpipe.pipeline",
            "history",
            "regressions",
            "--json",
            "--history",
            history_url,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    kinds = sorted((f["kind"], f["new_image"], f["new_value"]) for f in doc["findings"])
    assert kinds == [
        ("below-threshold", "rocm/atom-dev:nightly_6", 0.7),
        ("regression", "rocm/atom-dev:nightly_6", 0.7),
    ]


def _dashboard(scores: list[float]) -> str:
    entries = []
    for i, score in enumerate(scores):
        image = "rocm/atom-dev:nightly_1" if i < len(scores) - 1 else "rocm/atom-dev:nightly_6"
        extra = f"Run: https://x/actions/runs/{i} | Threshold: 0.94 | Docker: {image}"
        bench = {
            "name": "ATOM::M accuracy (GSM8K)",
            "value": score,
            "unit": "score",
            "extra": extra,
        }
        entries.append({"commit": {"id": f"{i:040x}"}, "date": 1_000 + i, "benches": [bench]})
    return "window.BENCHMARK_DATA = " + json.dumps({"entries": {"Benchmark": entries}})
