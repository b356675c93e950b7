"""Slurm as the scheduler of qualification shards: one `sbatch --array` job per plan.

A plan folder (`relpipe qualify REF --plan --shards N --out PLAN`) is what every scheduler runs;
Slurm runs it as one array job whose task i is `relpipe qualify --from-plan PLAN --shard i/N`:

* `submit` writes `JOBS/job.sbatch` and submits it with `sbatch --parsable`. Each task writes its
  shard record to `JOBS/shard-i/` (a folder every node sees) and, when relpipe returns, its exit
  code to `JOBS/shard-i.exit`. Only shards without a successful exit are (re-)submitted, so a
  task that was cancelled, failed or timed out resumes from the stage results its record holds.
  Before anything is submitted the partition and the GPU gres are checked with `sinfo`.
* `status` joins what Slurm says of each task (`scontrol show job`) with the exit records.
* `merge` runs `relpipe merge` over the job's shard folders. A shard that did not finish has the
  stages it never recorded entered as FAIL, with Slurm's reason (a task killed at its time limit
  fails its points; it is never silently missing); a shard still queued or running is refused.

`JOBS/slurm.json` keeps the plan path, the shard count and every submission (job id, tasks).
The Slurm client commands find the cluster the usual way (`SLURM_CONF`, or the node's config).
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..core import jsoncodec, jsonload, process
from ..core.files import file_lock, write_atomic
from .errors import PipelineError
from .shard import shard_count

JOB_FILE = "slurm.json"
SCRIPT = "job.sbatch"
COMMAND_TIMEOUT_S = 60.0
_GRES = re.compile(r"gpu(?::[A-Za-z0-9_.-]+)?(?::([0-9]+))?")
_TIME = re.compile(r"[0-9]+(?:-[0-9]{1,2})?(?::[0-9]{1,2}){0,2}|UNLIMITED|INFINITE")
_ACCOUNT = re.compile(r"[A-Za-z0-9_.-]{1,64}")
# A line break (or any control character) in a value would end the script line that holds it.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# Slurm's final task states and what a user reads in the FAIL reason.
ENDED = {
    "COMPLETED": "completed",
    "FAILED": "failed",
    "TIMEOUT": "killed at its time limit",
    "CANCELLED": "cancelled",
    "NODE_FAIL": "lost with its node",
    "OUT_OF_MEMORY": "killed for memory",
    "PREEMPTED": "preempted",
    "BOOT_FAIL": "its node failed to boot",
    "DEADLINE": "past its deadline",
}


@dataclass(frozen=True, kw_only=True)
class SubmitOptions:
    """What `relpipe slurm submit` asks of the cluster (validated before anything is written)."""

    partition: str
    gres: str | None = None  # e.g. "gpu:1" or "gpu:mi355x:8"
    time: str | None = None  # Slurm's time format, e.g. "2:00:00" or "1-00:00:00"
    account: str | None = None
    workspace: Path | None = None  # the benchmark repository each task reads (--repo)
    relpipe: tuple[str, ...] = (sys.executable, "-m", "relpipe.pipeline")

    def __post_init__(self) -> None:
        if not _ACCOUNT.fullmatch(self.partition):
            raise PipelineError(f"--partition {self.partition!r}: not a partition name")
        if self.gres is not None and not _GRES.fullmatch(self.gres):
            raise PipelineError(f"--gres {self.gres!r}: expected gpu:N or gpu:TYPE:N")
        if self.time is not None and not _TIME.fullmatch(self.time):
            raise PipelineError(
                f"--time {self.time!r}: expected Slurm's format, e.g. 90, 2:00:00 or 1-00:00:00"
            )
        if self.account is not None and not _ACCOUNT.fullmatch(self.account):
            raise PipelineError(f"--account {self.account!r}: not an account name")


@dataclass(frozen=True, kw_only=True)
class Submission:
    job_id: str
    tasks: tuple[int, ...]
    submitted_at: float


@dataclass(frozen=True, kw_only=True)
class SlurmJob:
    """`JOBS/slurm.json`: the plan the job folder runs, its shard count and its submissions."""

    plan: Path
    shards: int
    submissions: tuple[Submission, ...] = field(default_factory=tuple)

    @classmethod
    def load(cls, jobs: Path) -> SlurmJob:
        path = jobs / JOB_FILE
        try:
            doc = jsonload.loads(path.read_text(encoding="utf-8"))
            return jsoncodec.from_json(cls, doc, where=str(path))
        except FileNotFoundError:
            raise PipelineError(
                f"{jobs}: no {JOB_FILE}; submit the plan first with `relpipe slurm submit PLAN`"
            ) from None
        except jsoncodec.RecordError as exc:
            raise PipelineError(f"{path}: not a relpipe Slurm job record ({exc.detail})") from None
        except (OSError, ValueError) as exc:
            raise PipelineError(f"{path}: not a relpipe Slurm job record ({exc})") from None


@dataclass(frozen=True, kw_only=True)
class ShardState:
    """One shard of the job: what Slurm says of its newest task and what its record says."""

    shard: int
    job_id: str | None  # the array job of its newest submission
    slurm: str | None  # JobState (PENDING, RUNNING, COMPLETED, TIMEOUT, ...) or None if unknown
    reason: str | None  # Slurm's Reason field, when it says more than "None"
    exit_code: int | None  # from JOBS/shard-i.exit; None while the task has not ended normally

    @property
    def done(self) -> bool:
        return self.exit_code == 0

    @property
    def active(self) -> bool:
        return self.slurm in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED")

    def failure(self) -> str:
        """Why this shard's unrecorded stages FAIL, in one line."""
        what = ENDED.get(self.slurm or "", (self.slurm or "state unknown").lower())
        where = f"Slurm task {self.shard} of job {self.job_id}" if self.job_id else "its task"
        tail = f" (exit {self.exit_code})" if self.exit_code not in (None, 0) else ""
        return f"shard {self.shard}: {where} {what}{tail} before this stage finished"

    def to_json(self) -> dict[str, object]:
        return {**jsoncodec.fields_to_json(self), "done": self.done}


