"""A release: a qualified image pinned in the benchmark repository, with entry, notes and checks.

`release` re-qualifies the image for the config key (normally a cache hit) and refuses a FAIL. It
then stages every change in a scratch copy of the repository, with the same functions that later
write the real files: the config pin (`changelog.configs.pin`), the lock entry with verified digest
and probe facts (`images.lock`), the perf-changelog entry (`changelog.append`, description lines
from `changelog.notes.description_lines`), and the EN + ZH notes (`changelog.notes`). All
validators run on the staged copy (the perf-changelog hook: C7; notes parity and facts: C8;
golden acceptance lengths: C9) and the verdict is recomputed with them. Only a non-FAIL verdict
touches the real repository; `--dry-run` prints the diff instead. The three files are written
under one repository lock, re-checked against what was staged, through a journal: two racing
releases never lose an update (the loser is refused), and a kill leaves nothing half-released.

The release record (`.relpipe/releases/<id>/`) holds release.json (the facts), notes.md,
changes.diff and the reports, so every number in the notes can be traced to a stage result.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..changelog.append import append, appended_bytes
from ..changelog.configs.load import master_keys
from ..changelog.configs.pin import edit_image
from ..changelog.configs.semdiff import diff as config_diff
from ..changelog.entry import ERROR, Entry, parse_appended
from ..changelog.errors import ChangelogError
from ..changelog.notes import ReleaseFacts, description_lines, render, render_title
from ..changelog.repository.era import MASTER_SUFFIX
from ..core import journal, jsoncodec
from ..core.check import Check
from ..core.files import file_lock
from ..core.reference import parse, split
from ..core.status import FAIL, NA, PASS, overall
from ..images import lock
from ..images.archive import pin_or_archived
from ..images.registry import RegistryClient
from ..validate import notes_check
from ..validate.gate import hook as perf_changelog
from ..validate.precision.notable import notable
from . import comparison, pins
from .comparison import HistoryOutput
from .containers import Engine
from .errors import PipelineError
from .outputs import EngineFacts, ReleaseChecks, ValidatorOutput, run_stage
from .plan import Options, Plan
from .report import ReportData, render_all
from .run import RunResult, qualify, state_dir
from .runrecord import (
    RunRecord,
    StageResult,
    StageRunner,
    atomic_write,
    digest_of,
    pretty_json,
    stage_key,
)
from .stages import NO_GOLDEN, assemble, golden_al_result, run_units
from .verdict import Outcome, Verdict, evaluate
from .workspace import Workspace

if TYPE_CHECKING:
    from ..changelog.entry import Entry
    from ..core.commit import Commit
    from ..validate.precision import PrecisionReport

DEFAULT_REPO_URL = "https://github.com/SemiAnalysisAI/InferenceX"
SCENARIO_TYPES = ("fixed-seq-len", "agentic-coding")
_IGNORE = shutil.ignore_patterns(".git", ".relpipe", "__pycache__")


class ReleaseRefused(PipelineError):
    """The verdict does not allow a release (checked failure)."""

    exit_code = 1


@dataclass(frozen=True, kw_only=True)
class Request:
    """What `relpipe release` was asked to do (its options): one image for one or more keys."""

    config_keys: tuple[str, ...]
    image: str
    pr_number: int | None = None
    descriptions: tuple[str, ...] = ()
    repo_url: str = DEFAULT_REPO_URL
    dry_run: bool = False
    strict: bool = False

    def to_json(self) -> dict[str, Any]:
        """What the release record keeps: how it is run (dry run, strict) is not what it is."""
        return jsoncodec.fields_to_json(self, exclude=("dry_run", "strict"))

    def of(self, key: str) -> Request:
        """The request as it concerns one key (its record and report)."""
        return replace(self, config_keys=(key,))


@dataclass(frozen=True, kw_only=True)
class Staged:
    """The staged repository copy and what was computed on it."""

    root: Path
    files: tuple[str, ...]  # repository-relative paths that changed
    facts: tuple[Mapping[str, Any], ...]  # release.json of each old -> new pair, in key order
    notes: str
    title: str
    checks: Mapping[str, ReleaseChecks]  # by key: the validators on the staged copy (C7, C8, C9)
    entry: Entry  # the perf-changelog entry appended to the staged changelog
    base: Mapping[str, str | None]  # `repo_state` of the copy before any edit


@dataclass(frozen=True, kw_only=True)
class ReleaseResult:
    qualification: RunResult  # the first key's
    verdict: Verdict  # the release's: the worst of its keys'
    record: RunRecord
    reports: dict[str, Path]
    diff: str
    written: bool
    keys: tuple[KeyResult, ...] = ()


@dataclass(frozen=True, kw_only=True)
class KeyResult:
    """One key of a release: its qualification, its verdict and its reports."""

    key: str
    qualification: RunResult
    verdict: Verdict
    reports: dict[str, Path]


def pr_link(repo_url: str, pr_number: int | None) -> str:
    # InferenceX writes `/pull/XXX` while the PR number is unknown and corrects it in the PR.
    return f"{repo_url.rstrip('/')}/pull/{pr_number if pr_number is not None else 'XXX'}"


def new_image_text(old: str, new: str) -> str:
    """The new image spelled the way the config spells the old one (e.g. without `docker.io/`)."""
    old_ref, new_ref = parse(old), parse(new)
    if old_ref.name == new_ref.name and new_ref.tag and not new_ref.digest:
        return f"{split(old).name}:{new_ref.tag}"
    return new


def release_facts(
    keyed: Sequence[tuple[str, Plan, Outcome, Verdict]],
    config_changes: Sequence[Any],
    points: Sequence[Any],
    new_image: str,
    old_image: str,
) -> dict[str, Any]:
    """release.json (changelog.notes schema 1) of the keys of one old -> new pair, from their
    recorded qualifications: the image facts and the precision diff are the pair's (the same
    cached stages for every key), the checks the worst of the keys', the evals every key's."""
    _, plan, outcome, _ = keyed[0]
    verdict = combine({key: v for key, _, _, v in keyed})
    evals = [(key if len(keyed) > 1 else None, e) for key, _, o, _ in keyed for e in o.evals]
    facts = outcome.probe.facts if outcome.probe else None
    engine = facts.engine if facts else EngineFacts()
    report = outcome.precision.report if outcome.precision else None
    commits = report.commits if report else ()
    packages = {"lmcache": facts.lmcache} if facts and facts.lmcache else {}
    risks = [
        {"kind": "missing-fix", "pr": int(u.ref.lstrip("#"))}
        for u in (report.upstream if report else ())
        if u.kind == "must-contain" and not u.ok and u.ref.lstrip("#").isdigit()
    ]
    baseline = outcome.baseline
    base_engine = baseline.facts.engine if baseline and baseline.facts else EngineFacts()
    # Without the baseline's engine version the notes say only the image, never a guess.
    has_engine = bool(base_engine.name and base_engine.version)
    engine_json = {"name": engine.name, "version": engine.version, "commit": engine.commit}
    old_engine = {
        "name": base_engine.name,
        "version": base_engine.version,
        "commit": base_engine.commit,
    }
    return {
        "schema": 1,
        "config_keys": [key for key, _, _, _ in keyed],
        "old_image": {
            "ref": old_image,
            "digest": baseline.digest if baseline else None,
            **({"engine": old_engine} if has_engine else {}),
        },
        "new_image": {
            "ref": new_image,
            "digest": plan.image.digest,
            "engine": engine_json,
            **({"rocm": facts.rocm} if facts and facts.rocm else {}),
            "packages": packages,
        },
        # Notable commits only (not those touching only tests, docs, CI, other models' recipes),
        # their PRs written as InferenceX writes them: ROCm/ATOM#N.
        "commits": [
            {"sha": c.sha, "subject": c.subject, **_pr_of(c, report.project if report else None)}
            for c in notable(
                commits, report.files if report else (), plan.config.key if plan.config else None
            )
        ],
        "commit_count": len(commits),
        "config_changes": list(config_changes),
        "points_plan": list(points),
        "precision": precision_facts(report),
        "validation": {
            "checks": [{"id": c.id, "status": c.status} for c in verdict.checks if c.status != NA],
            "evals": [
                {
                    "suite": f"{key + '/' if key else ''}{e.suite}/{e.point}",
                    "score": e.score,
                    "threshold": e.threshold,
                    "samples": e.samples,
                }
                for key, e in evals
                if e.score is not None
            ],
        },
        "risks": risks,
        "history": [row for _, _, o, _ in keyed for row in comparison.notes_rows(o.history)],
    }


def combine(verdicts: Mapping[str, Verdict]) -> Verdict:
    """One verdict of several keys': each check the worst of the keys' (FAIL, WARN, PASS, N/A),
    its reason naming the keys with that status; one key's verdict is itself."""
    if len(verdicts) == 1:
        return next(iter(verdicts.values()))
    by_id: dict[str, list[tuple[str, Check]]] = {}
    for key, verdict in verdicts.items():
        for check in verdict.checks:
            by_id.setdefault(check.id, []).append((key, check))
    combined = []
    for cid, keyed in by_id.items():
        statuses = [c.status for _, c in keyed]
        status = NA if all(st == NA for st in statuses) else overall(statuses)
        named = [(k, c) for k, c in keyed if c.status == status]
        reason = "; ".join(f"{k}: {c.reason}" for k, c in named)
        combined.append(Check(id=cid, title=keyed[0][1].title, status=status, reason=reason[:2000]))
    strict = any(v.strict for v in verdicts.values())
    return Verdict(tuple(combined), strict=strict)


