"""The results history: ingest of ATOM's 4 MB dashboard under 2 s; regressions over 100,000 stored
points under 1 s (read from SQLite + compare). Each is reported with the time of reading the same
input with `json.loads` (ingest) or of a bare `SELECT` of the same rows (regressions) as the
reference measured in the same run. Best of 3.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.timing import best  # noqa: E402

INGEST_TARGET_S = 2.0
REGRESSIONS_TARGET_S = 1.0
POINTS = 100_000


def dashboard() -> Path:
    base = Path(os.environ.get("RELPIPE_RESULTS", ROOT.parent / "shared" / "data" / "results"))
    return base / "atom-dashboards" / "benchmark-dashboard-2026-05-23.js"


def _synthetic() -> list:
    from relpipe.changelog.history.records import HIGHER, OK, PERF, Image, Sample

    out = []
    for i in range(POINTS):
        group, run = divmod(i, 50)
        out.append(
            Sample(
                series=f"series-{group % 40}",
                point=f"c={group // 40}",
                metric="throughput",
                kind=PERF,
                better=HIGHER,
                unit="tok/s",
                image=Image(ref=f"r:nightly_{run // 5}", tag=f"nightly_{run // 5}"),
                run=f"run-{run}",
                seq=run,
                status=OK,
                value=1000.0 + (i * 7919 % 97) / 10,
                source="bench",
            )
        )  # fmt: skip - one synthetic sample
    return out


def main() -> list[str]:
    from relpipe.changelog.history import ingest, regressions, store

    lines = []
    path = dashboard()
    with tempfile.TemporaryDirectory() as tmp:
        if path.is_file():

            def run_ingest() -> None:
                db_path = Path(tmp) / f"i{os.urandom(4).hex()}.sqlite"
                with store.open_store(str(db_path)) as db:
                    db.add(ingest.ingest([path]).samples)

            took = best(run_ingest, 3)
            ref = best(lambda: path.read_text(encoding="utf-8"), 3)
            verdict = "ok" if took < INGEST_TARGET_S else "MISS"
            lines.append(
                f"- ingest {path.name} ({path.stat().st_size:,} bytes) into SQLite: {took:.2f} s "
                f"(read alone {ref:.3f} s); target < {INGEST_TARGET_S} s: {verdict}"
            )
        else:
            lines.append(f"- ingest: skipped, no dashboard at {path}")
        db_path = Path(tmp) / "big.sqlite"
        with store.open_store(str(db_path)) as db:
            db.add(_synthetic())

        def run_regressions() -> None:
            with store.open_store(str(db_path)) as db:
                regressions.compare(db.measurements())

        took = best(run_regressions, 3)
        ref = best(lambda: sqlite3.connect(db_path).execute("SELECT * FROM results").fetchall(), 3)
        verdict = "ok" if took < REGRESSIONS_TARGET_S else "MISS"
        lines.append(
            f"- regressions over {POINTS:,} stored points: {took:.2f} s (bare SELECT {ref:.3f} s); "
            f"target < {REGRESSIONS_TARGET_S} s: {verdict}"
        )
    return lines
