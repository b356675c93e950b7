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
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relpipe.changelog.repository.era import MASTER_SUFFIX
from relpipe.core import journal, jsoncodec
from relpipe.core.files import file_lock
from relpipe.core.reference import parse, split
from relpipe.core.status import FAIL, NA, PASS
from relpipe.pipeline import comparison
from relpipe.pipeline.comparison import HistoryOutput
from relpipe.pipeline.containers import Engine
from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.outputs import EngineFacts, ReleaseChecks, ValidatorOutput, run_stage
from relpipe.pipeline.plan import Options, Plan
from relpipe.pipeline.report import ReportData, render_all
from relpipe.pipeline.run import RunResult, qualify, state_dir
from relpipe.pipeline.runrecord import (
    RunRecord,
    StageResult,
    StageRunner,
    digest_of,
    pretty_json,
    stage_key,
)
from relpipe.pipeline.stages import NO_GOLDEN, assemble, golden_al_result, run_units
from relpipe.pipeline.verdict import Outcome, Verdict, evaluate
from relpipe.pipeline.workspace import Workspace
from relpipe.validate.precision.notable import notable

if TYPE_CHECKING:
    from relpipe.changelog.entry import Entry
    from relpipe.core.commit import Commit
    from relpipe.validate.precision import PrecisionReport

DEFAULT_REPO_URL = "https://github.com/SemiAnalysisAI/InferenceX"
SCENARIO_TYPES = ("fixed-seq-len", "agentic-coding")
_IGNORE = shutil.ignore_patterns(".git", ".relpipe", "__pycache__")


class ReleaseRefused(PipelineError):
    """The verdict does not allow a release (checked failure)."""

    exit_code = 1


@dataclass(frozen=True, kw_only=True)
class Request:
    """What `relpipe release` was asked to do (its options)."""

    config_key: str
    image: str
    pr_number: int | None = None
    descriptions: tuple[str, ...] = ()
    repo_url: str = DEFAULT_REPO_URL
    dry_run: bool = False
    strict: bool = False

    def to_json(self) -> dict[str, Any]:
        """What the release record keeps: how it is run (dry run, strict) is not what it is."""
        return jsoncodec.fields_to_json(self, exclude=("dry_run", "strict"))


@dataclass(frozen=True, kw_only=True)
class Staged:
    """The staged repository copy and what was computed on it."""

    root: Path
    files: tuple[str, ...]  # repository-relative paths that changed
    facts: Mapping[str, Any]
    notes: str
    title: str
    checks: ReleaseChecks  # the validators' results on the staged copy (C7, C8, C9)
    entry: Entry  # the perf-changelog entry appended to the staged changelog
    base: Mapping[str, str | None]  # `repo_state` of the copy before any edit


@dataclass(frozen=True, kw_only=True)
class ReleaseResult:
    qualification: RunResult
    verdict: Verdict
    record: RunRecord
    reports: dict[str, Path]
    diff: str
    written: bool


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
    plan: Plan,
    outcome: Outcome,
    verdict: Verdict,
    config_changes: Sequence[Any],
    points: Sequence[Any],
    new_image: str,
    old_image: str,
) -> dict[str, Any]:
    """release.json (changelog.notes schema 1) from the recorded qualification."""
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
        "config_keys": [plan.config.key] if plan.config else [],
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
                    "suite": f"{e.suite}/{e.point}",
                    "score": e.score,
                    "threshold": e.threshold,
                    "samples": e.samples,
                }
                for e in outcome.evals
                if e.score is not None
            ],
        },
        "risks": risks,
        "history": comparison.notes_rows(outcome.history),
    }


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


