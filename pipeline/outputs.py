"""Typed stage outputs: what each qualification stage records, as frozen keyword-only dataclasses.

Stage results are JSON in the run record (`pipeline.record`); this module is the boundary. A stage
returns one of these records, `run_stage` stores its `to_json()` and parses a cached result back
with `from_json`, so every layer above the record (stages, verdict, reports, release) reads fields,
never dotted strings into dicts. A cached result that does not parse is refused with one line
(delete it and re-run), never misread. The JSON shapes are the ones documented in
docs/pipeline.md; `to_json(from_json(x))` is `x` for every output a stage writes, which is what
keeps a re-rendered report byte-identical.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from relpipe.core.errors import RelpipeError
from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.record import StageRunner
from relpipe.pipeline.workspace import Point
from relpipe.validate.precision import PrecisionReport

JSON = Any  # a value of a JSON document (the edge this module guards)


def _opt_str(value: JSON) -> str | None:
    return None if value is None else str(value)


def _opt_float(value: JSON) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    return float(value)


def _strings(value: JSON) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return tuple(str(v) for v in value)


def _mapping(value: JSON) -> Mapping[str, JSON]:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return value


@dataclass(frozen=True, kw_only=True)
class EngineFacts:
    """The engine distribution in an image (`engine.probe.engine_facts`)."""

    name: str | None = None
    version: str | None = None
    commit: str | None = None
    version_commit: str | None = None  # the +g<sha> of a setuptools-scm version
    path: str | None = None  # the source checkout the commit was read from

    def to_json(self) -> dict[str, JSON]:
        return {
            "name": self.name,
            "version": self.version,
            "commit": self.commit,
            "version_commit": self.version_commit,
            "path": self.path,
        }

    @classmethod
    def from_json(cls, data: JSON) -> EngineFacts:
        d = _mapping(data or {})
        return cls(
            name=_opt_str(d.get("name")),
            version=_opt_str(d.get("version")),
            commit=_opt_str(d.get("commit")),
            version_commit=_opt_str(d.get("version_commit")),
            path=_opt_str(d.get("path")),
        )


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

    def to_json(self) -> dict[str, JSON]:
        return {
            "engine": self.engine.to_json(),
            "python": self.python,
            "torch": self.torch,
            "triton": self.triton,
            "lmcache": self.lmcache,
            "aiter": self.aiter,
            "rocm": self.rocm,
            "gpu": dict(self.gpu) if self.gpu is not None else None,
            "errors": list(self.errors),
        }

    @classmethod
    def from_json(cls, data: JSON) -> Facts:
        d = _mapping(data)
        gpu = d.get("gpu")
        return cls(
            engine=EngineFacts.from_json(d.get("engine")),
            python=_opt_str(d.get("python")),
            torch=_opt_str(d.get("torch")),
            triton=_opt_str(d.get("triton")),
            lmcache=_opt_str(d.get("lmcache")),
            aiter=_opt_str(d.get("aiter")),
            rocm=_opt_str(d.get("rocm")),
            gpu=_mapping(gpu) if gpu is not None else None,
            errors=_strings(d.get("errors") or []),
        )


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
    facts: Facts | None = None

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "ref": self.ref,
            "pinned": self.pinned,
            "digest": self.digest,
            "verified": self.verified,
            "media_type": self.media_type,
            "platform": self.platform,
            "platform_digest": self.platform_digest,
            "created": self.created,
        }
        if self.facts is not None:
            out["facts"] = self.facts.to_json()
        return out

    @classmethod
    def from_json(cls, data: JSON) -> Resolved:
        d = _mapping(data)
        facts = d.get("facts")
        return cls(
            ref=str(d["ref"]),
            pinned=str(d["pinned"]),
            digest=str(d["digest"]),
            verified=d["verified"] is True,
            media_type=_opt_str(d.get("media_type")),
            platform=_opt_str(d.get("platform")),
            platform_digest=_opt_str(d.get("platform_digest")),
            created=_opt_str(d.get("created")),
            facts=Facts.from_json(facts) if facts is not None else None,
        )


@dataclass(frozen=True, kw_only=True)
class ConfigScope:
    """The config key under qualification (C10), read from the benchmark repository at plan time."""

    status: str  # ok
    key: str
    master: str  # path relative to the repository
    image: str  # the image the config pins today (the default baseline)
    framework: str | None = None
    model_prefix: str | None = None
    points: tuple[Point, ...] = ()
    reason: str = ""

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "status": self.status,
            "key": self.key,
            "master": self.master,
            "image": self.image,
            "framework": self.framework,
            "model_prefix": self.model_prefix,
            "points": [p.to_json() for p in self.points],
        }
        if self.reason:
            out["reason"] = self.reason
        return out

    @classmethod
    def from_json(cls, data: JSON) -> ConfigScope:
        d = _mapping(data)
        return cls(
            status=str(d["status"]),
            key=str(d["key"]),
            master=str(d["master"]),
            image=str(d["image"]),
            framework=_opt_str(d.get("framework")),
            model_prefix=_opt_str(d.get("model_prefix")),
            points=tuple(Point.from_json(p) for p in d.get("points") or []),
            reason=str(d.get("reason") or ""),
        )


@dataclass(frozen=True, kw_only=True)
class PullOutput:
    status: str  # ok
    image: str  # the local image id

    def to_json(self) -> dict[str, JSON]:
        return {"status": self.status, "image": self.image}

    @classmethod
    def from_json(cls, data: JSON) -> PullOutput:
        d = _mapping(data)
        return cls(status=str(d["status"]), image=str(d["image"]))


@dataclass(frozen=True, kw_only=True)
class ProbeOutput:
    status: str  # ok | error
    facts: Facts | None = None  # set when ok
    reason: str = ""  # set when error

    def to_json(self) -> dict[str, JSON]:
        if self.facts is None:
            return {"status": self.status, "reason": self.reason}
        return {"status": self.status, "facts": self.facts.to_json()}

    @classmethod
    def from_json(cls, data: JSON) -> ProbeOutput:
        d = _mapping(data)
        facts = d.get("facts")
        return cls(
            status=str(d["status"]),
            facts=Facts.from_json(facts) if facts is not None else None,
            reason=str(d.get("reason") or ""),
        )


@dataclass(frozen=True, kw_only=True)
class SmokeOutput:
    status: str  # pass | fail
    reason: str = ""
    tokens: int = 0  # tokens decoded by the mono path
    tokens_per_s: float | None = None
    max_logit_diff: float | None = None
    ops: JSON = None  # the engine's op report, carried for the report
    seconds: float = 0.0

    def to_json(self) -> dict[str, JSON]:
        return {
            "status": self.status,
            "reason": self.reason,
            "tokens": self.tokens,
            "tokens_per_s": self.tokens_per_s,
            "max_logit_diff": self.max_logit_diff,
            "ops": self.ops,
            "seconds": self.seconds,
        }

    @classmethod
    def from_json(cls, data: JSON) -> SmokeOutput:
        d = _mapping(data)
        return cls(
            status=str(d["status"]),
            reason=str(d.get("reason") or ""),
            tokens=int(d.get("tokens") or 0),
            tokens_per_s=_opt_float(d.get("tokens_per_s")),
            max_logit_diff=_opt_float(d.get("max_logit_diff")),
            ops=d.get("ops"),
            seconds=float(d.get("seconds") or 0.0),
        )


@dataclass(frozen=True, kw_only=True)
class EvalOutput:
    """One suite at one eval batch; `point` is set when the result is assigned to a point."""

    status: str  # pass | fail | error
    suite: str
    batch: int
    metric: str
    score: float | None = None
    threshold: float | None = None
    samples: int = 0
    per_dtype: Mapping[str, float | None] | None = None  # decode-parity: agreement per KV dtype
    reason: str = ""
    seconds: float = 0.0
    point: str | None = None

    @property
    def name(self) -> str:
        return f"{self.suite}@{self.point}"

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "status": self.status,
            "suite": self.suite,
            "batch": self.batch,
            "metric": self.metric,
            "score": self.score,
            "threshold": self.threshold,
            "samples": self.samples,
            "reason": self.reason,
            "seconds": self.seconds,
        }
        if self.per_dtype is not None:
            out["per_dtype"] = dict(self.per_dtype)
        if self.point is not None:
            out["point"] = self.point
        return out

    @classmethod
    def from_json(cls, data: JSON) -> EvalOutput:
        d = _mapping(data)
        per_dtype = d.get("per_dtype")
        return cls(
            status=str(d["status"]),
            suite=str(d["suite"]),
            batch=int(d["batch"]),
            metric=str(d["metric"]),
            score=_opt_float(d.get("score")),
            threshold=_opt_float(d.get("threshold")),
            samples=int(d.get("samples") or 0),
            per_dtype=(
                {str(k): _opt_float(v) for k, v in _mapping(per_dtype).items()}
                if per_dtype is not None
                else None
            ),
            reason=str(d.get("reason") or ""),
            seconds=float(d.get("seconds") or 0.0),
            point=_opt_str(d.get("point")),
        )


@dataclass(frozen=True, kw_only=True)
class PrecisionOutput:
    """The engine commit diff between baseline and image (`validate.precision`), or why not."""

    status: str  # ok | n/a | error
    report: PrecisionReport | None = None  # set when ok
    reason: str = ""

    def to_json(self) -> dict[str, JSON]:
        if self.report is None:
            return {"status": self.status, "reason": self.reason}
        return {"status": self.status, **self.report.to_json()}

    @classmethod
    def from_json(cls, data: JSON) -> PrecisionOutput:
        d = _mapping(data)
        status = str(d["status"])
        if status != "ok":
            return cls(status=status, reason=str(d.get("reason") or ""))
        return cls(status=status, report=PrecisionReport.from_json(dict(d)))


@dataclass(frozen=True, kw_only=True)
class ValidatorOutput:
    """A validator's result (C7 changelog hook, C8 notes check, C9 golden AL)."""

    status: str  # ok | n/a
    reason: str = ""
    problems: tuple[str, ...] = ()
    evidence: Mapping[str, str | int] | None = None

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"status": self.status}
        if self.reason:
            out["reason"] = self.reason
        if self.status != "n/a":
            out["problems"] = list(self.problems)
            out["evidence"] = dict(self.evidence or {})
        return out

    @classmethod
    def from_json(cls, data: JSON) -> ValidatorOutput:
        d = _mapping(data)
        evidence = d.get("evidence")
        return cls(
            status=str(d["status"]),
            reason=str(d.get("reason") or ""),
            problems=_strings(d.get("problems") or []),
            evidence=(
                {str(k): v if isinstance(v, int) else str(v) for k, v in _mapping(evidence).items()}
                if evidence is not None
                else None
            ),
        )