# -- the pure parts ------------------------------------------------------------------------------


def array_spec(tasks: Sequence[int]) -> str:
    """`--array` value for task ids: runs of consecutive ids as ranges ("1-3,5")."""
    parts: list[str] = []
    ordered = sorted(set(tasks))
    start = prev = ordered[0]
    for task in [*ordered[1:], None]:
        if task is not None and task == prev + 1:
            prev = task
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if task is not None:
            start = prev = task
    return ",".join(parts)


def parse_task_ids(text: str) -> list[int]:
    """Task ids of an ArrayTaskId field: "3", "1-4", "2,5-6" or "1-8%2" (a pending record)."""
    ids: list[int] = []
    for part in text.split("%")[0].split(","):
        if "-" in part:
            lo, hi = part.split("-", 1)
            ids.extend(range(int(lo), int(hi) + 1))
        elif part:
            ids.append(int(part))
    return ids


def render_script(
    plan: Path, jobs: Path, shards: int, tasks: Sequence[int], opts: SubmitOptions
) -> str:
    """The sbatch script: one array task per shard, its exit code recorded beside its record.

    Every value that reaches the script is refused when it holds a control character (a newline
    in the plan path was a line of the script: issue 27.5) and is written shell-quoted.
    """
    q = shlex.quote
    values = [("plan", str(plan)), ("--jobs", str(jobs)), ("relpipe", " ".join(opts.relpipe))]
    if opts.workspace is not None:
        values.append(("--repo", str(opts.workspace)))
    for what, value in values:
        if _CONTROL.search(value):
            raise PipelineError(
                f"{what} {value[:200]!r}: a control character (a newline, ...) cannot be written "
                "into the sbatch script; rename it"
            )
    if re.search(r"\s", str(jobs)):
        # #SBATCH lines are split on whitespace: such a path cannot be named there safely.
        raise PipelineError(f"--jobs {jobs}: the job folder's path must not contain whitespace")
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", plan.name)
    directives = [
        f"--job-name=relpipe-{name}"[:80],
        f"--array={array_spec(tasks)}",
        f"--partition={opts.partition}",
        f"--output={jobs / 'logs' / 'shard-%a.log'}",
        "--open-mode=append",
        "--export=ALL",  # DOCKER_HOST, registry credentials: the runtime is used as elsewhere
    ]
    if opts.gres:
        directives.append(f"--gres={opts.gres}")
    if opts.time:
        directives.append(f"--time={opts.time}")
    if opts.account:
        directives.append(f"--account={opts.account}")
    # Every value quoted; only the script's own "$shard" and "$out" expand (a value that merely
    # starts with a quote, e.g. --repo '"', is a value like any other).
    command = [*map(q, opts.relpipe), "qualify", "--from-plan", q(str(plan))]
    command += ["--shard", f'"$shard/{shards}"', "--out", '"$out"']
    if opts.workspace is not None:
        command += ["--repo", q(str(opts.workspace))]
    quoted = " ".join(command)
    lines = [
        "#!/bin/bash",
        f"# Written by `relpipe slurm submit` for the plan {q(str(plan))}: one task per shard.",
        *(f"#SBATCH {d}" for d in directives),
        "set -u",
        'shard="${SLURM_ARRAY_TASK_ID:?run this script with sbatch --array}"',
        f'out={q(str(jobs))}/shard-"$shard"',
        'rm -f "$out.exit"',
        quoted,
        "code=$?",
        # Atomic: `status` and `merge` never read half an exit record.
        'printf "%s\\n" "$code" > "$out.exit.tmp" && mv -f "$out.exit.tmp" "$out.exit"',
        'exit "$code"',
        "",
    ]
    return "\n".join(lines)