def stage_release(
    ws: Workspace, req: Request, plan: Plan, outcome: Outcome, verdict: Verdict, scratch: Path
) -> Staged:
    """Apply every change to a copy of the repository and run all validators on it."""
    from relpipe.changelog.configs.pin import edit_image
    from relpipe.changelog.configs.semdiff import diff as config_diff
    from relpipe.changelog.notes import ReleaseFacts, description_lines, render, render_title

    assert plan.config is not None
    shutil.copytree(ws.root, scratch, ignore=_IGNORE, symlinks=True)
    base = repo_state(scratch)  # what was copied, not what a hash before the copy saw
    master = scratch / plan.config.master
    old_text = master.read_text(encoding="utf-8")
    old_image = plan.config.image
    new_image = new_image_text(old_image, plan.image.ref)
    new_text, _ = edit_image(old_text, req.config_key, new_image, plan.config.master)
    write_text(master, new_text)
    changes = config_diff(old_text, new_text)
    key_changes = [c for c in changes.to_json()["changes"] if c.get("key") == req.config_key]
    key_points = [p for p in changes.to_json()["points"] if p.get("key") == req.config_key]
    facts_json = release_facts(
        plan, outcome, verdict, key_changes, key_points, new_image, old_image
    )
    facts = ReleaseFacts.from_json(facts_json)
    lines = tuple(description_lines(facts)) + req.descriptions
    entry = make_entry(req, lines, plan)
    apply_changelog(scratch / ws.changelog, entry)
    pin_lock(scratch / ws.lock, split(plan.image.pinned).without_digest, outcome)
    title = render_title(facts)
    notes = f"# {title}\n\n{render(facts, 'both')}"
    checks = validate_staged(ws, req, scratch, facts_json, notes)
    files = tuple(str(p) for p in (plan.config.master, ws.changelog, ws.lock))
    return Staged(
        root=scratch,
        files=files,
        facts=facts_json,
        notes=notes,
        title=title,
        checks=checks,
        entry=entry,
        base=base,
    )


def write_text(path: Path, text: str) -> None:
    from relpipe.pipeline.runrecord import atomic_write

    atomic_write(path, text.encode("utf-8"))


def make_entry(req: Request, lines: Sequence[str], plan: Plan) -> Entry:
    from relpipe.changelog.entry import Entry

    scenarios = sorted({p.name.split("/", 1)[0] for p in plan.points} & set(SCENARIO_TYPES))
    return Entry(
        config_keys=(req.config_key,),
        description=tuple(lines),
        pr_link=pr_link(req.repo_url, req.pr_number),
        scenario_type=tuple(scenarios) or None,
    )


def apply_changelog(path: Path, entry: Entry) -> None:
    from relpipe.changelog.append import append

    append(path, entry)


def pin_lock(path: Path, tagged: str, outcome: Outcome) -> None:
    """Lock entry of the new image: re-pinned (verified), then the probe facts merged in."""
    from relpipe.images import lock
    from relpipe.images.archive import pin_or_archived
    from relpipe.images.registry import RegistryClient

    with RegistryClient() as client:
        pin = pin_or_archived(client, tagged, path)
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


def validate_staged(
    ws: Workspace, req: Request, scratch: Path, facts: Mapping[str, Any], notes: str
) -> ReleaseChecks:
    """Run the perf-changelog hook (C7), notes check (C8) and golden AL (C9) on the staged copy."""
    golden = (
        golden_al_result(Workspace(scratch), req.config_key)
        if (scratch / ws.era.golden).is_dir()
        else NO_GOLDEN
    )
    return ReleaseChecks(
        changelog=hook_result(ws, scratch, req),
        notes=notes_result(notes, facts),
        golden=golden,
    )


