"""`relpipe slurm submit|status|merge`: run a qualification plan as a Slurm array job.

    relpipe slurm submit PLAN --partition P [--gres gpu:N] [--time T] [--account A]
                              [--jobs DIR] [--repo PATH] [--dry-run]
    relpipe slurm status JOBS [--json]
    relpipe slurm merge JOBS --out DIR [--wait SECONDS] [--strict] [--json]

PLAN is a folder written by `relpipe qualify REF --plan --shards N --out PLAN`; JOBS is the job
folder (default PLAN/slurm) where every array task writes its shard record. It must be on a file
system every node sees. See `relpipe.pipeline.slurm` for what each step guarantees.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ...core import sanitize
from .. import slurm
from ..errors import PipelineError
from ..run import print_result
from ..shard import merge
from .parser import HelpFormatter

HELP = HelpFormatter


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="relpipe slurm", description=__doc__.splitlines()[0], formatter_class=HELP
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser(
        "submit",
        help="write the sbatch array script for a plan and submit it",
        formatter_class=HELP,
        description="Write JOBS/job.sbatch (one array task per shard still to do) and sbatch it.",
    )
    s.add_argument("plan", type=Path, metavar="PLAN", help="plan folder (qualify --plan --out)")
    cluster = s.add_argument_group("cluster")
    cluster.add_argument("--partition", required=True, metavar="P", help="Slurm partition")
    cluster.add_argument("--gres", default=None, metavar="gpu:N", help="GPU gres per task")
    cluster.add_argument("--time", default=None, metavar="T", help="time limit per task")
    cluster.add_argument("--account", default=None, metavar="A", help="Slurm account")
    where = s.add_argument_group("where")
    where.add_argument(
        "--jobs", type=Path, default=None, metavar="DIR", help="job folder (default: PLAN/slurm)"
    )
    where.add_argument(
        "--repo", type=Path, default=None, metavar="PATH", help="benchmark repository for tasks"
    )
    s.add_argument("--dry-run", action="store_true", help="print the script, submit nothing")
    s.add_argument("--json", action="store_true", help="print one JSON document")

    st = sub.add_parser("status", help="each shard's Slurm state and exit", formatter_class=HELP)
    st.add_argument("jobs", type=Path, metavar="JOBS", help="job folder of `slurm submit`")
    st.add_argument("--json", action="store_true", help="print one JSON document")

    m = sub.add_parser(
        "merge",
        help="merge the job's shard records into one verdict",
        formatter_class=HELP,
        description="Merge the shard records; shards Slurm ended without success FAIL their "
        "unrecorded stages with Slurm's reason.",
    )
    m.add_argument("jobs", type=Path, metavar="JOBS", help="job folder of `slurm submit`")
    m.add_argument("--out", type=Path, required=True, metavar="DIR", help="merged run record")
    m.add_argument(
        "--wait", type=float, default=0.0, metavar="SECONDS", help="wait for active shards first"
    )
    m.add_argument("--strict", action="store_true", help="WARN fails too (exit 1)")
    m.add_argument("--json", action="store_true", help="print the report JSON")
    return p


def _submit(args: argparse.Namespace) -> int:

    opts = slurm.SubmitOptions(
        partition=args.partition,
        gres=args.gres,
        time=args.time,
        account=args.account,
        workspace=args.repo.resolve() if args.repo is not None else None,
    )
    jobs = args.jobs if args.jobs is not None else args.plan / "slurm"
    script, submission = slurm.submit(args.plan, jobs, opts, dry_run=args.dry_run)
    if args.json:
        doc = {
            "jobs": str(jobs.resolve()),
            "script": script,
            "job_id": submission.job_id if submission else None,
            "tasks": list(submission.tasks) if submission else [],
        }
        print(sanitize.json_text(doc, sort_keys=True))
    elif args.dry_run:
        print(script, end="" if script else "every shard already finished; nothing to submit\n")
    elif submission is None:
        print(f"{jobs}: every shard already finished; nothing to submit")
    else:
        tasks = slurm.array_spec(submission.tasks)
        print(f"submitted job {submission.job_id}: shard(s) {tasks} -> {jobs}")
    return 0


def _status(args: argparse.Namespace) -> int:

    states = slurm.status(args.jobs)
    if args.json:
        print(sanitize.json_text({"shards": [s.to_json() for s in states]}, sort_keys=True))
        return 0
    for s in states:
        exit_text = "-" if s.exit_code is None else str(s.exit_code)
        reason = f" ({s.reason})" if s.reason else ""
        state = s.slurm or "unknown"
        print(f"shard {s.shard}: job {s.job_id or '-'} {state}{reason} exit {exit_text}")
    return 0


def _merge(args: argparse.Namespace) -> int:

    if args.wait > 0:
        states = slurm.wait(args.jobs, args.wait)
    else:
        states = slurm.status(args.jobs)
    lost = slurm.failures(states)
    job = slurm.SlurmJob.load(args.jobs)
    folders = [args.jobs / f"shard-{s.shard}" for s in states]
    shard_dirs = [folder for folder in folders if folder.is_dir()]
    for reason in lost.values():
        print(f"relpipe slurm merge: {reason}", file=sys.stderr)
    result = merge(job.plan, shard_dirs, args.out, args.strict, lost=lost)
    return print_result(result, args.json)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "submit":
        return _submit(args)
    if args.command == "status":
        return _status(args)
    if args.command == "merge":
        return _merge(args)
    raise PipelineError(f"unknown slurm command {args.command!r}")  # argparse prevents this