@dataclass(frozen=True, kw_only=True)
class ReleaseChecks:
    """The validators run on a staged release (one recorded stage: `release-checks`)."""

    changelog: ValidatorOutput
    notes: ValidatorOutput
    golden: ValidatorOutput

    def to_json(self) -> dict[str, JSON]:
        return {
            "changelog": self.changelog.to_json(),
            "notes": self.notes.to_json(),
            "golden": self.golden.to_json(),
        }

    @classmethod
    def from_json(cls, data: JSON) -> ReleaseChecks:
        d = _mapping(data)
        return cls(
            changelog=ValidatorOutput.from_json(d["changelog"]),
            notes=ValidatorOutput.from_json(d["notes"]),
            golden=ValidatorOutput.from_json(d["golden"]),
        )


class Output(Protocol):
    def to_json(self) -> dict[str, JSON]: ...


T = TypeVar("T", bound=Output)


def parse(kind: Callable[[JSON], T], data: JSON, what: str) -> T:
    """`kind(data)` (a `from_json`), or one line saying which recorded output is malformed."""
    try:
        return kind(data)
    except (KeyError, TypeError, ValueError, AttributeError, RelpipeError) as exc:
        detail = f"missing {exc}" if isinstance(exc, KeyError) else str(exc).split("\n")[0]
        raise PipelineError(
            f"recorded {what} is malformed ({detail}); delete the run record and re-run"
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
    raw = runner.run(stage, inputs, lambda: fn().to_json(), label)
    return parse(kind.from_json, raw, f"{label or stage} output")  # type: ignore[attr-defined]
