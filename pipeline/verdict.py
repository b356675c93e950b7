"""The verdict: checks C1..C12 (DESIGN.md) over recorded stage outputs, and the overall result.

Every check is a pure function of an `Outcome` (the stage outputs of one run, as recorded) and
returns a `Check` with a status, a one-line reason and evidence rows. Nothing here does I/O, so a
verdict re-computed from a run record is the verdict that was reported.

Fail closed: a stage that did not run, an eval without samples or without a threshold, a digest
that was not re-hashed, a smoke result without decoded tokens are FAIL, never PASS.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from relpipe.changelog.results import regressions
from relpipe.changelog.results.records import ACCEPTANCE, ACCURACY, PERF
from relpipe.core import jsoncodec
from relpipe.core.commit import Commit
from relpipe.core.status import FAIL, NA, PASS, WARN
from relpipe.core.status import overall as overall_status
from relpipe.pipeline.comparison import HistoryOutput
from relpipe.pipeline.outputs import (
    ConfigScope,
    EvalOutput,
    PrecisionOutput,
    ProbeOutput,
    Resolved,
    SmokeOutput,
    ValidatorOutput,
)

TITLES = {
    "C1": "digest verified",
    "C2": "image facts complete",
    "C3": "smoke decode",
    "C4": "eval suites vs thresholds",
    "C5": "precision diff",
    "C6": "upstream watch list",
    "C7": "changelog entry valid",
    "C8": "notes parity EN/ZH and facts",
    "C9": "golden acceptance length",
    "C10": "config-key scope and points plan",
    "C11": "performance vs the previous image (history)",
    "C12": "accuracy and acceptance vs history",
}

# Facts without which nobody can say what was qualified fail C2 (`Facts.required`); facts a
# release note reports when present only warn (`Facts.optional`).


@dataclass(frozen=True, kw_only=True)
class Check:
    id: str
    status: str
    reason: str
    evidence: tuple[tuple[str, str], ...] = ()

    @property
    def title(self) -> str:
        return TITLES[self.id]

    def to_json(self) -> dict[str, Any]:
        """The fields, and the check's title after its id (for readers of report.json)."""
        out = jsoncodec.fields_to_json(self)
        return {"id": out.pop("id"), "title": self.title, **out}


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What the checks look at: recorded stage outputs (typed), None where not run."""

    image: Resolved | None = None  # the image under test, pinned
    baseline: Resolved | None = None  # the baseline image, pinned (with its probed facts)
    probe: ProbeOutput | None = None
    smoke: SmokeOutput | None = None
    evals: tuple[EvalOutput, ...] = ()
    precision: PrecisionOutput | None = None
    config: ConfigScope | None = None  # config-key scope (C10)
    golden: ValidatorOutput | None = None  # golden AL check (C9)
    changelog: ValidatorOutput | None = None  # release: entry validation (C7)
    notes: ValidatorOutput | None = None  # release: notes check (C8)
    history: HistoryOutput | None = None  # the image vs the previous one of its key (C11, C12)


@dataclass(frozen=True)
class Verdict:
    checks: tuple[Check, ...]
    strict: bool = False
    overall: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "overall", overall(self.checks))

    @property
    def exit_code(self) -> int:
        if self.overall == FAIL or (self.strict and self.overall == WARN):
            return 1
        return 0

    def to_json(self) -> dict[str, Any]:
        """The overall status first, then the checks; `strict` is how it was asked, not what."""
        return {
            "overall": self.overall,
            **jsoncodec.fields_to_json(self, exclude=("strict", "overall")),
        }


def overall(checks: Sequence[Check]) -> str:
    return overall_status(c.status for c in checks)


def _digest_ok(resolved: Resolved) -> bool:
    digest = resolved.digest
    return resolved.verified and digest.startswith("sha256:") and len(digest) == 71


def _judged(cid: str, status: str, reason: str, rows: Sequence[tuple[str, str]]) -> Check:
    """Check `cid`'s verdict with the evidence rows it was decided on."""
    return Check(id=cid, status=status, reason=reason, evidence=tuple(rows))


def check_digest(o: Outcome) -> Check:
    if o.image is None:
        return Check(id="C1", status=FAIL, reason="the image was not resolved")
    rows = [("image", f"{o.image.ref} -> {o.image.digest}")]
    bad = [] if _digest_ok(o.image) else [o.image.ref]
    if o.baseline is not None:
        rows.append(("baseline", f"{o.baseline.ref} -> {o.baseline.digest}"))
        if not _digest_ok(o.baseline):
            bad.append(o.baseline.ref)
    if bad:
        return _judged("C1", FAIL, f"digest not verified by re-hashing: {', '.join(bad)}", rows)
    rows.append(("verified", "manifest bytes re-hashed to the digest"))
    return _judged("C1", PASS, "digest verified by re-hashing the manifest", rows)