def parse_scontrol(text: str) -> dict[int, tuple[str, str | None, str]]:
    """`scontrol show job -o` lines -> {task id: (JobState, Reason or None, JobId)}."""
    found: dict[int, tuple[str, str | None, str]] = {}
    for line in text.splitlines():
        fields = dict(
            item.split("=", 1) for item in line.split() if "=" in item and not item.startswith("=")
        )
        if "ArrayTaskId" not in fields or "JobState" not in fields:
            continue
        reason = fields.get("Reason")
        for task in parse_task_ids(fields["ArrayTaskId"]):
            found[task] = (
                fields["JobState"],
                None if reason in (None, "None") else reason,
                fields.get("JobId", ""),
            )
    return found


# -- talking to the cluster ----------------------------------------------------------------------

# A Slurm client command -> its result (exit code checked by the caller). Injectable: a test or
# another transport can stand in for the cluster; the default runs the command (core.process).
Runner = Callable[[Sequence[str]], process.Completed]


def _run(argv: Sequence[str]) -> process.Completed:
    try:
        return process.run(argv, timeout=COMMAND_TIMEOUT_S, check=False)
    except process.ProgramMissing:
        raise PipelineError(
            f"{argv[0]} not found: install Slurm's client commands (Debian: slurm-client) "
            "or run on a login node"
        ) from None
    except process.ProcessTimeout:
        raise PipelineError(
            f"{argv[0]} did not answer within {COMMAND_TIMEOUT_S:g} s; is slurmctld up?"
        ) from None
    except process.ProcessError as exc:
        raise PipelineError(str(exc)) from None


def _text(output: bytes) -> str:
    return output.decode("utf-8", "replace")


def _first_line(output: bytes) -> str:
    lines = [line.strip() for line in _text(output).splitlines() if line.strip()]
    return process.one_line(lines[-1]) if lines else "(no message)"


def check_partition(opts: SubmitOptions, run: Runner = _run) -> None:
    """Refuse before submitting: a partition that does not exist, or no node with the GPU gres."""
    done = run(["sinfo", "--noheader", f"--partition={opts.partition}", "--format=%G|%N"])
    if done.returncode != 0:
        raise PipelineError(f"sinfo failed: {_first_line(done.stderr)}")
    rows = [line.split("|", 1) for line in _text(done.stdout).splitlines() if "|" in line]
    if not rows:
        raise PipelineError(
            f"partition {opts.partition!r} has no nodes (or does not exist); see `sinfo`"
        )
    if opts.gres is None:
        return
    wanted = _GRES.fullmatch(opts.gres)
    count = int(wanted.group(1) or 1) if wanted else 1
    for gres, _nodes in rows:
        for item in gres.split(","):
            have = re.fullmatch(r"gpu(?::[A-Za-z0-9_.-]+)?:([0-9]+)(?:\(.*\))?", item.strip())
            if have and int(have.group(1)) >= count:
                return
    seen = ", ".join(sorted({g for g, _ in rows})) or "(none)"
    raise PipelineError(
        f"no node of partition {opts.partition!r} has the GPU gres {opts.gres} "
        f"(its nodes report gres: {seen}); choose a GPU partition or drop --gres"
    )


