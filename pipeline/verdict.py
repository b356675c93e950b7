"""The verdict: checks C1..C12 (DESIGN.md) over recorded stage outputs, and the overall result.

Every check is a pure function of an `Outcome` (the stage outputs of one run, as recorded),
declared with its id and title on `CHECKS` (`core.check`): it judges a status, a one-line reason
and evidence rows, and `evaluate` returns their `Check` records in declaration order. Adding a
check is one declared function here. Nothing here does I/O, so a verdict re-computed from a run
record is the verdict that was reported.

Fail closed: a stage that did not run, an eval without samples or without a threshold, a digest
that was not re-hashed, a smoke result without decoded tokens are FAIL, never PASS.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..changelog.results import regressions
from ..changelog.results.records import ACCEPTANCE, ACCURACY, PERF
from ..core import checkrender
from ..core.check import Check, Checklist, Judgement, judged
from ..core.commit import Commit
from ..core.status import FAIL, NA, PASS, WARN, Status
from ..validate.precision.keypath import Scoped
from .comparison import HistoryOutput
from .outputs import (
    CANNOT_CHECK,
    ConfigScope,
    EvalOutput,
    PrecisionOutput,
    ProbeOutput,
    Resolved,
    SmokeOutput,
    ValidatorOutput,
)


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


CHECKS = Checklist[Outcome]()  # C1..C12, in the order they are declared below


@dataclass(frozen=True)
class Verdict:
    checks: tuple[Check, ...]
    strict: bool = False
    overall: Status = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "overall", checkrender.status_of(self.checks))

    @property
    def exit_code(self) -> int:
        if self.overall == FAIL or (self.strict and self.overall == WARN):
            return 1
        return 0

    def to_json(self) -> dict[str, Any]:
        """The overall status first, then the checks; `strict` is how it was asked, not what."""
        return checkrender.document(self.checks)


def _digest_ok(resolved: Resolved) -> bool:
    digest = resolved.digest
    return resolved.verified and digest.startswith("sha256:") and len(digest) == 71


@CHECKS.declare("C1", "digest verified")
def check_digest(o: Outcome) -> Judgement:
    if o.image is None:
        return judged(FAIL, "the image was not resolved")
    rows = [("image", f"{o.image.ref} -> {o.image.digest}")]
    bad = [] if _digest_ok(o.image) else [o.image.ref]
    if o.baseline is not None:
        rows.append(("baseline", f"{o.baseline.ref} -> {o.baseline.digest}"))
        if not _digest_ok(o.baseline):
            bad.append(o.baseline.ref)
    if bad:
        return judged(FAIL, f"digest not verified by re-hashing: {', '.join(bad)}", rows)
    rows.append(("verified", "manifest bytes re-hashed to the digest"))
    return judged(PASS, "digest verified by re-hashing the manifest", rows)


# Facts without which nobody can say what was qualified fail C2 (`Facts.required`); facts a
# release note reports when present only warn (`Facts.optional`).
@CHECKS.declare("C2", "image facts complete")
def check_facts(o: Outcome) -> Judgement:
    if o.probe is None or o.probe.status != PASS or o.probe.facts is None:
        reason = (o.probe.reason if o.probe else "") or "the probe did not run"
        return judged(FAIL, f"probe failed: {reason}")
    facts = o.probe.facts
    rows = [(name, str(value)) for name, value in facts.required() + facts.optional()]
    missing = [name for name, value in facts.required() if not value]
    rows += [("probe error", e) for e in facts.errors[:10]]
    if missing:
        return judged(FAIL, f"facts missing: {', '.join(missing)}", rows)
    absent = [name for name, value in facts.optional() if not value]
    if absent:
        return judged(WARN, f"optional facts missing: {', '.join(absent)}", rows)
    return judged(PASS, f"{facts.engine.name} {facts.engine.version}", rows)


@CHECKS.declare("C3", "smoke decode")
def check_smoke(o: Outcome) -> Judgement:
    s = o.smoke
    if s is None:
        return judged(FAIL, "the smoke decode did not run")
    # Timings are in the report, not in the evidence: a verdict must not depend on machine load.
    rows = [("tokens", str(s.tokens)), ("max_logit_diff", str(s.max_logit_diff))]
    if s.status != PASS:
        return judged(FAIL, f"smoke decode failed: {s.reason or 'fail'}", rows)
    if not s.tokens:
        # A smoke test that decoded nothing cannot have failed, so it cannot pass either.
        return judged(FAIL, "smoke decode reported pass without decoding a token", rows)
    return judged(PASS, f"decoded {s.tokens} tokens, matches the reference", rows)


def eval_failures(ev: EvalOutput) -> list[str]:
    """Why one eval result (one suite at one point) fails; empty when it passes."""
    if ev.status == NA:
        return [f"{ev.name}: {ev.reason or 'did not run'}"]
    if not ev.samples:
        return [f"{ev.name}: zero samples scored"]
    if ev.threshold is None or ev.score is None:
        return [f"{ev.name}: no score or threshold"]
    if ev.score < ev.threshold:
        return [f"{ev.name}: {ev.metric} {ev.score:.4g} < {ev.threshold:.4g}"]
    if ev.status != PASS:
        return [f"{ev.name}: {ev.reason or 'engine reported failure'}"]
    return []


@CHECKS.declare("C4", "eval suites vs thresholds")
def check_evals(o: Outcome) -> Judgement:
    if not o.evals:
        return judged(FAIL, "no eval suite ran")
    rows = []
    failures: list[str] = []
    for ev in o.evals:
        shown = f"{ev.metric}={ev.score} (threshold {ev.threshold}, {ev.samples} samples)"
        rows.append((ev.name, shown))
        failures += eval_failures(ev)
    if failures:
        more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
        return judged(FAIL, failures[0] + more, rows)
    return judged(PASS, f"{len(o.evals)} eval result(s) at or above threshold", rows)


def _commit_label(commit: Commit) -> str:
    pr = f" (#{commit.pr})" if commit.pr and f"#{commit.pr}" not in commit.subject else ""
    return f"{commit.sha[:9]} {commit.subject}".strip() + pr


@CHECKS.declare("C5", "precision diff")
def check_precision(o: Outcome) -> Judgement:
    p = o.precision
    if p is None or p.status == NA:
        return judged(
            NA,
            (p.reason if p else "") or "no baseline image to diff against",
        )
    if p.status != PASS or p.report is None:
        return judged(FAIL, f"precision diff failed: {p.reason}")
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
    on_path = {path for path, _, _ in p.key_scope.on_path} if p.key_scope else set()
    named_on_path: list[str] = []
    for f in relevant:
        labels = [_commit_label(by_sha[s]) if s in by_sha else s[:9] for s in f.commits]
        rows.append((f"{f.path} [{f.category}]", "; ".join(labels) or "-"))
        named += [lab for lab in labels if lab not in named]
        if f.path in on_path:
            named_on_path += [lab for lab in labels if lab not in named_on_path]
    if p.key_scope is not None:
        return _scoped(p.key_scope, named_on_path, rows)
    if relevant:
        cats = sorted({str(f.category) for f in relevant})
        return judged(
            WARN,
            f"precision-relevant changes ({', '.join(cats)}) in {'; '.join(named[:3])}"
            + (f" (+{len(named) - 3} more)" if len(named) > 3 else ""),
            rows,
        )
    return judged(PASS, "no precision-relevant change between baseline and image", rows)


def _scoped(scope: Scoped, named: list[str], rows: list[tuple[str, str]]) -> Judgement:
    """C5 for a config key: WARN only for relevant changes on the key's path; the others are
    listed as elsewhere (another model, another engine's plugin), never a warning."""
    rows = [*rows, ("key", scope.key)]
    rows += [(f"on the key's path: {p} [{c}]", w) for p, c, w in scope.on_path]
    rows += [(f"elsewhere: {p} [{c}]", "not on the key's path") for p, c in scope.elsewhere]
    if scope.on_path:
        cats = sorted({c for _, c, _ in scope.on_path})
        more = f" (+{len(named) - 3} more)" if len(named) > 3 else ""
        return judged(
            WARN,
            f"precision-relevant changes on {scope.key}'s path ({', '.join(cats)}) in "
            f"{'; '.join(named[:3])}{more}; {len(scope.elsewhere)} elsewhere",
            rows,
        )
    why = f"no precision-relevant change on {scope.key}'s path"
    if scope.elsewhere:
        why += f" ({len(scope.elsewhere)} relevant files elsewhere: other models or engines)"
    return judged(PASS, why, rows)


@CHECKS.declare("C6", "upstream watch list")
def check_watch(o: Outcome) -> Judgement:
    report = o.precision.report if o.precision else None
    upstream = report.upstream if report else ()
    if not upstream:
        return judged(NA, "no upstream watch list configured")
    rows: list[tuple[str, str]] = []
    missing: list[str] = []
    present: list[str] = []
    for item in upstream:
        why = f" ({item.why})" if item.why else ""
        rows.append((item.ref, f"{item.kind}: {'present' if item.found else 'absent'}{why}"))
        if not item.ok:
            (missing if item.kind == "must-contain" else present).append(item.ref)
    if present:
        return judged(FAIL, f"must-not-contain present in the image: {', '.join(present)}", rows)
    if missing:
        # The real-world case: an upstream fix not yet in the image is a risk to state, not a
        # blocker.
        return judged(WARN, f"risk: not yet in the image: {', '.join(missing)}", rows)
    return judged(PASS, f"{len(upstream)} watched upstream change(s) as required", rows)


def _validator_check(out: ValidatorOutput | None, what: str) -> Judgement:
    if out is None:
        return judged(NA, f"{what} is checked by `relpipe release`")
    rows = tuple((f"problem {i + 1}", p) for i, p in enumerate(out.problems[:20]))
    if out.status != PASS or out.problems:
        first = out.problems[0] if out.problems else (out.reason or "validator failed")
        return judged(FAIL, f"{what}: {first}", rows)
    rows += tuple((k, str(v)) for k, v in sorted((out.evidence or {}).items()))
    return judged(PASS, f"{what} passes", rows)


@CHECKS.declare("C7", "changelog entry valid")
def check_changelog(o: Outcome) -> Judgement:
    return _validator_check(o.changelog, "perf-changelog entry")


@CHECKS.declare("C8", "notes parity EN/ZH and facts")
def check_notes(o: Outcome) -> Judgement:
    return _validator_check(o.notes, "release notes")


@CHECKS.declare("C9", "golden acceptance length")
def check_golden(o: Outcome) -> Judgement:
    g = o.golden
    if g is None or g.status == NA:
        return judged(
            NA,
            (g.reason if g else "") or "no golden acceptance-length files",
        )
    judged_ = _validator_check(g, "golden acceptance length")
    # The verdict `relpipe review --check golden-al` gives (validate.golden_al.verdict): a
    # setting that cannot be checked is a WARN there, so here too.
    unchecked = [k for k, v in (g.evidence or {}).items() if str(v).startswith(CANNOT_CHECK)]
    if judged_.status == PASS and unchecked:
        return judged(WARN, f"golden acceptance length: {g.reason}", judged_.evidence)
    return judged_


@CHECKS.declare("C10", "config-key scope and points plan")
def check_scope(o: Outcome) -> Judgement:
    c = o.config
    if c is None:
        return judged(NA, "no config key given")
    if c.status != PASS:
        return judged(FAIL, c.reason or f"config key {c.key} was not read")
    rows = [
        ("config key", c.key),
        ("master", c.master),
        ("pinned image", c.image),
        ("points", str(len(c.points))),
    ]
    rows += [(p.name, f"batch {p.batch}") for p in c.points]
    if not c.points:
        return judged(FAIL, f"config key {c.key} expands to no benchmark point", rows)
    facts = o.probe.facts if o.probe else None
    engine = facts.engine.name if facts else None
    if c.framework and engine and not c.framework.startswith(engine):
        return judged(
            FAIL, f"config key {c.key} runs {c.framework} but the image ships {engine}", rows
        )
    if c.warnings:  # the repository's own rules are the authority on its schema: WARN, not FAIL
        rows += [(w.partition(": ")[0], w.partition(": ")[2]) for w in c.warnings]
        return judged(WARN, "; ".join(c.warnings), rows)
    return judged(PASS, f"{c.key}: {len(c.points)} point(s) planned", rows)


# a point the new image did not run fails a qualification (unlike a partial CI run in the store)
BAD = (regressions.REGRESSION, regressions.FAILED_KIND, regressions.BELOW, regressions.MISSING)


def _history_check(o: Outcome, kinds: tuple[str, ...], what: str) -> Judgement:
    h = o.history
    if h is None or h.status != PASS:
        return judged(NA, (h.reason if h else "") or "no results history")
    found = [f for f in h.findings if f.metric_kind in kinds]
    if not found:
        # No store path in the reason: a verdict reads the same from every runner and shard.
        return judged(NA, f"no {what} results in the history")
    if all(f.kind == regressions.NO_BASELINE for f in found):
        return judged(NA, f"no earlier image in the history to compare {what} with")
    rows = tuple((f"{f.point} {f.metric}", _finding_text(f)) for f in found)
    bad = [f for f in found if f.kind in BAD]
    if bad:
        first = bad[0]
        where = f"{first.point} {first.metric}: {first.kind}"
        reason = f"{len(bad)} of {len(found)} {what} point(s) regressed or failed ({where})"
        return judged(FAIL, reason, rows)
    better = sum(f.kind == regressions.IMPROVEMENT for f in found)
    return judged(
        PASS,
        f"{len(found)} {what} point(s): none outside the noise band as a loss, {better} improved",
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


@CHECKS.declare("C11", "performance vs the previous image (history)")
def check_performance(o: Outcome) -> Judgement:
    return _history_check(o, (PERF,), "performance")


@CHECKS.declare("C12", "accuracy and acceptance vs history")
def check_accuracy_history(o: Outcome) -> Judgement:
    return _history_check(o, (ACCURACY, ACCEPTANCE), "accuracy/acceptance")


def evaluate(outcome: Outcome, strict: bool = False) -> Verdict:
    return Verdict(CHECKS.run(outcome), strict=strict)