def _pr_of(commit: Commit, project: str | None) -> dict[str, Any]:
    return {"pr": commit.pr, **({"repo": project} if project else {})} if commit.pr else {}


def precision_facts(report: PrecisionReport | None) -> dict[str, Any]:
    """The notes' precision evidence from the diff: watched files,
    and relevant files with their PR.
    """
    files = report.files if report else ()
    changed = {f.path for f in files if f.verdict in ("relevant", "cosmetic")}
    relevant = [f for f in files if f.verdict == "relevant"]
    pr_of = {c.sha: c.pr for c in (report.commits if report else ())}
    watch = report.watch if report else ()
    out_relevant = []
    for f in relevant:
        row: dict[str, Any] = {"path": f.path, "category": f.category or "other"}
        # A PR is named only when one commit touched the file: with several, which one moved
        # precision is a reviewer's call, and the notes must not guess.
        if len(f.commits) == 1 and pr_of.get(f.commits[0]):
            row["pr"] = pr_of[f.commits[0]]
        out_relevant.append(row)
    return {
        # A watched part of a file that changed elsewhere is not "unchanged" to a reader.
        "unchanged": [w.path for w in watch if w.state == "unchanged" and w.path not in changed],
        "changed_not_relevant": [
            w.path
            for w in watch
            if w.state in ("cosmetic", "changed") and not any(f.path in w.files for f in relevant)
        ],
        "relevant": out_relevant,
    }


