"""Run records: `.relpipe/runs/<id>/` and the stage cache they share.

A run record is a folder holding everything a verdict and its reports were computed from:

    run.json                 the run's inputs (what the id is a hash of)
    stages/<stage>-<key>.json one file per stage result, named by the hash of that stage's inputs
    events.jsonl             what happened in which order (ran, cached, failed); never rendered
    report.json|md|html      rendered from the stage results alone

Stage results are also kept in a shared cache (`.relpipe/cache/stages/`) so that a later run with
the same stage inputs (the same digest qualified again, a killed run started again) reuses them:
that is what makes a re-qualification a cache hit and a killed run resume at its first unfinished
stage. Every file is written atomically (temp file, fsync, rename), so a kill at any instant leaves
either no result or a whole one.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ..core import jsoncodec, jsonload, sanitize
from ..core.files import write_atomic
from .errors import PipelineError

SCHEMA = 1
STATE_DIR = ".relpipe"
# Bumped whenever a stage's meaning changes, so that old cached results stop matching.
STAGE_FORMAT = 2
_MAX_RECORD_FILE = 32 * 1024 * 1024

JSON = Any


@functools.cache
def relpipe_version() -> str:
    """The installed version plus a fingerprint of the source, an input of every stage key.

    The fingerprint makes a cached stage result stale when the code that produced it changes
    without a version bump (editable installs, local patches), instead of serving old logic.
    """

    try:
        base = version("relpipe")
    except PackageNotFoundError:  # running from a source tree that is not installed
        base = "0+unknown"
    return f"{base}+src.{_source_fingerprint()}"


def _source_fingerprint() -> str:
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for package in ("core", "pipeline", "validate", "changelog", "images", "engine"):
        for path in sorted((root / package).rglob("*")):
            if path.suffix in (".py", ".yaml", ".json") and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def canonical_json(obj: JSON) -> bytes:
    """The one serialisation hashed for keys and written for records (stable across runs)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def pretty_json(obj: JSON) -> bytes:
    """JSON people read (report.json, release.json): `sanitize.json_text`, no raw control."""
    return (sanitize.json_text(obj, sort_keys=True, indent=2) + "\n").encode()


def digest_of(obj: JSON) -> str:
    return hashlib.sha256(canonical_json(obj)).hexdigest()


def stage_key(stage: str, inputs: Mapping[str, JSON]) -> str:
    """Hash of a stage's inputs; the relpipe version is an input of every stage."""
    return digest_of(
        {
            "stage": stage,
            "inputs": dict(inputs),
            "format": STAGE_FORMAT,
            "relpipe": relpipe_version(),
        }
    )


def atomic_write(path: Path, data: bytes) -> None:
    """`core.files.write_atomic`, creating the record's folders first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)


def read_json(path: Path, what: str) -> JSON:
    """Read a record file (untrusted: size-capped, must be JSON)."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise PipelineError(f"{what}: cannot read {path}: {exc.strerror}") from exc
    if size > _MAX_RECORD_FILE:
        raise PipelineError(
            f"{what}: {path} is {size} bytes (limit {_MAX_RECORD_FILE}); not a run record"
        )
    try:
        return jsonload.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        raise PipelineError(
            f"{what}: {path} is not valid JSON ({exc}); delete it and re-run"
        ) from exc


@dataclass(frozen=True, kw_only=True)
class StageResult:
    """One stage's recorded output, addressed by the hash of its inputs."""

    stage: str
    key: str
    inputs: Mapping[str, JSON]
    output: Mapping[str, JSON]
    seconds: float

    def to_json(self) -> JSON:
        """The fields under the record's schema number, seconds to the millisecond."""
        return {
            "schema": SCHEMA,
            **jsoncodec.fields_to_json(self),
            "seconds": round(self.seconds, 3),
        }

    @classmethod
    def from_json(cls, data: JSON, *, where: str) -> StageResult:
        if not isinstance(data, Mapping) or data.get("schema") != SCHEMA:
            raise PipelineError(
                f"{where}: not a schema-{SCHEMA} stage result; delete it and re-run"
            )
        try:
            result = jsoncodec.fields_from_json(cls, data, where=where)
        except jsoncodec.RecordError as exc:
            raise PipelineError(
                f"{where}: malformed stage result ({exc.detail}); delete it and re-run"
            ) from None
        if stage_key(result.stage, result.inputs) != result.key:
            # A result whose inputs do not hash to its key was edited or belongs to another version.
            raise PipelineError(
                f"{where}: stage key does not match its inputs; delete it and re-run"
            )
        return result

    @property
    def filename(self) -> str:
        return f"{self.stage}-{self.key[:16]}.json"


