"""Typed stage outputs: what each qualification stage records, as frozen keyword-only dataclasses.

Stage results are JSON in the run record (`pipeline.runrecord`); this module is the boundary. A
stage returns one of these records, `run_stage` stores it with `core.jsoncodec.to_json` and reads a
cached result back with `core.jsoncodec.from_json` (the records' fields and types say the JSON
shape), so every layer above the record (stages, verdict, reports, release) reads fields, never
dotted strings into dicts. A cached result that does not parse is refused with one line naming
the field (delete it and re-run), never misread. The JSON shapes are the ones documented in
docs/pipeline.md; `to_json(from_json(x))` is `x` for every output a stage writes, which is what
keeps a re-rendered report byte-identical.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from ..core import jsoncodec
from ..core.jsoncodec import RecordError
from ..core.status import FAIL, NA, PASS, Status
from ..validate.precision import PrecisionReport
from ..validate.precision.keypath import Scoped
from .errors import PipelineError
from .runrecord import StageRunner
from .workspace import Point

JSON = Any  # a value of a JSON document (the edge this module guards)

# Fields left out of the recorded JSON when None / when at their default (the recorded shapes).
OMIT_NONE = jsoncodec.spec(omit="none")
OMIT_DEFAULT = jsoncodec.spec(omit="default")

# A stage's status is a `core.status.Status`; in the run record each output spells it with the
# words it had before (`ok`, `pass`, `n/a`, ...), so records on disk load and re-render unchanged.
OK = jsoncodec.spec(words={PASS: "ok"})
OK_ERROR = jsoncodec.spec(words={PASS: "ok", FAIL: "error"})
OK_NA = jsoncodec.spec(words={PASS: "ok", NA: "n/a"})
OK_NA_ERROR = jsoncodec.spec(words={PASS: "ok", NA: "n/a", FAIL: "error"})
PASS_FAIL = jsoncodec.spec(words={PASS: "pass", FAIL: "fail"})
# an eval that produced no result (did not run, malformed output) is N/A, and C4 fails it
EVAL_WORDS = jsoncodec.spec(words={PASS: "pass", FAIL: "fail", NA: "error"})


@dataclass(frozen=True, kw_only=True)
class EngineFacts:
    """The engine distribution in an image (`engine.probe.engine_facts`)."""

    name: str | None = None
    version: str | None = None
    commit: str | None = None
    version_commit: str | None = None  # the +g<sha> of a setuptools-scm version
    path: str | None = None  # the source checkout the commit was read from


@dataclass(frozen=True, kw_only=True)
class Facts:
    """What the probe found in an image; a fact it could not find is None, its reason in errors."""

    engine: EngineFacts = EngineFacts()
    python: str | None = None
    torch: str | None = None
    triton: str | None = None
    lmcache: str | None = None
    aiter: str | None = None
    rocm: str | None = None
    gpu: Mapping[str, JSON] | None = None  # carried as the probe reported it (arch, name, count)
    errors: tuple[str, ...] = ()

    # The facts C2 requires and those it only reports (name, value) in the order they are shown.
    def required(self) -> tuple[tuple[str, str | None], ...]:
        e = self.engine
        return (
            ("engine.name", e.name),
            ("engine.version", e.version),
            ("engine.commit", e.commit),
            ("python", self.python),
            ("torch", self.torch),
            ("triton", self.triton),
        )

    def optional(self) -> tuple[tuple[str, str | None], ...]:
        return (("rocm", self.rocm), ("aiter", self.aiter), ("lmcache", self.lmcache))


@dataclass(frozen=True, kw_only=True)
class Resolved:
    """One image pinned at plan time (`RegistryClient.pin`); `facts` is attached to the baseline."""

    ref: str
    pinned: str  # repository@digest: what is run
    digest: str
    verified: bool  # every byte re-hashed to the digest
    media_type: str | None = None
    platform: str | None = None
    platform_digest: str | None = None
    created: str | None = None
    facts: Facts | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, kw_only=True)
class ConfigScope:
    """The config key under qualification (C10), read from the benchmark repository at plan time."""

    status: Status = field(metadata=OK)  # PASS: the key was read
    key: str
    master: str  # path relative to the repository
    image: str  # the image the config pins today (the default baseline)
    framework: str | None = None
    model_prefix: str | None = None
    points: tuple[Point, ...] = ()
    reason: str = field(default="", metadata=OMIT_DEFAULT)
    # master fields relpipe does not know, at file:line (C10 WARNs; the key is still read)
    warnings: tuple[str, ...] = field(default=(), metadata=OMIT_DEFAULT)


@dataclass(frozen=True, kw_only=True)
class PullOutput:
    status: Status = field(metadata=OK_ERROR)
    image: str  # the local image id


@dataclass(frozen=True, kw_only=True)
class ProbeOutput:
    status: Status = field(metadata=OK_ERROR)
    facts: Facts | None = field(default=None, metadata=OMIT_NONE)  # set when ok
    reason: str = field(default="", metadata=OMIT_DEFAULT)  # set when error


@dataclass(frozen=True, kw_only=True)
class SmokeOutput:
    status: Status = field(metadata=PASS_FAIL)
    reason: str = ""
    tokens: int = 0  # tokens decoded by the mono path
    tokens_per_s: float | None = None
    max_logit_diff: float | None = None
    ops: JSON = None  # the engine's op report, carried for the report
    seconds: float = 0.0


@dataclass(frozen=True, kw_only=True)
class EvalOutput:
    """One suite at one eval batch; `point` is set when the result is assigned to a point."""

    status: Status = field(metadata=EVAL_WORDS)  # N/A: no result (`reason` says why)
    suite: str
    batch: int
    metric: str
    score: float | None = None
    threshold: float | None = None
    samples: int = 0
    # decode-parity: agreement per KV dtype
    per_dtype: Mapping[str, float | None] | None = field(default=None, metadata=OMIT_NONE)
    reason: str = ""
    seconds: float = 0.0
    point: str | None = field(default=None, metadata=OMIT_NONE)

    @property
    def name(self) -> str:
        return f"{self.suite}@{self.point}"


@dataclass(frozen=True, kw_only=True)
class PrecisionOutput:
    """The engine commit diff between baseline and image (`validate.precision`), or why not;
    recorded flat: the report's own keys stand beside `status`."""

    status: Status = field(metadata=OK_NA_ERROR)
    report: PrecisionReport | None = None  # set when PASS
    reason: str = ""
    # the report read for the run's config key (validate.precision.keypath): what C5 judges
    key_scope: Scoped | None = None

    def to_json(self) -> dict[str, JSON]:
        if self.report is None:
            return jsoncodec.fields_to_json(self, exclude=("report", "key_scope"))
        status = jsoncodec.fields_to_json(self, exclude=("report", "reason", "key_scope"))
        scope = {"key_scope": self.key_scope.to_json()} if self.key_scope else {}
        return {**status, **jsoncodec.to_json(self.report), **scope}  # type: ignore[dict-item]

    @classmethod
    def from_json(cls, data: JSON, *, where: str) -> PrecisionOutput:
        scope = data.get("key_scope") if isinstance(data, dict) else None
        if isinstance(data, dict) and "key_scope" in data:
            data = {k: v for k, v in data.items() if k != "key_scope"}
        out = jsoncodec.fields_from_json(cls, data, where=where)
        if out.status != PASS:
            return out
        return cls(
            status=out.status,
            report=jsoncodec.from_json(PrecisionReport, data, where=where),
            key_scope=None
            if scope is None
            else Scoped.from_json(scope, where=f"{where}.key_scope"),
        )