@dataclass(frozen=True, kw_only=True)
class KeyRun:
    """One key's qualification of the release's image (its baseline is the key's pinned image)."""

    key: str
    run: RunResult

    @property
    def plan(self) -> Plan:
        return self.run.plan

    @property
    def outcome(self) -> Outcome:
        assert self.run.outcome is not None
        return self.run.outcome

    @property
    def verdict(self) -> Verdict:
        assert self.run.verdict is not None
        return self.run.verdict

    @property
    def pair(self) -> tuple[str, str]:
        """(old, new): the engine pair the precision diff compares, by digest where known."""
        old = self.outcome.baseline.digest if self.outcome.baseline else None
        assert self.plan.config is not None
        return (old or self.plan.config.image, self.plan.image.digest)


def pairs(runs: Sequence[KeyRun]) -> list[list[KeyRun]]:
    """The keys grouped by old -> new pair, in the order their first key was given: each pair's
    precision diff is one (cached) stage, and one section of the notes."""
    groups: dict[tuple[str, str], list[KeyRun]] = {}
    for run in runs:
        groups.setdefault(run.pair, []).append(run)
    return list(groups.values())


def stage_release(ws: Workspace, req: Request, runs: Sequence[KeyRun], scratch: Path) -> Staged:
    """Apply every change to a copy of the repository and run all validators on it: each key's
    `image:` line, one changelog entry naming every key, one notes pair (a section per old ->
    new pair), and, only where the team opted in, the lock file."""

    shutil.copytree(ws.root, scratch, ignore=_IGNORE, symlinks=True)
    base = repo_state(scratch)  # what was copied, not what a hash before the copy saw
    changes: dict[str, tuple[list[Any], list[Any], str, str]] = {}
    masters: list[str] = []
    for run in runs:
        cfg = run.plan.config
        assert cfg is not None
        master = scratch / cfg.master
        old_text = master.read_text(encoding="utf-8")
        new_image = new_image_text(cfg.image, run.plan.image.ref)
        try:
            new_text, _ = edit_image(old_text, run.key, new_image, cfg.master)
        except ChangelogError as exc:
            raise PipelineError(f"{exc}; nothing written") from None
        write_text(master, new_text)
        done = config_diff(old_text, new_text).to_json()
        changes[run.key] = (
            [c for c in done["changes"] if c.get("key") == run.key],
            [p for p in done["points"] if p.get("key") == run.key],
            cfg.image,
            new_image,
        )
        masters += [cfg.master] if cfg.master not in masters else []
    facts_list: list[dict[str, Any]] = []
    lines: list[str] = []
    sections: list[str] = []
    for group in pairs(runs):
        first = group[0]
        _, _, old_image, new_image = changes[first.key]
        facts_json = release_facts(
            [(r.key, r.plan, r.outcome, r.verdict) for r in group],
            [c for r in group for c in changes[r.key][0]],
            [p for r in group for p in changes[r.key][1]],
            new_image,
            old_image,
        )
        facts_list.append(facts_json)
        facts = ReleaseFacts.from_json(facts_json)
        lines += [line for line in description_lines(facts) if line not in lines]
        sections.append(render(facts, "both"))
    entry = make_entry(req, (*lines, *req.descriptions), [r.plan for r in runs])
    apply_changelog(scratch / ws.changelog, entry)
    files = [*masters, str(ws.changelog)]
    if ws.lock is not None:  # the team's own lock file, opted into in .relpipe.toml
        tagged = split(runs[0].plan.image.pinned).without_digest
        pin_lock(scratch / ws.lock, tagged, runs[0].outcome)
        files.append(str(ws.lock))
    title = render_title(
        ReleaseFacts.from_json({**facts_list[0], "config_keys": [r.key for r in runs]})
    )
    notes = f"# {title}\n\n" + "\n".join(sections)
    changelog = hook_result(ws, scratch, req)
    notes_checks = {
        r.key: notes_result(section, facts_json)
        for group, section, facts_json in zip(pairs(runs), sections, facts_list, strict=True)
        for r in group
    }
    checks = {
        r.key: ReleaseChecks(
            changelog=changelog,
            notes=notes_checks[r.key],
            golden=golden_al_result(Workspace(scratch), r.key)
            if (scratch / ws.era.golden).is_dir()
            else NO_GOLDEN,
        )
        for r in runs
    }
    return Staged(
        root=scratch,
        files=tuple(files),
        facts=tuple(facts_list),
        notes=notes,
        title=title,
        checks=checks,
        entry=entry,
        base=base,
    )