class RunRecord:
    """A run folder plus the shared stage cache (both optional to the other)."""

    def __init__(self, root: Path, cache: Path | None = None) -> None:
        self.root = Path(root)
        self.cache = Path(cache) if cache is not None else None

    @property
    def stages_dir(self) -> Path:
        return self.root / "stages"

    def write_inputs(self, inputs: Mapping[str, JSON]) -> None:
        path = self.root / "run.json"
        data = pretty_json({"schema": SCHEMA, **inputs})
        if not path.exists() or path.read_bytes() != data:
            atomic_write(path, data)

    def inputs(self) -> JSON:
        data = read_json(self.root / "run.json", "run record")
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise PipelineError(f"{self.root}: run.json is not a schema-{SCHEMA} run record")
        return data

    def _locations(self, stage: str, key: str) -> list[Path]:
        name = f"{stage}-{key[:16]}.json"
        places = [self.stages_dir / name]
        if self.cache is not None:
            places.append(self.cache / name)
        return places

    def load(self, stage: str, key: str) -> StageResult | None:
        for path in self._locations(stage, key):
            if path.is_file():
                result = StageResult.from_json(read_json(path, "stage result"), where=str(path))
                if result.key == key:
                    if path.parent != self.stages_dir:
                        atomic_write(
                            self.stages_dir / result.filename, pretty_json(result.to_json())
                        )
                    return result
        return None

    def save(self, result: StageResult) -> None:
        data = pretty_json(result.to_json())
        atomic_write(self.stages_dir / result.filename, data)
        if self.cache is not None:
            atomic_write(self.cache / result.filename, data)

    def results(self) -> list[StageResult]:
        if not self.stages_dir.is_dir():
            return []
        return [
            StageResult.from_json(read_json(p, "stage result"), where=str(p))
            for p in sorted(self.stages_dir.glob("*.json"))
        ]

    def import_stages(self, other: Path) -> int:
        """Copy another record's stage results into this one (merging shards); returns the count."""
        count = 0
        for path in sorted((other / "stages").glob("*.json")):
            result = StageResult.from_json(read_json(path, "shard stage result"), where=str(path))
            target = self.stages_dir / result.filename
            if not target.exists():
                atomic_write(target, pretty_json(result.to_json()))
            count += 1
        return count

    def event(self, **fields: JSON) -> None:
        """Append one line to events.jsonl (diagnostics, e.g. which stages were cache hits)."""
        self.root.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"t": round(time.time(), 3), **fields}, sort_keys=True) + "\n"
        with (self.root / "events.jsonl").open("a", encoding="utf-8") as out:
            out.write(line)
            out.flush()
            os.fsync(out.fileno())

    def events(self) -> list[JSON]:
        path = self.root / "events.jsonl"
        if not path.exists():
            return []
        out = []
        for line in path.read_text(encoding="utf-8").splitlines():
            # A kill mid-append can leave a torn last line: it says nothing, skip it.
            try:
                out.append(jsonload.loads(line))
            except ValueError:
                continue
        return out

    def write_file(self, name: str, data: bytes) -> Path:
        path = self.root / name
        atomic_write(path, data)
        return path

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class StageRunner:
    """Runs stages through the record: a cached result is returned, otherwise the stage runs.

    `offline=True` is used when merging shards: every result must already be in the record, and
    a missing one is an error naming the stage (the shard that should have produced it failed).
    When the scheduler says that shard ended without finishing (`lost_reason` set by the merge for
    the units of that shard), the missing result is instead recorded as that stage's failure,
    made by `lost_output(stage, inputs, reason)`, so the verdict FAILs it with the reason.
    """

    def __init__(
        self,
        record: RunRecord,
        offline: bool = False,
        on_event: Callable[[str, str, str, float], None] | None = None,
    ) -> None:
        self.record = record
        self.offline = offline
        self.on_event = on_event
        self.ran: list[str] = []
        self.hits: list[str] = []
        self.lost_reason: str | None = None
        self.lost_output: Callable[[str, Mapping[str, JSON], str], Mapping[str, JSON]] | None = None
        self.lost: list[str] = []

    def run(
        self,
        stage: str,
        inputs: Mapping[str, JSON],
        fn: Callable[[], Mapping[str, JSON]],
        label: str = "",
    ) -> Mapping[str, JSON]:
        key = stage_key(stage, inputs)
        label = label or stage
        cached = self.record.load(stage, key)
        if cached is not None:
            self.hits.append(label)
            self.record.event(stage=stage, key=key, what="cached", label=label)
            self._notify(label, "cached", cached.output.get("status", ""), cached.seconds)
            return cached.output
        if self.offline and self.lost_reason and self.lost_output is not None:
            output = dict(self.lost_output(stage, inputs, self.lost_reason))
            self.record.save(
                StageResult(stage=stage, key=key, inputs=dict(inputs), output=output, seconds=0.0)
            )
            self.lost.append(label)
            self.record.event(stage=stage, key=key, what="lost", label=label)
            self._notify(label, "done", str(output.get("status", "")), 0.0)
            return output
        if self.offline:
            raise PipelineError(
                f"stage {label} (key {key[:16]}) has no result in the shard records; "
                "re-run the shard that owns it (or qualify again), then merge or report again"
            )
        self.record.event(stage=stage, key=key, what="start", label=label)
        self._notify(label, "start", "", 0.0)
        t0 = time.monotonic()
        output = dict(fn())
        seconds = time.monotonic() - t0
        self.record.save(
            StageResult(stage=stage, key=key, inputs=dict(inputs), output=output, seconds=seconds)
        )
        self.ran.append(label)
        self.record.event(stage=stage, key=key, what="done", label=label)
        self._notify(label, "done", str(output.get("status", "")), seconds)
        return output

    def _notify(self, label: str, what: str, status: str, seconds: float) -> None:
        if self.on_event is not None:
            self.on_event(label, what, str(status), seconds)
