"""The verdict: checks C1..C10 (DESIGN.md) over recorded stage outputs, and the overall result.

Every check is a pure function of an `Outcome` (the stage outputs of one run, as recorded) and
returns a `Check` with a status, a one-line reason and evidence rows. Nothing here does I/O, so a
verdict re-computed from a run record is the verdict that was reported.

Fail closed: a stage that did not run, an eval without samples or without a threshold, a digest
that was not re-hashed, a smoke result without decoded tokens are FAIL, never PASS.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

PASS, WARN, FAIL, NA = "PASS", "WARN", "FAIL", "N/A"
STATUSES = (PASS, WARN, FAIL, NA)

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
}

# Facts without which nobody can say what was qualified; a missing one fails C2.
REQUIRED_FACTS = ("engine.name", "engine.version", "engine.commit", "python", "torch", "triton")
# Facts a release note reports when present; a missing one only warns.
OPTIONAL_FACTS = ("rocm", "aiter", "lmcache")

Out = Mapping[str, Any]


@dataclass(frozen=True)
class Check:
    id: str
    status: str
    reason: str
    evidence: tuple[tuple[str, str], ...] = ()

    @property
    def title(self) -> str:
        return TITLES[self.id]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "reason": self.reason,
            "evidence": [list(row) for row in self.evidence],
        }


@dataclass(frozen=True)
class Outcome:
    """What the checks look at: recorded stage outputs (JSON mappings), None where not run."""

    image: Out | None = None  # resolve output of the image under test
    baseline: Out | None = None  # resolve output of the baseline image
    probe: Out | None = None
    smoke: Out | None = None
    evals: tuple[Out, ...] = ()
    precision: Out | None = None
    config: Out | None = None  # config-key scope (C10)
    golden: Out | None = None  # golden AL check (C9)
    changelog: Out | None = None  # release: entry validation (C7)
    notes: Out | None = None  # release: notes check (C8)


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
        return {"overall": self.overall, "checks": [c.to_json() for c in self.checks]}


def overall(checks: Sequence[Check]) -> str:
    statuses = {c.status for c in checks}
    if FAIL in statuses:
        return FAIL
    if WARN in statuses:
        return WARN
    return PASS


def _get(data: Out | None, dotted: str) -> Any:
    cur: Any = data
    for part in dotted.split("."):
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur


def _digest_ok(resolved: Out) -> bool:
    digest = str(resolved.get("digest") or "")
    return bool(resolved.get("verified")) and digest.startswith("sha256:") and len(digest) == 71


def check_digest(o: Outcome) -> Check:
    if o.image is None:
        return Check("C1", FAIL, "the image was not resolved")
    rows = [("image", f"{o.image.get('ref')} -> {o.image.get('digest')}")]
    bad = [] if _digest_ok(o.image) else [str(o.image.get("ref"))]
    if o.baseline is not None:
        rows.append(("baseline", f"{o.baseline.get('ref')} -> {o.baseline.get('digest')}"))
        if not _digest_ok(o.baseline):
            bad.append(str(o.baseline.get("ref")))
    if bad:
        return Check(
            "C1", FAIL, f"digest not verified by re-hashing: {', '.join(bad)}", tuple(rows)
        )
    rows.append(("verified", "manifest bytes re-hashed to the digest"))
    return Check("C1", PASS, "digest verified by re-hashing the manifest", tuple(rows))


def check_facts(o: Outcome) -> Check:
    if o.probe is None or o.probe.get("status") != "ok":
        reason = _get(o.probe, "reason") or "the probe did not run"
        return Check("C2", FAIL, f"probe failed: {reason}")
    facts = o.probe.get("facts") or {}
    rows = [(name, str(_get(facts, name))) for name in REQUIRED_FACTS + OPTIONAL_FACTS]
    missing = [n for n in REQUIRED_FACTS if not _get(facts, n)]
    errors = [str(e) for e in (facts.get("errors") or [])]
    rows += [("probe error", e) for e in errors[:10]]
    if missing:
        return Check("C2", FAIL, f"facts missing: {', '.join(missing)}", tuple(rows))
    absent = [n for n in OPTIONAL_FACTS if not _get(facts, n)]
    if absent:
        return Check("C2", WARN, f"optional facts missing: {', '.join(absent)}", tuple(rows))
    return Check(
        "C2", PASS, f"{_get(facts, 'engine.name')} {_get(facts, 'engine.version')}", tuple(rows)
    )


def check_smoke(o: Outcome) -> Check:
    s = o.smoke
    if s is None:
        return Check("C3", FAIL, "the smoke decode did not run")
    # Timings are in the report, not in the evidence: a verdict must not depend on machine load.
    rows = [(k, str(s[k])) for k in ("tokens", "max_logit_diff") if k in s]
    if s.get("status") != "pass":
        return Check(
            "C3", FAIL, f"smoke decode failed: {s.get('reason') or s.get('status')}", tuple(rows)
        )
    if not s.get("tokens"):
        # A smoke test that decoded nothing cannot have failed, so it cannot pass either.
        return Check("C3", FAIL, "smoke decode reported pass without decoding a token", tuple(rows))
    return Check("C3", PASS, f"decoded {s['tokens']} tokens, matches the reference", tuple(rows))


def eval_failures(ev: Out) -> list[str]:
    """Why one eval result (one suite at one point) fails; empty when it passes."""
    name = f"{ev.get('suite')}@{ev.get('point')}"
    if ev.get("status") == "error":
        return [f"{name}: {ev.get('reason') or 'did not run'}"]
    if not ev.get("samples"):
        return [f"{name}: zero samples scored"]
    metric, threshold, score = ev.get("metric"), ev.get("threshold"), ev.get("score")
    if metric is None or threshold is None or score is None:
        return [f"{name}: no score or threshold"]
    if float(score) < float(threshold):
        return [f"{name}: {metric} {float(score):.4g} < {float(threshold):.4g}"]
    if ev.get("status") != "pass":
        return [f"{name}: {ev.get('reason') or 'engine reported failure'}"]
    return []


def check_evals(o: Outcome) -> Check:
    if not o.evals:
        return Check("C4", FAIL, "no eval suite ran")
    rows = []
    failures: list[str] = []
    for ev in o.evals:
        score, threshold = ev.get("score"), ev.get("threshold")
        shown = (
            f"{ev.get('metric')}={score} (threshold {threshold}, {ev.get('samples', 0)} samples)"
        )
        rows.append((f"{ev.get('suite')}@{ev.get('point')}", shown))
        failures += eval_failures(ev)
    if failures:
        more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
        return Check("C4", FAIL, failures[0] + more, tuple(rows))
    return Check("C4", PASS, f"{len(o.evals)} eval result(s) at or above threshold", tuple(rows))


def _commit_label(commit: Mapping[str, Any]) -> str:
    subject = str(commit.get("subject", ""))
    pr = f" (#{commit['pr']})" if commit.get("pr") and f"#{commit['pr']}" not in subject else ""
    return f"{str(commit.get('sha', ''))[:9]} {subject}".strip() + pr


def check_precision(o: Outcome) -> Check:
    p = o.precision
    if p is None or p.get("status") == "n/a":
        return Check("C5", NA, str(_get(p, "reason") or "no baseline image to diff against"))
    if p.get("status") != "ok":
        return Check("C5", FAIL, f"precision diff failed: {p.get('reason')}")
    relevant = [f for f in p.get("files", []) if f.get("verdict") == "relevant"]
    cosmetic = [f for f in p.get("files", []) if f.get("verdict") == "cosmetic"]
    rows = [
        ("commits", str(len(p.get("commits", [])))),
        ("relevant files", str(len(relevant))),
        ("cosmetic files", str(len(cosmetic))),
    ]
    by_sha = {c.get("sha"): c for c in p.get("commits", [])}
    named: list[str] = []
    for f in relevant:
        shas = [str(s) for s in f.get("commits", [])]
        labels = [_commit_label(by_sha.get(s, {"sha": s})) for s in shas]
        rows.append((f"{f.get('path')} [{f.get('category')}]", "; ".join(labels) or "-"))
        named += [lab for lab in labels if lab not in named]
    if relevant:
        cats = sorted({str(f.get("category")) for f in relevant})
        return Check(
            "C5",
            WARN,
            f"precision-relevant changes ({', '.join(cats)}) in {'; '.join(named[:3])}"
            + (f" (+{len(named) - 3} more)" if len(named) > 3 else ""),
            tuple(rows),
        )
    return Check("C5", PASS, "no precision-relevant change between baseline and image", tuple(rows))


def check_watch(o: Outcome) -> Check:
    upstream = list(_get(o.precision, "upstream") or [])
    if not upstream:
        return Check("C6", NA, "no upstream watch list configured")
    rows: list[tuple[str, str]] = []
    missing: list[str] = []
    present: list[str] = []
    for item in upstream:
        ref, kind, found = str(item.get("ref")), str(item.get("kind")), bool(item.get("found"))
        why = f" ({item.get('why')})" if item.get("why") else ""
        rows.append((ref, f"{kind}: {'present' if found else 'absent'}{why}"))
        if not item.get("ok"):
            (missing if kind == "must-contain" else present).append(ref)
    if present:
        return Check(
            "C6", FAIL, f"must-not-contain present in the image: {', '.join(present)}", tuple(rows)
        )
    if missing:
        # The real-world case: an upstream fix not yet in the image is a risk to state, not a blocker.
        return Check("C6", WARN, f"risk: not yet in the image: {', '.join(missing)}", tuple(rows))
    return Check("C6", PASS, f"{len(upstream)} watched upstream change(s) as required", tuple(rows))


def _validator_check(cid: str, out: Out | None, what: str) -> Check:
    if out is None:
        return Check(cid, NA, f"{what} is checked by `relpipe release`")
    problems = [str(p) for p in out.get("problems", [])]
    rows = tuple((f"problem {i + 1}", p) for i, p in enumerate(problems[:20]))
    if out.get("status") != "ok" or problems:
        first = problems[0] if problems else str(out.get("reason") or "validator failed")
        return Check(cid, FAIL, f"{what}: {first}", rows)
    rows += tuple((k, str(v)) for k, v in sorted((out.get("evidence") or {}).items()))
    return Check(cid, PASS, f"{what} passes", rows)


def check_changelog(o: Outcome) -> Check:
    return _validator_check("C7", o.changelog, "perf-changelog entry")


def check_notes(o: Outcome) -> Check:
    return _validator_check("C8", o.notes, "release notes")


def check_golden(o: Outcome) -> Check:
    g = o.golden
    if g is None or g.get("status") == "n/a":
        return Check("C9", NA, str(_get(g, "reason") or "no golden acceptance-length files"))
    return _validator_check("C9", g, "golden acceptance length")


def check_scope(o: Outcome) -> Check:
    c = o.config
    if c is None:
        return Check("C10", NA, "no config key given")
    if c.get("status") != "ok":
        return Check("C10", FAIL, str(c.get("reason")))
    rows = [
        ("config key", str(c.get("key"))),
        ("master", str(c.get("master"))),
        ("pinned image", str(c.get("image"))),
        ("points", str(len(c.get("points", [])))),
    ]
    rows += [(str(p.get("name")), f"batch {p.get('batch')}") for p in c.get("points", [])]
    if not c.get("points"):
        return Check(
            "C10", FAIL, f"config key {c.get('key')} expands to no benchmark point", tuple(rows)
        )
    framework, engine = c.get("framework"), _get(o.probe, "facts.engine.name")
    if framework and engine and not str(framework).startswith(str(engine)):
        return Check(
            "C10",
            FAIL,
            f"config key {c.get('key')} runs {framework} but the image ships {engine}",
            tuple(rows),
        )
    return Check("C10", PASS, f"{c.get('key')}: {len(c['points'])} point(s) planned", tuple(rows))


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
)


def evaluate(outcome: Outcome, strict: bool = False) -> Verdict:
    return Verdict(tuple(check(outcome) for check in CHECKS), strict=strict)