def write_text(path: Path, text: str) -> None:

    atomic_write(path, text.encode("utf-8"))


def make_entry(req: Request, lines: Sequence[str], plans: Sequence[Plan]) -> Entry:
    """One entry naming every key of the release, as InferenceX writes several keys' bumps."""

    names = {p.name.split("/", 1)[0] for plan in plans for p in plan.points}
    scenarios = sorted(names & set(SCENARIO_TYPES))
    return Entry(
        config_keys=req.config_keys,
        description=tuple(lines),
        pr_link=pr_link(req.repo_url, req.pr_number),
        scenario_type=tuple(scenarios) or None,
    )


def apply_changelog(path: Path, entry: Entry) -> None:

    append(path, entry)


def pin_lock(path: Path, tagged: str, outcome: Outcome) -> None:
    """The opt-in lock file's entry of the new image: re-pinned (verified), then the probe facts
    merged in."""

    with RegistryClient() as client:
        pin = pin_or_archived(client, tagged, lock.load(path))
    qualified = outcome.image.digest if outcome.image else None
    if pin.digest != qualified:
        raise ReleaseRefused(
            f"{tagged} now resolves to {pin.digest}, not the qualified "
            f"{qualified}; qualify the new digest first"
        )
    lock.update(path, [pin])
    facts: dict[str, Any] = {}
    if outcome.probe and outcome.probe.facts:
        facts = jsoncodec.to_json(outcome.probe.facts)
    facts.pop("errors", None)
    lock.merge_facts(
        path, tagged, pin.digest, {k: v for k, v in facts.items() if v not in (None, {}, [])}
    )


