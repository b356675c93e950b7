"""One qualification run end to end: plan -> units (with progress) -> verdict -> reports.

Shared by `qualify`, `nightly`, `release` (which re-qualifies, normally a cache hit), `merge` and
`report`; the last two run the same code with `offline=True`, so a merged or re-rendered verdict
is computed exactly as an unsharded one.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..changelog.repository.checkout import find_root, is_checkout
from ..core import checkrender, jsoncodec
from ..core.state import trusted
from ..core.status import NA
from ..images.registry import RegistryClient
from . import comparison, pins
from .comparison import HistoryOutput
from .containers import Engine
from .errors import PipelineError
from .plan import (
    DEFAULT_MAX_BATCH,
    DEFAULT_SUITES,
    DEFAULT_TIMEOUT_S,
    Options,
    Plan,
    file_sha256,
    make_plan,
    open_record,
)
from .progress import Progress
from .report import ReportData, render_all
from .runrecord import RunRecord, StageRunner
from .stages import SUITE_METRIC, assemble, run_units, stage_count
from .verdict import Outcome, Verdict, evaluate
from .workspace import Workspace


@dataclass(frozen=True, kw_only=True)
class RunResult:
    plan: Plan
    record: RunRecord
    verdict: Verdict | None  # None for a shard (the verdict needs every shard)
    outcome: Outcome | None
    reports: dict[str, Path]
    ran: tuple[str, ...]
    cached: tuple[str, ...]


def state_dir(ws: Workspace | None, given: Path | None) -> Path:
    if given is not None:
        return given
    env = os.environ.get("RELPIPE_STATE")
    if env:
        return Path(env)
    # In the work tree (run records, the stage cache, bisect journals, the default store): only
    # where this user put it (no link, not tracked by git; core.state), never what a clone brought.
    root = ws.root if ws else Path.cwd()
    return trusted(root / ".relpipe", root=root)


def plan_run(
    image: str,
    baseline: str | None,
    config_key: str | None,
    ws: Workspace | None,
    options: Options,
    state: Path | None = None,
) -> Plan:
    """The plan of a run, its baseline at the digest relpipe pinned for it (`pipeline.pins`)."""
    pinned = pins.load(ws, state_dir(ws, state))
    with RegistryClient() as client:
        return make_plan(image, baseline, config_key, ws, options, client, pinned)


def execute(
    plan: Plan,
    record: RunRecord,
    *,
    engine: Engine | None = None,
    shard: tuple[int, int] | None = None,
    offline: bool = False,
    strict: bool = False,
    quiet: bool = False,
    force_render: bool = False,
    lost: Mapping[str, str] | None = None,
    lost_output: Callable[[str, Mapping[str, Any], str], Mapping[str, Any]] | None = None,
) -> RunResult:
    """Run (or, offline, read back) the plan's stages; unless sharded, compute the verdict and
    reports.
    """
    total = stage_count(plan)
    with Progress(
        total,
        "relpipe" if not shard else f"relpipe shard {shard[0]}/{shard[1]}",
        rich=False if quiet else None,
    ) as progress:
        runner = StageRunner(record, offline=offline, on_event=None if quiet else progress)
        runner.lost_output = lost_output
        outputs = run_units(plan, runner, engine or Engine(owner=plan.run_id), shard, lost)
    if shard is not None:
        return RunResult(
            plan=plan,
            record=record,
            verdict=None,
            outcome=None,
            reports={},
            ran=tuple(runner.ran),
            cached=tuple(runner.hits),
        )
    outcome = assemble(plan, outputs)
    reread = offline and force_render  # `relpipe report`: the record's own history.json
    outcome = replace(outcome, history=_history(plan, record, outcome, reread=reread))
    verdict = evaluate(outcome, strict=strict)
    data = ReportData(
        run_id=plan.run_id,
        title=plan.title,
        inputs=plan.to_json(),
        outcome=outcome,
        verdict=verdict,
    )
    reports = render_all(data, record.root, force=force_render)
    return RunResult(
        plan=plan,
        record=record,
        verdict=verdict,
        outcome=outcome,
        reports=reports,
        ran=tuple(runner.ran),
        cached=tuple(runner.hits),
    )


def _history(plan: Plan, record: RunRecord, outcome: Outcome, *, reread: bool) -> HistoryOutput:
    """C11/C12's input: read back from the record when re-rendering, else compared and saved
    (a merge of shards compares as the unsharded run does: the same store gives the same verdict).
    """
    if reread:
        return comparison.load(record.root) or HistoryOutput(status=NA, reason="not recorded")
    state = record.cache.parent.parent if record.cache else state_dir(None, None)
    shape = {
        "image": jsoncodec.to_json(plan.image),
        "config": jsoncodec.to_json(plan.config) if plan.config else None,
    }
    facts = outcome.probe.facts if outcome.probe and outcome.probe.facts else None
    report = {
        **shape,
        "facts": jsoncodec.to_json(facts) if facts else {},
        "evals": [jsoncodec.to_json(e) for e in outcome.evals],
    }
    out = comparison.compare_run(report, run_id=plan.run_id, state=state)
    comparison.save(out, record.root)
    return out


def rerender(run_dir: Path, strict: bool = False) -> RunResult:
    """`relpipe report RUN`: recompute the verdict and reports from the record alone."""
    record = RunRecord(run_dir)
    if not (run_dir / "run.json").is_file():
        raise PipelineError(
            f"{run_dir} is not a run record (no run.json); give a folder under .relpipe/runs/"
        )
    plan = Plan.from_json(record.inputs())
    return execute(plan, record, offline=True, strict=strict, quiet=True, force_render=True)


def qualify(
    image: str,
    *,
    baseline: str | None,
    config_key: str | None,
    ws: Workspace | None,
    options: Options,
    state: Path | None = None,
    out: Path | None = None,
    strict: bool = False,
    engine: Engine | None = None,
) -> RunResult:
    plan = plan_run(image, baseline, config_key, ws, options, state)
    record = open_record(state_dir(ws, state), plan, out)
    return execute(plan, record, engine=engine, strict=strict)


# -- command-line pieces shared by qualify, nightly and release -----------------------------------


def add_qualify_args(
    parser: argparse.ArgumentParser, *, release: bool = False, keys: bool = False
) -> None:
    """The options of a qualification, in groups. A release needs `--config-key` and always diffs
    against that key's pinned image, so with `release=True` the key is required and `--baseline`
    is not offered; with `keys=True` several keys are selected (`add_selection_args`)."""
    what = parser.add_argument_group("what to qualify")
    if keys:
        add_selection_args(what)
    else:
        what.add_argument(
            "--config-key",
            metavar="KEY",
            required=release,
            help="benchmark config key (its points and pinned baseline)",
        )
    if not release:
        what.add_argument(
            "--baseline",
            metavar="REF|pinned|none",
            default=None,
            help="baseline image REF, 'pinned' (the config key's image; the default with "
            "--config-key) or 'none' (the default without)",
        )
    what.add_argument(
        "--repo", metavar="PATH", type=Path, default=None, help="benchmark repository (default: .)"
    )
    what.add_argument(
        "--state",
        metavar="DIR",
        type=Path,
        default=None,
        help="run records and cache (default: $RELPIPE_STATE, else REPO/.relpipe)",
    )
    _add_run_args(parser.add_argument_group("how to run"))
    out = parser.add_argument_group("output")
    out.add_argument("--strict", action="store_true", help="WARN fails too (exit 1)")
    out.add_argument("--json", action="store_true", help="print one JSON document (the report)")


def add_selection_args(group: argparse._ArgumentGroup) -> None:
    """The config keys a release, revert or PR acts on (`pipeline.selection`)."""
    group.add_argument(
        "--config-key",
        metavar="KEY",
        action="append",
        required=True,
        dest="config_keys",
        help="config key, repeatable: one image for every key named",
    )
    group.add_argument(
        "--line",
        action="store_true",
        help="every key on the image line of the keys named (same repository and family group)",
    )
    group.add_argument(
        "--runner",
        metavar="NAME",
        action="append",
        default=[],
        dest="runners",
        help="only keys whose runner: is NAME or runs on GPU NAME (repeatable)",
    )


def _add_run_args(run: argparse._ArgumentGroup) -> None:
    """The "how to run" group of `add_qualify_args`: suites, limits, devices, inputs."""
    run.add_argument(
        "--suite",
        metavar="NAME",
        action="append",
        dest="suites",
        choices=tuple(SUITE_METRIC),
        help=f"eval suite, repeatable: {', '.join(SUITE_METRIC)} (default: decode-parity)",
    )
    run.add_argument(
        "--max-batch",
        metavar="N",
        type=int,
        default=DEFAULT_MAX_BATCH,
        help="eval batch cap per point",
    )
    run.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help="limit per container",
    )
    run.add_argument(
        "--gpu",
        choices=("auto", "none", "rocm", "nvidia"),
        default="auto",
        help="devices passed to the containers",
    )
    run.add_argument("--dataset", metavar="FILE", default=None, help="GSM8K-format JSONL (gsm8k)")
    run.add_argument(
        "--rules", metavar="FILE", default=None, help="precision rules (default: built-in atom)"
    )
    run.add_argument(
        "--max-new",
        metavar="N",
        type=int,
        default=8,
        help="tokens decoded per prompt (smoke, decode-parity)",
    )
    run.add_argument("--n-shot", metavar="N", type=int, default=5, help="gsm8k few-shot examples")
    run.add_argument(
        "--eval-limit",
        metavar="N",
        type=int,
        default=0,
        help="gsm8k: score at most N problems (0: all)",
    )
    run.add_argument(
        "--prompt-bytes",
        metavar="N",
        type=int,
        default=0,
        help="truncate the fixed prompts to N bytes (0: whole)",
    )
    run.add_argument(
        "--kv-dtypes",
        metavar="LIST",
        default="fp32,bf16,fp8",
        help="comma list of KV-cache dtypes decode-parity checks",
    )


def workspace_from(args: argparse.Namespace) -> Workspace | None:
    root = args.repo if args.repo is not None else Path.cwd()
    if args.repo is not None and not root.is_dir():
        raise PipelineError(f"--repo {root}: not a folder")
    if args.repo is None and not is_checkout(root):
        return None  # plain `qualify REF` outside a benchmark repository
    ws = Workspace(find_root(root))
    ws.era  # noqa: B018 (a checkout of no known era fails here, in one line)
    return ws


def options_from(args: argparse.Namespace) -> Options:
    if args.max_batch < 1 or args.timeout <= 0:
        raise PipelineError("--max-batch and --timeout must be positive")
    suites = tuple(args.suites or DEFAULT_SUITES)
    unknown = [name for name in suites if name not in SUITE_METRIC]
    if unknown:
        raise PipelineError(f"--suite {unknown[0]}: choose from {', '.join(SUITE_METRIC)}")
    if "gsm8k" in suites and not args.dataset:
        raise PipelineError("--suite gsm8k needs --dataset FILE (GSM8K-format JSONL)")
    if args.dataset and not Path(args.dataset).is_file():
        raise PipelineError(f"--dataset {args.dataset}: no such file")
    if args.n_shot < 0 or args.eval_limit < 0:
        raise PipelineError("--n-shot and --eval-limit must be >= 0")
    dataset = str(Path(args.dataset).resolve()) if args.dataset else None
    kv = tuple(k.strip() for k in args.kv_dtypes.split(",") if k.strip())
    if (
        not kv
        or any(k not in ("fp32", "bf16", "fp8") for k in kv)
        or args.max_new < 1
        or args.prompt_bytes < 0
    ):
        raise PipelineError(
            "--kv-dtypes takes a comma list of fp32,bf16,fp8 and --max-new a positive count"
        )
    return Options(
        suites=suites,
        max_batch=args.max_batch,
        timeout_s=args.timeout,
        gpu=args.gpu,
        dataset=dataset,
        rules=args.rules,
        max_new=args.max_new,
        kv_dtypes=kv,
        prompt_bytes=args.prompt_bytes,
        n_shot=args.n_shot,
        eval_limit=args.eval_limit,
        dataset_sha256=file_sha256(dataset),
    )


def baseline_from(args: argparse.Namespace) -> str | None:
    if getattr(args, "baseline", None) in (None, ""):
        return "pinned" if args.config_key else None
    return None if args.baseline == "none" else str(args.baseline)


def print_result(result: RunResult, as_json: bool) -> int:
    """Print the verdict (or the report JSON); returns the exit code."""
    assert result.verdict is not None
    if as_json:
        print(result.reports["report.json"].read_text(), end="")
    else:
        for check in result.verdict.checks:
            print(checkrender.text_line(check))
        print(
            f"verdict: {result.verdict.overall}  "
            f"({len(result.cached)} cached, {len(result.ran)} ran)"
        )
        print(f"report: {result.reports['report.html']}")
    return result.verdict.exit_code