def check_facts(o: Outcome) -> Check:
    if o.probe is None or o.probe.status != "ok" or o.probe.facts is None:
        reason = (o.probe.reason if o.probe else "") or "the probe did not run"
        return Check(id="C2", status=FAIL, reason=f"probe failed: {reason}")
    facts = o.probe.facts
    rows = [(name, str(value)) for name, value in facts.required() + facts.optional()]
    missing = [name for name, value in facts.required() if not value]
    rows += [("probe error", e) for e in facts.errors[:10]]
    if missing:
        return _judged("C2", FAIL, f"facts missing: {', '.join(missing)}", rows)
    absent = [name for name, value in facts.optional() if not value]
    if absent:
        return _judged("C2", WARN, f"optional facts missing: {', '.join(absent)}", rows)
    return _judged("C2", PASS, f"{facts.engine.name} {facts.engine.version}", rows)


def check_smoke(o: Outcome) -> Check:
    s = o.smoke
    if s is None:
        return Check(id="C3", status=FAIL, reason="the smoke decode did not run")
    # Timings are in the report, not in the evidence: a verdict must not depend on machine load.
    rows = [("tokens", str(s.tokens)), ("max_logit_diff", str(s.max_logit_diff))]
    if s.status != "pass":
        return _judged("C3", FAIL, f"smoke decode failed: {s.reason or s.status}", rows)
    if not s.tokens:
        # A smoke test that decoded nothing cannot have failed, so it cannot pass either.
        return _judged("C3", FAIL, "smoke decode reported pass without decoding a token", rows)
    return _judged("C3", PASS, f"decoded {s.tokens} tokens, matches the reference", rows)


def eval_failures(ev: EvalOutput) -> list[str]:
    """Why one eval result (one suite at one point) fails; empty when it passes."""
    if ev.status == "error":
        return [f"{ev.name}: {ev.reason or 'did not run'}"]
    if not ev.samples:
        return [f"{ev.name}: zero samples scored"]
    if ev.threshold is None or ev.score is None:
        return [f"{ev.name}: no score or threshold"]
    if ev.score < ev.threshold:
        return [f"{ev.name}: {ev.metric} {ev.score:.4g} < {ev.threshold:.4g}"]
    if ev.status != "pass":
        return [f"{ev.name}: {ev.reason or 'engine reported failure'}"]
    return []


def check_evals(o: Outcome) -> Check:
    if not o.evals:
        return Check(id="C4", status=FAIL, reason="no eval suite ran")
    rows = []
    failures: list[str] = []
    for ev in o.evals:
        shown = f"{ev.metric}={ev.score} (threshold {ev.threshold}, {ev.samples} samples)"
        rows.append((ev.name, shown))
        failures += eval_failures(ev)
    if failures:
        more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
        return Check(id="C4", status=FAIL, reason=failures[0] + more, evidence=tuple(rows))
    return _judged("C4", PASS, f"{len(o.evals)} eval result(s) at or above threshold", rows)


def _commit_label(commit: Commit) -> str:
    pr = f" (#{commit.pr})" if commit.pr and f"#{commit.pr}" not in commit.subject else ""
    return f"{commit.sha[:9]} {commit.subject}".strip() + pr


def check_precision(o: Outcome) -> Check:
    p = o.precision
    if p is None or p.status == "n/a":
        return Check(
            id="C5",
            status=NA,
            reason=(p.reason if p else "") or "no baseline image to diff against",
        )
    if p.status != "ok" or p.report is None:
        return Check(id="C5", status=FAIL, reason=f"precision diff failed: {p.reason}")
    report = p.report
    relevant = [f for f in report.files if f.verdict == "relevant"]
    cosmetic = [f for f in report.files if f.verdict == "cosmetic"]
    rows = [
        ("commits", str(len(report.commits))),
        ("relevant files", str(len(relevant))),
        ("cosmetic files", str(len(cosmetic))),
    ]
    by_sha = {c.sha: c for c in report.commits}
    named: list[str] = []
    for f in relevant:
        labels = [_commit_label(by_sha[s]) if s in by_sha else s[:9] for s in f.commits]
        rows.append((f"{f.path} [{f.category}]", "; ".join(labels) or "-"))
        named += [lab for lab in labels if lab not in named]
    if relevant:
        cats = sorted({str(f.category) for f in relevant})
        return _judged(
            "C5",
            WARN,
            f"precision-relevant changes ({', '.join(cats)}) in {'; '.join(named[:3])}"
            + (f" (+{len(named) - 3} more)" if len(named) > 3 else ""),
            rows,
        )
    return _judged("C5", PASS, "no precision-relevant change between baseline and image", rows)


def check_watch(o: Outcome) -> Check:
    report = o.precision.report if o.precision else None
    upstream = report.upstream if report else ()
    if not upstream:
        return Check(id="C6", status=NA, reason="no upstream watch list configured")
    rows: list[tuple[str, str]] = []
    missing: list[str] = []
    present: list[str] = []
    for item in upstream:
        why = f" ({item.why})" if item.why else ""
        rows.append((item.ref, f"{item.kind}: {'present' if item.found else 'absent'}{why}"))
        if not item.ok:
            (missing if item.kind == "must-contain" else present).append(item.ref)
    if present:
        return _judged(
            "C6", FAIL, f"must-not-contain present in the image: {', '.join(present)}", rows
        )
    if missing:
        # The real-world case: an upstream fix not yet in the image is a risk to state, not a
        # blocker.
        return _judged("C6", WARN, f"risk: not yet in the image: {', '.join(missing)}", rows)
    return _judged("C6", PASS, f"{len(upstream)} watched upstream change(s) as required", rows)