CANNOT_CHECK = "cannot check: "


@dataclass(frozen=True, kw_only=True)
class ValidatorOutput:
    """A validator's result (C7 changelog hook, C8 notes check, C9 golden AL); an evidence
    value starting with CANNOT_CHECK is a row the validator could not judge (a WARN)."""

    status: Status = field(metadata=OK_NA)  # PASS: it ran (its problems fail the check)
    reason: str = field(default="", metadata=OMIT_DEFAULT)
    problems: tuple[str, ...] = ()
    evidence: Mapping[str, str | int] | None = None

    def to_json(self) -> dict[str, JSON]:
        # An n/a result records neither problems nor evidence; any other records both.
        if self.status == NA:
            return jsoncodec.fields_to_json(self, exclude=("problems", "evidence"))
        return jsoncodec.fields_to_json(replace(self, evidence=self.evidence or {}))


@dataclass(frozen=True, kw_only=True)
class ReleaseChecks:
    """The validators run on a staged release (one recorded stage: `release-checks`)."""

    changelog: ValidatorOutput
    notes: ValidatorOutput
    golden: ValidatorOutput


T = TypeVar("T")


def parse(kind: type[T], data: JSON, what: str) -> T:
    """`data` read as a `kind` (`core.jsoncodec`), or one line saying which recorded output is
    malformed and where."""
    try:
        return jsoncodec.from_json(kind, data, where=what)
    except RecordError as exc:
        raise PipelineError(
            f"recorded {what} is malformed ({exc.detail}); delete the run record and re-run"
        ) from None


def run_stage(
    runner: StageRunner,
    kind: type[T],
    stage: str,
    inputs: Mapping[str, JSON],
    fn: Callable[[], T],
    label: str = "",
) -> T:
    """Run (or read back) one stage through the record: JSON in the record, `kind` above it."""
    raw = runner.run(stage, inputs, lambda: jsoncodec.to_json(fn()), label)
    return parse(kind, raw, f"{label or stage} output")
