"""A qualification compared with the results store: record the run's results, then compare the
image with the previous image of its config key (verdict checks C11 performance, C12
accuracy/acceptance).

The store is `$RELPIPE_HISTORY`, else `<state>/history.sqlite` (the benchmark repository's
`.relpipe/`). What the comparison found is written to the run record (`history.json`), so a
re-rendered verdict reads it back instead of asking a history that has moved on since.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..changelog.results import qualification, regressions, store
from ..changelog.results.records import ACCURACY
from ..core import jsoncodec
from ..core.files import write_atomic
from ..core.status import NA, PASS, Status
from .outputs import OK_NA
from .runrecord import read_json

RECORD_FILE = "history.json"


@dataclass(frozen=True, kw_only=True)
class Trend:
    """One point and metric of the key across images (the report's chart): medians, oldest first."""

    point: str
    metric: str
    images: tuple[str, ...]
    values: tuple[float, ...]
    band: float | None  # relative


@dataclass(frozen=True, kw_only=True)
class HistoryOutput:
    status: Status = field(metadata=OK_NA)
    reason: str = ""
    store: str = ""
    image: str = ""  # the image under test as the history names it (marked in the charts)
    findings: tuple[regressions.PointChange, ...] = ()
    trends: tuple[Trend, ...] = ()


def notes_rows(out: HistoryOutput | None) -> list[dict[str, Any]]:
    """The release notes' table: every point of the key, bands made relative like the change."""
    rows = []
    for f in out.findings if out is not None and out.status == PASS else ():
        band = _relative_band(f)
        rows.append(
            {
                "key": f.series,
                "point": f.point,
                "metric": f.metric,
                "old": f.old_value,
                "new": f.new_value,
                "change": f.change,
                "band": band,
                "verdict": f.kind,
            }
        )
    return rows


def history_url(state: Path) -> str:
    return os.environ.get(store.HISTORY_ENV) or str(state / "history.sqlite")


def compare_run(report: Mapping[str, Any], *, run_id: str, state: Path) -> HistoryOutput:
    """Record the run's results in the history and compare its image with the one before it."""
    config = report.get("config") or {}
    key = config.get("key") if isinstance(config, Mapping) else None
    if not key:
        return HistoryOutput(status=NA, reason="no config key: nothing to compare with")
    image = qualification.image_of(report)
    refs = [image.ref] + ([str(report["image"].get("ref"))] if report.get("image") else [])
    with store.open_store(history_url(state)) as db:
        db.add(qualification.samples(report, run=run_id))
        rows = db.measurements()  # the noise bands are learned from the whole store
        where = db.where
    findings = regressions.for_image(rows, series=key, images=refs)
    if findings is None:
        return HistoryOutput(status=NA, reason=f"no results of this image for {key}", store=where)
    bands = {(f.point, f.metric): _relative_band(f) for f in findings}
    trends = tuple(
        Trend(
            point=point,
            metric=metric,
            images=tuple(ref for ref, _ in values),
            values=tuple(v for _, v in values),
            band=bands.get((point, metric)),
        )
        for (point, metric), values in regressions.trend(rows, series=key, images=refs).items()
    )
    mine = next((r.image for r in rows if r.image in refs), image.ref)
    return HistoryOutput(
        status=PASS, store=where, image=mine, findings=tuple(findings), trends=trends
    )


def _relative_band(f: regressions.PointChange) -> float | None:
    if f.band is not None and f.metric_kind == ACCURACY:
        return f.band / f.old_value if f.old_value else None  # a score's band is absolute
    return f.band


def save(out: HistoryOutput, run_dir: Path) -> None:
    text = json.dumps(jsoncodec.to_json(out), indent=2, sort_keys=True) + "\n"
    write_atomic(run_dir / RECORD_FILE, text.encode())


def load(run_dir: Path) -> HistoryOutput | None:
    path = run_dir / RECORD_FILE
    if not path.is_file():
        return None
    # Untrusted like every record file: capped, bounded numbers, one line (read_json).
    return jsoncodec.from_json(
        HistoryOutput, read_json(path, "history comparison"), where=str(path)
    )
