"""`relpipe history ingest PATH...`: read result files of every known kind into samples.

Kinds are recognised by content, never by name alone: ATOM dashboards (`window.BENCHMARK_DATA =`),
InferenceX raw results, `agg_` rows, AgentX aggregates, eval rows (a list), measured acceptance
per draft position, relpipe's own run reports (`report.json`). A folder is walked for `*.json`
and `*.js`. A file that cannot be read or has no known shape is one `Rejected` line, never a crash;
a file that is read but holds bad values becomes failed or ambiguous samples (records.py).

A sample's identity never includes a file name: an InferenceX artifact's run is the hash of its
bytes (two nights of a sweep write files of the same name: different content, different runs; the
same content ingested again, from wherever, is the same run), a dashboard's run is its entry (time
and CI run), a relpipe report's its run id.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core import jsonload
from ...core.files import read_capped
from ..errors import ChangelogError
from . import dashboards, inferencex, qualification
from .records import (
    AMBIGUOUS,
    FAILED,
    HIGHER,
    PERF,
    Image,
    Rejected,
    Sample,
)

MAX_FILE = 64 * 1024 * 1024
SUFFIXES = (".json", ".js")


@dataclass(kw_only=True)
class Ingested:
    samples: list[Sample] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # one line per file read with a remark
    files: int = 0
    contents: dict[str, str] = field(default_factory=dict)  # file name -> the first content read


def files_of(paths: Iterable[str | Path]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for root, dirs, names in os.walk(path):
                dirs.sort()
                for name in sorted(names):
                    if name.endswith(SUFFIXES):
                        yield Path(root) / name
        else:
            yield path


def ingest(paths: Iterable[str | Path]) -> Ingested:
    out = Ingested()
    for path in files_of(paths):
        out.files += 1
        try:
            _file(path, out)
        except (ChangelogError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            out.rejected.append(Rejected(source=str(path), reason=_why(exc)))
    return out


def _why(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 (byte {exc.start})"
    if isinstance(exc, KeyError):
        return f"field {exc.args[0]!r} missing"
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _file(path: Path, out: Ingested) -> None:
    # Regular files only, bounded: a FIFO or a device among the files blocked ingest forever.
    raw = read_capped(path, MAX_FILE, "result file", error=ChangelogError)
    if b"\x00" in raw:
        raise ValueError("contains a NUL byte; not a text file")
    text = raw.decode("utf-8")
    if dashboards.looks_like(text):
        data = dashboards.parse(text)
        repo = data.get("repoUrl")
        source = f"dashboard:{repo}" if isinstance(repo, str) and repo else "dashboard"
        problems: list[str] = []
        out.samples += dashboards.samples(data, source=source, problems=problems)
        out.notes += [f"{path}: {line}" for line in problems]
        return
    data = jsonload.loads(text)
    rows = data if isinstance(data, list) else [data]
    if not rows or not all(isinstance(r, dict) for r in rows):
        raise ValueError("not a result this tool knows (expected an object or a list of objects)")
    content = "sha256:" + hashlib.sha256(raw).hexdigest()[:16]
    seen = out.contents.setdefault(path.name, content)
    if seen != content:
        out.notes.append(
            f"{path}: same name as another file read, different content ({content} vs {seen}): "
            "a different run, stored as such"
        )
    for index, row in enumerate(rows):
        _row(path, row, content if index == 0 else f"{content}#{index}", out)


def _row(path: Path, row: dict[str, Any], run: str, out: Ingested) -> None:
    """One row of a file; `run` is the content's identity (its hash, and its index in a list)."""
    if qualification.looks_like(row):
        out.samples += qualification.samples(row, run=str(row.get("run") or run))
        return
    what = inferencex.kind_of(row)
    source = inferencex.SOURCE
    if what is None:
        raise ValueError(
            "not a result this tool knows (no dashboard, raw, agg, AgentX or eval shape)"
        )
    if what == "raw":
        _raw(path, row, run, out)
    elif what == "acceptance":
        series = path.parent.name
        out.samples += inferencex.acceptance_samples(row, source=source, run=run, series=series)
    else:
        seq = _seq_of(path, row)
        got = list(inferencex.samples(row, source=source, run=run, seq=seq))
        if got and got[0].status == AMBIGUOUS and got[0].image.ref == "unknown":
            out.notes.append(f"{path}: {got[0].note}; kept as ambiguous, never compared")
        out.samples += got


def _seq_of(path: Path, row: dict[str, Any]) -> int:
    """When an agg row was measured: its raw sibling's `date` (the agg row has none)."""
    sibling = path.with_name(path.name.removeprefix("agg_"))
    if sibling != path and sibling.is_file():
        try:
            raw = jsonload.loads(sibling.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return 0
        return inferencex.stamp(raw.get("date")) or 0 if isinstance(raw, dict) else 0
    return 0


def _raw(path: Path, raw: dict[str, Any], run: str, out: Ingested) -> None:
    """A raw result: checked against its `agg_` sibling, or recorded as failed / ambiguous."""
    agg_path = path.with_name(f"agg_{path.name}")
    if agg_path.is_file():
        agg = jsonload.loads(agg_path.read_text(encoding="utf-8"))
        mismatch = _agg_mismatch(raw, agg)
        if mismatch:
            out.notes.append(f"{path}: its agg_ row disagrees with process_result.py on {mismatch}")
        return  # the agg row is the record
    conc = raw.get("max_concurrency")
    failed = not raw.get("completed")
    note = (
        f"completed: {raw.get('completed')!r} of {raw.get('num_prompts')!r} requests: "
        "the point failed"
        if failed
        else "raw result without its agg_ row: no image or config to attribute it to"
    )
    out.notes.append(f"{path}: {note}")
    out.samples.append(
        Sample(
            series=f"{raw.get('model_id')}:{path.stem.split('_conc')[0]}",
            point=f"c={conc}",
            metric="tput_per_gpu",
            kind=PERF,
            better=HIGHER,
            unit="",
            image=Image(ref="unknown"),
            run=run,
            seq=inferencex.stamp(raw.get("date")) or 0,
            status=FAILED if failed else AMBIGUOUS,
            value=None,
            note=note,
            source=inferencex.SOURCE,
        )
    )


def _agg_mismatch(raw: dict[str, Any], agg: dict[str, Any]) -> str:
    try:
        mine = inferencex.compute_agg(raw, agg)
    except (ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
        return f"aggregation ({exc})"
    for key, value in mine.items():
        theirs = agg.get(key)
        if isinstance(value, float) and isinstance(theirs, int | float):
            if not math.isclose(value, theirs, rel_tol=1e-9):
                return key
    return ""