def hook_result(ws: Workspace, scratch: Path, req: Request) -> ValidatorOutput:
    """The `validate_perf_changelog` checks, base = the repository's file, head = the staged one."""

    changelog = ws.changelog
    base = ws.root / changelog
    keys = [k for m in Workspace(scratch).masters() for k in master_keys(m)]
    # Judged as the era's validator judges the PR the release goes to (its entry schema); without
    # --pr-number the entry links /pull/XXX for a PR not yet open, as on a feature branch.
    rules = perf_changelog.Policy(
        repo_url=req.repo_url,
        pr_number=req.pr_number,
        pull_request=req.pr_number is None,
        config_keys=keys,
        schema=ws.era.entry_schema,
    )
    head = (scratch / changelog).read_bytes()
    report = perf_changelog.check(
        base.read_bytes() if base.exists() else b"", head, rules, str(changelog)
    )
    problems = [f.format(str(changelog)) for f in report.findings if f.severity == ERROR]
    evidence: dict[str, str | int] = {
        "mode": report.mode,
        "entries": report.entries,
        "appended": report.appended,
    }
    return ValidatorOutput(status=PASS, problems=tuple(problems), evidence=evidence)


def notes_result(notes: str, facts: Mapping[str, Any]) -> ValidatorOutput:

    findings = notes_check.check(notes, ReleaseFacts.from_json(facts), "notes.md")
    return ValidatorOutput(
        status=PASS,
        problems=tuple(str(f) for f in findings),
        evidence={"languages": "en + zh", "lines": notes.count("\n")},
    )


def unified_diff(ws: Workspace, staged: Staged) -> str:
    out: list[str] = []
    for rel in staged.files:
        before = (ws.root / rel).read_text(encoding="utf-8") if (ws.root / rel).exists() else ""
        after = (staged.root / rel).read_text(encoding="utf-8")
        out += difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            f"a/{rel}",
            f"b/{rel}",
        )
    return "".join(out)


def release(
    ws: Workspace, req: Request, options: Options, state: Path | None = None
) -> ReleaseResult | AlreadyReleased:
    """Release `req.image` for every key of `req`: qualify it once per key (the image's own
    stages are cached by digest, so the image is qualified once and each key adds its points),
    stage, validate, and (unless a dry run) write the config lines and the one entry."""
    keys = tuple(dict.fromkeys(req.config_keys))
    req = replace(req, config_keys=keys)
    # A key relpipe cannot read faithfully (a recipe outside the repository or missing) is refused
    # before anything, the locks' files included, is written; an unknown master field is C10's WARN.
    for key in keys:
        ws.config_key(key, 1)
    state = release_state(ws, state, dry_run=req.dry_run)
    if req.dry_run:
        refuse_pending(ws)
    else:
        with repository_lock(ws):  # stage from a whole repository, never a half-written release
            recover_interrupted(ws)
    one_line(ws, keys)
    done = released_line(ws, req, state)
    if done is not None:  # whatever an earlier run of this release was interrupted in
        return AlreadyReleased(done)
    # One engine for every key: each old -> new engine pair is extracted and diffed once, then
    # scoped to each key's paths (C5); the image's own stages are cache hits after the first key.
    engine = Engine(keep_pairs=True)
    try:
        runs = [
            KeyRun(
                key=key,
                run=qualify(
                    req.image,
                    baseline="pinned",
                    config_key=key,
                    ws=ws,
                    options=options,
                    state=state,
                    engine=engine,
                ),
            )
            for key in keys
        ]
        pairs_diffed = engine.pairs_diffed
    finally:
        engine.close()
    failed = [r for r in runs if r.verdict.overall == FAIL]
    if failed:
        why = "; ".join(
            f"{r.key}: {c.id} {c.reason}"
            for r in failed
            for c in r.verdict.checks
            if c.status == FAIL
        )
        raise ReleaseRefused(
            f"release refused: {req.image} qualified FAIL ({why}); "
            f"report: {failed[0].run.reports['report.md']}"
        )
    with tempfile.TemporaryDirectory(prefix="relpipe-release-") as tmp:
        staged = stage_release(ws, req, runs, Path(tmp) / "repo")
        diff = unified_diff(ws, staged)
        results = [record_key(ws, req.of(r.key), r, staged.checks[r.key], state) for r in runs]
        if len(runs) == 1:
            record, verdict, reports = results[0]
        else:
            record, verdict, reports = record_release(ws, req, runs, results, state, pairs_diffed)
        # One pair: release.json as `notes render` reads it; several: one document per pair.
        facts: Any = staged.facts[0] if len(staged.facts) == 1 else list(staged.facts)
        record.write_file("release.json", pretty_json(facts))
        record.write_file("notes.md", staged.notes.encode())
        record.write_file("changes.diff", diff.encode())
        if verdict.overall == FAIL:
            failed_checks = "; ".join(
                f"{c.id} {c.reason}" for c in verdict.checks if c.status == FAIL
            )
            raise ReleaseRefused(
                f"release refused: {failed_checks}; nothing written; report: {reports['report.md']}"
            )
        written = False
        if not req.dry_run:
            record_pins(ws, state, runs)
            write_staged(ws, staged)
            written = True
    keyed = tuple(
        KeyResult(key=r.key, qualification=r.run, verdict=v, reports=rep)
        for r, (_, v, rep) in zip(runs, results, strict=True)
    )
    return ReleaseResult(
        qualification=runs[0].run,
        verdict=verdict,
        record=record,
        reports=reports,
        diff=diff,
        written=written,
        keys=keyed,
    )


