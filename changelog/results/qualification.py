"""relpipe's own qualification records (`report.json` of a run) as history samples.

One sample per eval result: the series is the run's config key, the point the eval's point, the
metric its suite; the image is the pinned digest with its tag and the probed engine version and
commit. A run is placed in history by the image's creation time (when the nightly was built),
which orders nightlies the way their tags do and is the same however often the image is
re-qualified. An eval that errored or has no score is a failed sample, never a zero measurement.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ...core import instant
from ...core.reference import split
from .records import (
    ACCURACY,
    FAILED,
    HIGHER,
    OK,
    Image,
    Sample,
    finite,
)

SOURCE = "relpipe:qualify"


def looks_like(row: Mapping[str, Any]) -> bool:
    return row.get("schema") == 1 and isinstance(row.get("evals"), list) and "image" in row


def image_of(report: Mapping[str, Any]) -> Image:
    image = report.get("image") or {}
    engine = ((report.get("facts") or {}).get("engine")) or {}
    ref, digest = str(image.get("ref") or ""), image.get("digest")
    written = split(ref)
    name, tag = written.name, written.tag
    return Image(
        ref=f"{name}@{digest}" if digest else ref,
        tag=tag or None,
        digest=digest if isinstance(digest, str) else None,
        engine_version=engine.get("version"),
        engine_commit=engine.get("commit"),
    )


def samples(report: Mapping[str, Any], *, run: str) -> list[Sample]:
    config = report.get("config") or {}
    key = config.get("key") if isinstance(config, Mapping) else None
    image = image_of(report)
    series = str(key or f"relpipe:{image.ref.split('@', 1)[0]}")
    seq = _created_ms((report.get("image") or {}).get("created"))
    out = []
    for ev in report["evals"]:
        if not isinstance(ev, Mapping):
            continue
        score: Any = ev.get("score")
        n: Any = ev.get("samples") or 0
        ok = finite(score) is not None and ev.get("status") != "error"
        note = "" if ok else f"eval {ev.get('status')}: {str(ev.get('reason') or 'no score')[:120]}"
        good = ok and isinstance(n, int) and n > 0 and 0 <= score <= 1
        se = math.sqrt(score * (1 - score) / n) if good else None
        out.append(
            Sample(
                series=series,
                point=str(ev.get("point") or f"batch{ev.get('batch')}"),
                metric=str(ev.get("suite")),
                kind=ACCURACY,
                better=HIGHER,
                unit=str(ev.get("metric") or ""),
                image=image,
                run=run,
                seq=seq,
                status=OK if ok else FAILED,
                value=float(score) if ok else None,
                se=se,
                threshold=ev.get("threshold")
                if isinstance(ev.get("threshold"), int | float)
                else None,
                note=note,
                source=SOURCE,
            )
        )
    return out


def _created_ms(text: object) -> int:
    """The image's created time as milliseconds (through `core.instant`: an offset is honoured,
    a time without a zone is no instant), 0 when there is none."""
    when = instant.parse_or_none(text)
    return 0 if when is None else instant.milliseconds(when)