def _exit_code(jobs: Path, shard: int) -> int | None:
    try:
        return int((jobs / f"shard-{shard}.exit").read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def status(jobs: Path, run: Runner = _run) -> list[ShardState]:
    """Every shard's state: Slurm's word on its newest task, and its exit record."""
    job = SlurmJob.load(jobs)
    newest: dict[int, str] = {}
    for submission in job.submissions:
        for task in submission.tasks:
            newest[task] = submission.job_id
    slurm: dict[str, dict[int, tuple[str, str | None, str]]] = {}
    for job_id in sorted(set(newest.values())):
        done = run(["scontrol", "--oneliner", "show", "job", job_id])
        # A job older than MinJobAge is forgotten by slurmctld: its exit records still speak.
        slurm[job_id] = parse_scontrol(_text(done.stdout)) if done.returncode == 0 else {}
    states = []
    for shard in range(1, job.shards + 1):
        task_job = newest.get(shard)
        known = slurm.get(task_job or "", {}).get(shard)
        state, reason = (known[0], known[1]) if known else (None, None)
        states.append(
            ShardState(
                shard=shard,
                job_id=task_job,
                slurm=state,
                reason=reason,
                exit_code=_exit_code(jobs, shard),
            )
        )
    return states


def submit(
    plan: Path,
    jobs: Path,
    opts: SubmitOptions,
    *,
    dry_run: bool = False,
    run: Runner = _run,
) -> tuple[str, Submission | None]:
    """Write the sbatch script for the shards still to do and submit it (unless `dry_run`).

    Returns (script, submission); the submission is None for a dry run or when every shard has
    already finished successfully. Refuses while an earlier task of the same folder is active.
    """
    plan = plan.resolve()
    jobs = jobs.resolve()
    shards = shard_count(plan)
    jobs.mkdir(parents=True, exist_ok=True)
    with file_lock(jobs / ".submit.lock", timeout_s=30, what="Slurm job folder lock"):
        previous = SlurmJob.load(jobs) if (jobs / JOB_FILE).exists() else None
        if previous is not None and (previous.plan != plan or previous.shards != shards):
            raise PipelineError(
                f"{jobs} holds shards of the plan {previous.plan} ({previous.shards} shards); "
                "use another --jobs folder for this plan"
            )
        todo = list(range(1, shards + 1))
        if previous is not None and previous.submissions:
            states = status(jobs, run)
            active = [s.shard for s in states if s.active]
            if active:
                raise PipelineError(
                    f"shard(s) {array_spec(active)} of {jobs} are still queued or running; "
                    "wait for them or scancel them before submitting again"
                )
            todo = [s.shard for s in states if not s.done]
        if not todo:
            return "", None
        script = render_script(plan, jobs, shards, todo, opts)
        if dry_run:
            return script, None
        check_partition(opts, run)
        (jobs / "logs").mkdir(exist_ok=True)
        write_atomic(jobs / SCRIPT, script, mode=0o755)
        done = run(["sbatch", "--parsable", str(jobs / SCRIPT)])
        if done.returncode != 0:
            raise PipelineError(f"sbatch refused the job: {_first_line(done.stderr)}")
        answer = _text(done.stdout).strip()
        job_id = answer.split(";")[0]
        if not job_id.isdigit():
            raise PipelineError(f"sbatch answered {answer[:200]!r}, not a job id")
        submission = Submission(job_id=job_id, tasks=tuple(todo), submitted_at=time.time())
        base = previous or SlurmJob(plan=plan, shards=shards)
        record = replace(base, submissions=(*base.submissions, submission))
        write_atomic(jobs / JOB_FILE, json.dumps(jsoncodec.to_json(record), indent=2) + "\n")
        return script, submission


def wait(jobs: Path, timeout_s: float, poll_s: float = 2.0, run: Runner = _run) -> list[ShardState]:
    """Poll `status` until no shard is queued or running (or raise after `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    while True:
        states = status(jobs, run)
        if not any(s.active for s in states):
            return states
        if time.monotonic() >= deadline:
            active = array_spec([s.shard for s in states if s.active])
            raise PipelineError(f"shard(s) {active} still active after {timeout_s:g} s")
        time.sleep(poll_s)


def failures(states: Sequence[ShardState]) -> Mapping[int, str]:
    """Shards that ended without success -> the reason their unrecorded stages FAIL.

    Refuses when a shard is still queued or running: a merge then would report work in progress
    as failed."""
    active = [s.shard for s in states if s.active]
    if active:
        raise PipelineError(
            f"shard(s) {array_spec(active)} are still queued or running; merge when they end "
            "(`relpipe slurm status`)"
        )
    return {s.shard: s.failure() for s in states if not s.done}