def one_line(ws: Workspace, keys: Sequence[str]) -> None:
    """Several keys are released together only when they pin images of one repository: a bump
    of one image line (a key of another line is its own release)."""
    pinned = {key: ws.config_key(key, 1).image for key in keys}
    lines = {parse(image).name for image in pinned.values()}
    if len(lines) > 1:
        first = parse(pinned[keys[0]]).name
        other = next(k for k in keys if parse(pinned[k]).name != first)
        raise PipelineError(
            f"{keys[0]} pins an image of {first} but {other} pins {pinned[other]}: a release "
            "bumps one image line; release those keys separately"
        )


def record_key(
    ws: Workspace, req: Request, run: KeyRun, checks: ReleaseChecks, state: Path
) -> tuple[RunRecord, Verdict, dict[str, Path]]:
    """One key's release record (`releases/<id>/`): its inputs, the staged checks and its
    verdict and reports (what `relpipe report` re-renders)."""
    inputs: dict[str, Any] = {
        "kind": "release",
        "qualification": jsoncodec.to_json(run.plan),
        "run": run.plan.run_id,
        "request": jsoncodec.to_json(req),
        "repo": repo_state(ws.root),
    }
    record = RunRecord(state / "releases" / digest_of(inputs)[:32])
    record.write_inputs(inputs)
    # Always the checks of this staging (never a cached copy): they are what the verdict says.
    record.save(
        StageResult(
            stage="release-checks",
            key=stage_key("release-checks", inputs),
            inputs=inputs,
            output=jsoncodec.to_json(checks),
            seconds=0.0,
        )
    )
    verdict, reports = render_release(run.plan, run.outcome, checks, inputs, record, req.strict)
    return record, verdict, reports


def record_release(
    ws: Workspace,
    req: Request,
    runs: Sequence[KeyRun],
    results: Sequence[tuple[RunRecord, Verdict, dict[str, Path]]],
    state: Path,
    pairs_diffed: int,
) -> tuple[RunRecord, Verdict, dict[str, Path]]:
    """The record of a release of several keys: its verdict is the worst of the keys' (each
    check naming the keys that have its status), with each key's record beside it
    (`keys.json`) and which stages ran or were cached per key (the image is qualified once: its
    pull, probe and smoke run for the first key and are cache hits for the others), and how many
    old -> new engine pairs were extracted and diffed (once each, then scoped per key)."""
    inputs: dict[str, Any] = {
        "kind": "release-keys",
        "request": jsoncodec.to_json(req),
        "keys": {r.key: str(rec.root) for r, (rec, _, _) in zip(runs, results, strict=True)},
        "repo": repo_state(ws.root),
    }
    record = RunRecord(state / "releases" / digest_of(inputs)[:32])
    record.write_inputs(inputs)
    verdict = combine({r.key: v for r, (_, v, _) in zip(runs, results, strict=True)})
    qualified = [
        {
            "key": r.key,
            "run": r.plan.run_id,
            "record": str(rec.root),
            "verdict": v.overall.value,
            "ran": list(r.run.ran),
            "cached": list(r.run.cached),
        }
        for r, (rec, v, _) in zip(runs, results, strict=True)
    ]
    record.write_file(
        "keys.json", pretty_json({"keys": qualified, "engine_pairs_diffed": pairs_diffed})
    )
    first = runs[0]
    title = f"release {', '.join(req.config_keys)} -> {first.plan.image.ref}"
    reports = render_all(
        ReportData(
            run_id=digest_of(inputs)[:32],
            title=title,
            inputs=inputs,
            outcome=first.outcome,
            verdict=verdict,
        ),
        record.root,
    )
    return record, verdict, reports


