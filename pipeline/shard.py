"""Scale-out: a qualification plan split into shards, and the merge of shard records.

`qualify --plan --shards N` pins everything once (every shard runs on the same digests even if a
tag moves meanwhile) and writes the plan folder: `run.json` (the plan) and `matrix.json`, a
`strategy.matrix` for GitHub Actions (`{"include": [{"shard": "1/3", "units": [...]}, ...]}`;
`sbatch --array=1-N` works the same with `--shard $SLURM_ARRAY_TASK_ID/N`). Shard i runs units
i-1, i-1+N, ... into its own record folder; `merge` copies their stage results into one record and
computes the verdict offline, with the same code as an unsharded run, so both give one verdict.
A merge told which shards ended unfinished (`lost`: the Slurm merge reads it from the scheduler)
records their missing stages as failures naming the reason, so those points FAIL; without it, a
missing stage is an error naming the stage.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core import jsoncodec, jsonload
from ..core.status import FAIL, PASS
from .errors import PipelineError
from .outputs import (
    EvalOutput,
    PrecisionOutput,
    ProbeOutput,
    PullOutput,
    SmokeOutput,
    ValidatorOutput,
)
from .plan import Plan
from .run import RunResult, execute
from .runrecord import RunRecord, pretty_json
from .stages import shard_of, units

_SHARD = re.compile(r"([0-9]{1,4})/([0-9]{1,4})")


def parse_shard(text: str) -> tuple[int, int]:
    m = _SHARD.fullmatch(text.strip())
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise PipelineError(f"--shard {text!r}: expected i/n with 1 <= i <= n (e.g. 2/3)")
    return int(m.group(1)), int(m.group(2))


def matrix(plan: Plan, shards: int) -> dict[str, Any]:
    """The shard matrix: `include` is exactly what GitHub's `strategy.matrix` takes."""
    if not 1 <= shards <= 256:
        raise PipelineError("--shards must be between 1 and 256")
    return {"include": [{"shard": f"{i}/{shards}"} for i in range(1, shards + 1)]}


def write_plan(plan: Plan, folder: Path, shards: int) -> dict[str, Any]:
    """Write run.json and matrix.json (with each shard's units, for people) into the plan folder."""
    record = RunRecord(folder)
    record.write_inputs(plan.to_json())
    out = matrix(plan, shards)
    names = [u.name for u in units(plan)]
    detail = {
        "run": plan.run_id,
        "include": [{**row, "units": names[i::shards]} for i, row in enumerate(out["include"])],
    }
    record.write_file("matrix.json", pretty_json(detail))
    return out


def shard_count(plan_dir: Path) -> int:
    """How many shards the plan folder was split into (its matrix.json)."""
    try:
        doc = jsonload.loads((plan_dir / "matrix.json").read_text(encoding="utf-8"))
        count = len(doc["include"])
    except FileNotFoundError:
        raise PipelineError(
            f"{plan_dir}: no matrix.json; write the plan with "
            f"`relpipe qualify REF --plan --out {plan_dir}`"
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PipelineError(f"{plan_dir}/matrix.json: not a relpipe plan matrix ({exc})") from None
    if not 1 <= count <= 256:
        raise PipelineError(f"{plan_dir}/matrix.json: {count} shards; expected 1..256")
    return count


def lost_output(stage: str, inputs: Mapping[str, Any], reason: str) -> dict[str, Any]:
    """The recorded failure of a stage whose shard ended before running it."""
    if stage == "eval":
        lost = EvalOutput(
            status=FAIL,
            suite=str(inputs.get("suite", "")),
            batch=int(inputs.get("batch", 0)),
            metric=str(inputs.get("metric", "")),
            reason=reason,
        )
        return jsoncodec.to_json(lost)
    if stage == "smoke":
        return jsoncodec.to_json(SmokeOutput(status=FAIL, reason=reason))
    if stage == "probe":
        return jsoncodec.to_json(ProbeOutput(status=FAIL, reason=reason))
    if stage == "precision":
        return jsoncodec.to_json(PrecisionOutput(status=FAIL, reason=reason))
    if stage == "golden":
        return jsoncodec.to_json(ValidatorOutput(status=PASS, problems=(reason,)))
    if stage == "pull":
        return jsoncodec.to_json(PullOutput(status=FAIL, image=""))
    raise PipelineError(f"stage {stage!r} of a lost shard has no failure record; report this")


def load_plan(folder: Path, workspace: str | None = None) -> Plan:
    if not (folder / "run.json").is_file():
        raise PipelineError(
            f"{folder}: no run.json; create the plan with "
            f"`relpipe qualify REF --plan --out {folder}`"
        )
    return Plan.from_json(RunRecord(folder).inputs(), workspace)


def run_shard(
    plan_dir: Path, shard: tuple[int, int], out: Path, workspace: str | None
) -> RunResult:
    plan = load_plan(plan_dir, workspace)
    record = RunRecord(out)
    record.write_inputs(plan.to_json())
    return execute(plan, record, shard=shard)


def merge(
    plan_dir: Path,
    shard_dirs: list[Path],
    out: Path,
    strict: bool = False,
    lost: Mapping[int, str] | None = None,
) -> RunResult:
    """Combine shard records (each must belong to the plan) into one verdict and its reports.

    `lost`: shard number -> why it ended unfinished; the stages it did not record FAIL with it."""
    plan = load_plan(plan_dir)
    lost_units: dict[str, str] = {}
    if lost:
        shards = shard_count(plan_dir)
        lost_units = {
            unit.name: lost[shard_of(i, shards)]
            for i, unit in enumerate(units(plan))
            if shard_of(i, shards) in lost
        }
    record = RunRecord(out)
    record.write_inputs(plan.to_json())
    for folder in shard_dirs:
        theirs = Plan.from_json(RunRecord(folder).inputs())
        if theirs.run_id != plan.run_id:
            raise PipelineError(
                f"{folder} is a shard of run {theirs.run_id}, not of {plan.run_id}; "
                "merge only shards of one plan"
            )
        record.import_stages(folder)
    return execute(
        plan,
        record,
        offline=True,
        strict=strict,
        quiet=True,
        lost=lost_units,
        lost_output=lost_output,
    )