def hook_result(ws: Workspace, scratch: Path, req: Request) -> ValidatorOutput:
    """The `validate_perf_changelog` checks, base = the repository's file, head = the staged one."""
    from relpipe.changelog.configs.load import master_keys
    from relpipe.changelog.entry import ERROR
    from relpipe.validate.gate import hook as perf_changelog

    changelog = ws.changelog
    base = ws.root / changelog
    keys = [k for m in Workspace(scratch).masters() for k in master_keys(m)]
    rules = perf_changelog.Policy(repo_url=req.repo_url, pr_number=req.pr_number, config_keys=keys)
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
    from relpipe.changelog.notes import ReleaseFacts
    from relpipe.validate import notes_check

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
    # A key relpipe cannot read faithfully (an unknown master field, a recipe outside the
    # repository or missing) is refused before anything, the locks' files included, is written.
    ws.config_key(req.config_key, 1)
    with repository_lock(ws):  # stage from a whole repository, never a half-written release
        recover_interrupted(ws)
    done = released_line(ws, req)
    if done is not None:  # whatever an earlier run of this release was interrupted in
        return AlreadyReleased(done)
    q = qualify(
        req.image, baseline="pinned", config_key=req.config_key, ws=ws, options=options, state=state
    )
    assert q.verdict is not None
    if q.verdict.overall == FAIL:
        failed = "; ".join(f"{c.id} {c.reason}" for c in q.verdict.checks if c.status == FAIL)
        raise ReleaseRefused(
            f"release refused: {req.image} qualified FAIL ({failed}); "
            f"report: {q.reports['report.md']}"
        )
    plan = q.plan
    assert q.outcome is not None
    outcome = q.outcome
    inputs: dict[str, Any] = {
        "kind": "release",
        "qualification": jsoncodec.to_json(plan),
        "run": plan.run_id,
        "request": jsoncodec.to_json(req),
        "repo": repo_state(ws.root),
    }
    record = RunRecord(state_dir(ws, state) / "releases" / digest_of(inputs)[:32])
    record.write_inputs(inputs)
    with tempfile.TemporaryDirectory(prefix="relpipe-release-") as tmp:
        staged = stage_release(ws, req, plan, outcome, q.verdict, Path(tmp) / "repo")
        # Always the checks of this staging (never a cached copy): they are what the verdict says.
        record.save(
            StageResult(
                stage="release-checks",
                key=stage_key("release-checks", inputs),
                inputs=inputs,
                output=jsoncodec.to_json(staged.checks),
                seconds=0.0,
            )
        )
        verdict, reports = render_release(plan, outcome, staged.checks, inputs, record, req.strict)
        diff = unified_diff(ws, staged)
        record.write_file("release.json", pretty_json(staged.facts))
        record.write_file("notes.md", staged.notes.encode())
        record.write_file("changes.diff", diff.encode())
        if verdict.overall == FAIL:
            failed = "; ".join(f"{c.id} {c.reason}" for c in verdict.checks if c.status == FAIL)
            raise ReleaseRefused(
                f"release refused: {failed}; nothing written; report: {reports['report.md']}"
            )
        written = False
        if not req.dry_run:
            write_staged(ws, staged)
            written = True
    return ReleaseResult(
        qualification=q, verdict=verdict, record=record, reports=reports, diff=diff, written=written
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
    from relpipe.changelog.entry import parse_appended
    from relpipe.changelog.errors import ChangelogError

    changelog, lock_file, masters = str(ws.changelog), str(ws.lock), ws.era.masters

    def admit(rel: str, old: bytes | None, new: bytes) -> str | None:
        if rel not in (changelog, lock_file) and not ws.era.is_master(rel):
            return (
                f"a release writes only {masters}/*{MASTER_SUFFIX}, the changelog and the lock file"
            )
        if rel == changelog:
            try:
                errors = parse_appended(old or b"", new, rel).errors
            except ChangelogError as exc:
                return str(exc)
            if errors:
                return f"not entries appended to the changelog ({errors[0].format(rel)})"
        return None

    return admit


def released_line(ws: Workspace, req: Request) -> str | None:
    """'nothing to do' when the config already pins `req.image` and the lock file its current
    digest (re-pinned, verified): a second release of it would only repeat the entry."""
    from relpipe.images import lock
    from relpipe.images.registry import RegistryClient

    pinned = ws.config_key(req.config_key, 1).image
    if pinned != new_image_text(pinned, req.image) or not (ws.root / ws.lock).is_file():
        return None
    entry = lock.lookup(lock.load(ws.root / ws.lock), req.image)
    if entry is None:
        return None
    with RegistryClient() as client:
        digest = client.pin(req.image).digest
    if entry.digest != digest:
        return None
    return f"nothing to do: {req.config_key} already pins {req.image} at {digest}"


def repo_state(root: Path) -> dict[str, str | None]:
    """Hashes of what a release rewrites (configs/, changelog, lock file) in the tree at `root`."""
    ws = Workspace(root)
    return {
        "configs": ws.tree_hash(ws.era.masters),
        "changelog": ws.file_hash(ws.changelog),
        "lock": ws.file_hash(ws.lock),
    }


@contextlib.contextmanager
def repository_lock(ws: Workspace) -> Iterator[None]:
    """The one lock of a release's writes: the flock on the repository folder, which is also the
    changelog's folder lock (`changelog.append`), plus the lock file's own lock (`images.lock`), so
    neither a changelog appender nor `relpipe images pin` can write between our check and our
    writes. Taken in this order everywhere, so two releases cannot deadlock."""
    from relpipe.images import lock

    with (
        file_lock(ws.root, what="repository lock", error=PipelineError),
        lock.locked(ws.root / ws.lock),
    ):
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
    from relpipe.changelog.append import appended_bytes
    from relpipe.changelog.errors import ChangelogError

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
    title = f"release {inputs['request']['config_key']} -> {plan.image.ref}"
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