def record_pins(ws: Workspace, state: Path, runs: Sequence[KeyRun]) -> None:
    """The released image's verified pin and probe facts, in relpipe's state (`pipeline.pins`):
    re-pinned now, and refused if the tag moved since it was qualified."""

    first = runs[0]
    tagged = split(first.plan.image.pinned).without_digest
    with RegistryClient() as client:
        pin = pin_or_archived(client, tagged, pins.load(ws, state))
    qualified = first.outcome.image.digest if first.outcome.image else None
    if pin.digest != qualified:
        raise ReleaseRefused(
            f"{tagged} now resolves to {pin.digest}, not the qualified "
            f"{qualified}; qualify the new digest first"
        )
    facts: dict[str, Any] = {}
    if first.outcome.probe and first.outcome.probe.facts:
        facts = jsoncodec.to_json(first.outcome.probe.facts)
    facts.pop("errors", None)
    kept = {k: v for k, v in facts.items() if v not in (None, {}, [])}
    pins.record(None, state, [pin], {lock.key_for(pin.reference): kept})


def release_state(ws: Workspace, given: Path | None, *, dry_run: bool) -> Path:
    """Where the release keeps its records, cache and pins. A dry run writes nothing under the
    checkout: when the state would be there (the default `REPO/.relpipe`), it uses this user's
    own dry-run state instead (`$XDG_CACHE_HOME/relpipe/dry-run/<checkout>`)."""
    state = state_dir(ws, given)
    if not dry_run or not pins.state_is_inside(ws, state):
        return state
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    name = hashlib.sha256(str(ws.root.resolve()).encode()).hexdigest()[:16]
    return Path(base) / "relpipe" / "dry-run" / name


def refuse_pending(ws: Workspace) -> None:
    """A dry run does not finish an interrupted release (that writes files): it says so."""
    if journal_of(ws).exists():
        raise PipelineError(
            "an interrupted release of this repository is pending; run `relpipe release` "
            "without --dry-run to finish it first"
        )


JOURNAL = "release.journal"  # named per repository in this user's state folder (core.journal)


@dataclass(frozen=True)
class AlreadyReleased:
    """The repository already pins the image's current digest for the key: nothing to do."""

    line: str


def journal_of(ws: Workspace) -> Path:
    """The release journal of `ws`: machine-local recovery state, never a file of the work tree."""
    return journal.journal_path(ws.root, JOURNAL)


def admitter(ws: Workspace) -> Callable[[str, bytes | None, bytes], str | None]:
    """The journal's admission rule for `ws`: a release writes one master config of its era,
    the lock file and the changelog, and the changelog only by appending entries to it."""

    changelog, masters = str(ws.changelog), ws.era.masters
    lock_file = str(ws.lock) if ws.lock is not None else None  # only where the team opted in

    def admit(rel: str, old: bytes | None, new: bytes) -> str | None:
        if rel not in (changelog, lock_file) and not ws.era.is_master(rel):
            return f"a release writes only {masters}/*{MASTER_SUFFIX} and the changelog"
        if rel == changelog:
            try:
                errors = parse_appended(old or b"", new, rel).errors
            except ChangelogError as exc:
                return str(exc)
            if errors:
                return f"not entries appended to the changelog ({errors[0].format(rel)})"
        return None

    return admit


def released_line(ws: Workspace, req: Request, state: Path) -> str | None:
    """'nothing to do' when every key's config already pins `req.image` and relpipe's pins its
    current digest (re-pinned, verified): a second release of it would only repeat the entry."""

    for key in req.config_keys:
        pinned = ws.config_key(key, 1).image
        if pinned != new_image_text(pinned, req.image):
            return None
    entry = pins.lookup(ws, state, req.image)
    if entry is None:
        return None
    with RegistryClient() as client:
        digest = client.pin(req.image).digest
    if entry.digest != digest:
        return None
    verb = "pins" if len(req.config_keys) == 1 else "pin"
    return f"nothing to do: {', '.join(req.config_keys)} already {verb} {req.image} at {digest}"


def repo_state(root: Path) -> dict[str, str | None]:
    """Hashes of what a release rewrites (configs/, changelog, lock file) in the tree at `root`."""
    ws = Workspace(root)
    return {
        "configs": ws.tree_hash(ws.era.masters),
        "changelog": ws.file_hash(ws.changelog),
        "lock": ws.file_hash(ws.lock) if ws.lock is not None else None,
    }