def _validator_check(cid: str, out: ValidatorOutput | None, what: str) -> Check:
    if out is None:
        return Check(id=cid, status=NA, reason=f"{what} is checked by `relpipe release`")
    rows = tuple((f"problem {i + 1}", p) for i, p in enumerate(out.problems[:20]))
    if out.status != "ok" or out.problems:
        first = out.problems[0] if out.problems else (out.reason or "validator failed")
        return Check(id=cid, status=FAIL, reason=f"{what}: {first}", evidence=rows)
    rows += tuple((k, str(v)) for k, v in sorted((out.evidence or {}).items()))
    return Check(id=cid, status=PASS, reason=f"{what} passes", evidence=rows)


def check_changelog(o: Outcome) -> Check:
    return _validator_check("C7", o.changelog, "perf-changelog entry")


def check_notes(o: Outcome) -> Check:
    return _validator_check("C8", o.notes, "release notes")


def check_golden(o: Outcome) -> Check:
    g = o.golden
    if g is None or g.status == "n/a":
        return Check(
            id="C9",
            status=NA,
            reason=(g.reason if g else "") or "no golden acceptance-length files",
        )
    return _validator_check("C9", g, "golden acceptance length")


def check_scope(o: Outcome) -> Check:
    c = o.config
    if c is None:
        return Check(id="C10", status=NA, reason="no config key given")
    if c.status != "ok":
        return Check(id="C10", status=FAIL, reason=c.reason or f"config key {c.key}: {c.status}")
    rows = [
        ("config key", c.key),
        ("master", c.master),
        ("pinned image", c.image),
        ("points", str(len(c.points))),
    ]
    rows += [(p.name, f"batch {p.batch}") for p in c.points]
    if not c.points:
        return _judged("C10", FAIL, f"config key {c.key} expands to no benchmark point", rows)
    facts = o.probe.facts if o.probe else None
    engine = facts.engine.name if facts else None
    if c.framework and engine and not c.framework.startswith(engine):
        return _judged(
            "C10", FAIL, f"config key {c.key} runs {c.framework} but the image ships {engine}", rows
        )
    return _judged("C10", PASS, f"{c.key}: {len(c.points)} point(s) planned", rows)


BAD = (regressions.REGRESSION, regressions.FAILED_KIND, regressions.BELOW)


def _history_check(cid: str, o: Outcome, kinds: tuple[str, ...], what: str) -> Check:
    h = o.history
    if h is None or h.status != "ok":
        return Check(id=cid, status=NA, reason=(h.reason if h else "") or "no results history")
    found = [f for f in h.findings if f.metric_kind in kinds]
    if not found:
        # No store path in the reason: a verdict reads the same from every runner and shard.
        return Check(id=cid, status=NA, reason=f"no {what} results in the history")
    if all(f.kind == regressions.NO_BASELINE for f in found):
        return Check(
            id=cid, status=NA, reason=f"no earlier image in the history to compare {what} with"
        )
    rows = tuple((f"{f.point} {f.metric}", _finding_text(f)) for f in found)
    bad = [f for f in found if f.kind in BAD]
    if bad:
        first = bad[0]
        where = f"{first.point} {first.metric}: {first.kind}"
        reason = f"{len(bad)} of {len(found)} {what} point(s) regressed or failed ({where})"
        return Check(id=cid, status=FAIL, reason=reason, evidence=rows)
    better = sum(f.kind == regressions.IMPROVEMENT for f in found)
    return Check(
        id=cid,
        status=PASS,
        reason=f"{len(found)} {what} point(s): none outside the noise band as a loss, "
        f"{better} improved",
        evidence=rows,
    )


def _finding_text(f: regressions.PointChange) -> str:
    def num(v: float | None) -> str:
        return "-" if v is None else f"{v:.4g}"

    change = "" if f.change is None else f" ({f.change:+.1%})"
    band = "" if f.band is None else f", band {f.band:.3g}"
    return (
        f"{f.kind}: {num(f.old_value)} -> {num(f.new_value)}{change}{band} vs {f.old_image or '-'}"
    )


def check_performance(o: Outcome) -> Check:
    return _history_check("C11", o, (PERF,), "performance")


def check_accuracy_history(o: Outcome) -> Check:
    return _history_check("C12", o, (ACCURACY, ACCEPTANCE), "accuracy/acceptance")


CHECKS: tuple[Callable[[Outcome], Check], ...] = (
    check_digest,
    check_facts,
    check_smoke,
    check_evals,
    check_precision,
    check_watch,
    check_changelog,
    check_notes,
    check_golden,
    check_scope,
    check_performance,
    check_accuracy_history,
)


def evaluate(outcome: Outcome, strict: bool = False) -> Verdict:
    return Verdict(tuple(check(outcome) for check in CHECKS), strict=strict)