@contextlib.contextmanager
def repository_lock(ws: Workspace) -> Iterator[None]:
    """The one lock of a release's writes: the flock on the repository folder (no file is
    created), which is also the changelog's folder lock (`changelog.append`), plus, where the team
    opted into a lock file, that file's own lock (`images.lock`), so neither a changelog appender
    nor `relpipe images pin` can write between our check and our writes. Taken in this order
    everywhere, so two releases cannot deadlock."""
    with file_lock(ws.root, what="repository lock", error=PipelineError):
        if ws.lock is None:
            yield
            return
        with lock.locked(ws.root / ws.lock):
            yield


def recover_interrupted(ws: Workspace) -> list[str]:
    """Finish a release a crash interrupted (its journal survived); the caller holds the lock."""
    return journal.recover(journal_of(ws), ws.root, error=PipelineError, admit=admitter(ws))


def write_staged(ws: Workspace, staged: Staged) -> None:
    """Write a staged release into the repository: all three files or none.

    Under the repository lock: an interrupted earlier release is finished first; the repository
    must still be the one the release was staged from (`staged.base`), else the release lost a
    race and is refused with nothing written; the changelog's new bytes are re-derived with
    `changelog.append.appended_bytes` (the hook's suffix check) and must equal the staged ones;
    then config, changelog and lock file are committed through a journal (`core.journal`), so a
    kill at any instant leaves the old repository or, once the next release recovers, the new one.
    """

    with repository_lock(ws):
        recover_interrupted(ws)
        if repo_state(ws.root) != staged.base:
            raise ReleaseRefused(
                "the benchmark repository changed while the release was staged (another release "
                "or writer got there first); nothing written; run release again"
            )
        path = ws.root / ws.changelog
        old = path.read_bytes() if path.exists() else b""
        try:
            new = appended_bytes(path, old, staged.entry)
        except ChangelogError as exc:
            raise ReleaseRefused(f"{exc}; nothing written") from None
        if new != (staged.root / ws.changelog).read_bytes():
            raise ReleaseRefused(
                f"{ws.changelog}: the staged file is not the entry appended to the repository's; "
                "nothing written; run release again"
            )
        changes = [
            journal.FileChange(
                rel=rel,
                old_sha256=journal.sha256_of(ws.root / rel),
                new=(staged.root / rel).read_bytes(),
            )
            for rel in staged.files
        ]
        journal.commit(journal_of(ws), ws.root, changes, error=PipelineError, admit=admitter(ws))


def render_release(
    plan: Plan,
    outcome: Outcome,
    checks: ReleaseChecks,
    inputs: Mapping[str, Any],
    record: RunRecord,
    strict: bool,
    force: bool = False,
) -> tuple[Verdict, dict[str, Path]]:
    """The release verdict (qualification outcome + C7/C8/C9 of the staged release)
    and its reports.
    """
    full = replace(outcome, changelog=checks.changelog, notes=checks.notes, golden=checks.golden)
    if full.history is not None and not force:
        comparison.save(full.history, record.root)  # what C11/C12 saw, for `relpipe report`
    verdict = evaluate(full, strict=strict)
    title = f"release {', '.join(inputs['request']['config_keys'])} -> {plan.image.ref}"
    return verdict, render_all(
        ReportData(run_id=plan.run_id, title=title, inputs=inputs, outcome=full, verdict=verdict),
        record.root,
        force=force,
    )


def _never_run() -> ReleaseChecks:
    raise AssertionError("an offline runner never runs a stage")


def rerender_release(run_dir: Path, strict: bool = False) -> tuple[Verdict, dict[str, Path]]:
    """`relpipe report` on a release record:
    the qualification stages come from the state's cache.
    """
    record = RunRecord(run_dir, cache=run_dir.parent.parent / "cache" / "stages")
    inputs = {
        k: v for k, v in record.inputs().items() if k != "schema"
    }  # as written, minus the envelope
    plan = Plan.from_json(inputs["qualification"])
    outputs = run_units(plan, StageRunner(record, offline=True), Engine())
    checks = run_stage(
        StageRunner(record, offline=True),
        ReleaseChecks,
        "release-checks",
        inputs,
        _never_run,
        "release checks",
    )
    seen = comparison.load(run_dir) or HistoryOutput(status=NA, reason="not recorded")
    outcome = replace(assemble(plan, outputs), history=seen)
    return render_release(plan, outcome, checks, inputs, record, strict, force=True)
