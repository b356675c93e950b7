"""Qualification stages: plan (resolve) -> pull -> probe -> smoke -> evals -> precision diff ->
verdict.

`pipeline.plan.make_plan` pins the image under test and its baseline and fixes every input of
every later stage; the run id is the hash of that plan. The later stages are grouped into *units*
(image: pull, probe, smoke; golden: AL settings vs golden files; precision: baseline probe and
engine commit diff; one eval unit per distinct eval batch of the benchmark points), each stage
cached in the run record under the hash of its own inputs. Running all units is an
unsharded qualification; running every n-th unit is a shard; `assemble` reads the results back
(running nothing when `offline`) and turns them into the `Outcome` the verdict is computed from.

Stage results are data, failures included: a smoke that hangs is recorded as `fail` and stays
failed on a re-run of the same digest. Only environment errors (no docker, no registry) raise.
The `Engine` the stages call (containers, engine repository diffs) is `pipeline.containers`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeAlias

from ..changelog.repository.era import GOLDEN_FOLDER
from ..core.status import NA, PASS
from ..validate import golden_al
from ..validate.errors import ValidateError
from . import enginerepo
from .containers import Engine
from .errors import PipelineError
from .outputs import (
    CANNOT_CHECK,
    EvalOutput,
    PrecisionOutput,
    ProbeOutput,
    PullOutput,
    Resolved,
    SmokeOutput,
    ValidatorOutput,
    run_stage,
)
from .plan import Plan
from .runrecord import StageRunner
from .verdict import Outcome
from .workspace import Workspace, threshold_for

# The metric each suite is judged on, and the threshold used when thresholds.yaml has none.
SUITE_METRIC = {"decode-parity": ("token_agreement", 0.95), "gsm8k": ("accuracy", None)}


StageOutput: TypeAlias = (
    PullOutput | ProbeOutput | SmokeOutput | EvalOutput | PrecisionOutput | ValidatorOutput
)


@dataclass(frozen=True)
class Unit:
    name: str
    run: Callable[[StageRunner, Engine], list[tuple[str, StageOutput]]]


def units(plan: Plan) -> list[Unit]:
    """The plan's work in a fixed order: image stages, golden, precision, one unit per distinct
    eval.
    """
    out = [Unit("image", partial(_image_unit, plan))]
    if plan.golden is not None:
        out.append(Unit("golden", partial(_golden_unit, plan)))
    if plan.baseline is not None:
        out.append(Unit("precision", partial(_precision_unit, plan)))
    # Points sharing eval inputs share a result.
    batches = sorted({p.batch for p in plan.points})
    out += [Unit(f"evals@batch{b}", partial(_eval_unit, plan, b)) for b in batches]
    return out


def shard_of(index: int, shards: int) -> int:
    """The shard (1-based) that runs unit `index` of a plan split in `shards` (round robin)."""
    return index % shards + 1


def run_units(
    plan: Plan,
    runner: StageRunner,
    engine: Engine,
    shard: tuple[int, int] | None = None,
    lost: Mapping[str, str] | None = None,
) -> dict[str, StageOutput]:
    """Run all units (or those of shard i of n, 1-based round robin); returns stage label -> output.

    `lost` (merging only): unit name -> why its shard ended unfinished; the stages it did not
    record are recorded as failures with that reason (see `StageRunner`)."""
    outputs: dict[str, StageOutput] = {}
    for i, unit in enumerate(units(plan)):
        if shard is not None and shard_of(i, shard[1]) != shard[0]:
            continue
        runner.lost_reason = (lost or {}).get(unit.name)
        try:
            outputs.update(dict(unit.run(runner, engine)))
        finally:
            runner.lost_reason = None
    return outputs


def _output(outputs: Mapping[str, StageOutput], label: str, kind: type[Any]) -> Any:
    """One unit's output by label, of the type its stage records (None where it did not run)."""
    value = outputs.get(label)
    if value is not None and not isinstance(value, kind):
        raise PipelineError(f"stage {label} recorded a {type(value).__name__}, not {kind.__name__}")
    return value


def assemble(plan: Plan, outputs: Mapping[str, StageOutput]) -> Outcome:
    evals = []
    for point in plan.points:
        for suite in plan.options.suites:
            ev = _output(outputs, f"eval:{suite}@batch{point.batch}", EvalOutput)
            if ev is None:
                raise PipelineError(f"stage eval {suite} batch {point.batch} has no result")
            evals.append(replace(ev, point=point.name))
    baseline = plan.baseline
    base_probe: ProbeOutput | None = _output(outputs, "baseline_probe", ProbeOutput)
    if baseline is not None and base_probe is not None:
        baseline = replace(baseline, facts=base_probe.facts)
    return Outcome(
        image=plan.image,
        baseline=baseline,
        probe=_output(outputs, "probe", ProbeOutput),
        smoke=_output(outputs, "smoke", SmokeOutput),
        evals=tuple(evals),
        precision=_output(outputs, "precision", PrecisionOutput),
        config=plan.config,
        golden=_output(outputs, "golden", ValidatorOutput),
    )


def stage_count(plan: Plan) -> int:
    per_eval = len(plan.options.suites)
    return (
        3
        + 2 * (plan.baseline is not None)
        + (plan.golden is not None)
        + per_eval * len({p.batch for p in plan.points})
    )


# -- the stages ------------------------------------------------------------------------------------


def _image_unit(plan: Plan, runner: StageRunner, engine: Engine) -> list[tuple[str, StageOutput]]:
    ref = plan.image.pinned
    base = {"image": plan.image.digest}
    pulled = run_stage(runner, PullOutput, "pull", base, lambda: engine.pull(ref), "pull")
    probe = _probe_stage(plan, plan.image, runner, engine, "probe")
    smoke_inputs = {
        **base,
        "timeout_s": plan.options.timeout_s,
        "gpu": plan.options.gpu,
        "max_new": plan.options.max_new,
        "prompt_bytes": plan.options.prompt_bytes,
    }
    smoke = run_stage(
        runner,
        SmokeOutput,
        "smoke",
        smoke_inputs,
        lambda: engine.smoke(ref, plan.options),
        "smoke",
    )
    return [("pull", pulled), ("probe", probe), ("smoke", smoke)]


def _golden_unit(plan: Plan, runner: StageRunner, engine: Engine) -> list[tuple[str, StageOutput]]:
    inputs = dict(plan.golden or {})
    golden = run_stage(
        runner, ValidatorOutput, "golden", inputs, lambda: golden_check(plan), "golden AL check"
    )
    return [("golden", golden)]


def _precision_unit(
    plan: Plan, runner: StageRunner, engine: Engine
) -> list[tuple[str, StageOutput]]:
    assert plan.baseline is not None
    # The baseline's facts (its engine version) are what the release notes compare against.
    base_probe = _probe_stage(plan, plan.baseline, runner, engine, "probe baseline")
    return [("baseline_probe", base_probe), ("precision", _precision_stage(plan, runner, engine))]


def _probe_stage(
    plan: Plan, image: Resolved, runner: StageRunner, engine: Engine, label: str
) -> ProbeOutput:
    """One probe per digest: the same key whether the image is under test or the baseline."""
    inputs = {"image": image.digest, "timeout_s": plan.options.timeout_s}
    return run_stage(
        runner,
        ProbeOutput,
        "probe",
        inputs,
        lambda: engine.probe(image.pinned, plan.options),
        label,
    )


def _eval_unit(
    plan: Plan, batch: int, runner: StageRunner, engine: Engine
) -> list[tuple[str, StageOutput]]:
    return [
        (f"eval:{suite}@batch{batch}", _eval_stage(plan, suite, batch, runner, engine))
        for suite in plan.options.suites
    ]


def _eval_stage(
    plan: Plan, suite: str, batch: int, runner: StageRunner, engine: Engine
) -> EvalOutput:
    metric, fallback = SUITE_METRIC.get(suite, ("score", None))
    prefix = plan.config.model_prefix if plan.config else None
    threshold = threshold_for(plan.thresholds, prefix, suite)
    inputs = {
        "image": plan.image.digest,
        "suite": suite,
        "batch": batch,
        "metric": metric,
        "threshold": threshold if threshold is not None else fallback,
        "timeout_s": plan.options.timeout_s,
        "gpu": plan.options.gpu,
        "max_new": plan.options.max_new,
    }
    # Only what a suite reads is its input, so adding gsm8k does not invalidate decode-parity.
    if suite == "gsm8k":
        inputs.update(
            dataset=plan.options.dataset_sha256,
            n_shot=plan.options.n_shot,
            eval_limit=plan.options.eval_limit,
            prompt_bytes=plan.options.prompt_bytes,
            # server-mode smoke compares its decode with the baseline's (cross-nightly)
            baseline=plan.baseline.pinned if plan.baseline else None,
        )
    else:
        inputs.update(
            kv_dtypes=list(plan.options.kv_dtypes), prompt_bytes=plan.options.prompt_bytes
        )
    ref = plan.image.pinned
    return run_stage(
        runner,
        EvalOutput,
        "eval",
        inputs,
        lambda: engine.evaluate(ref, inputs, plan.options),
        f"eval {suite} batch {batch}",
    )


def _precision_stage(plan: Plan, runner: StageRunner, engine: Engine) -> PrecisionOutput:
    baseline = plan.baseline
    assert baseline is not None
    rules, _ = enginerepo.source_of(plan.image.pinned, plan.options.rules)
    inputs = {"old": baseline.digest, "new": plan.image.digest, "rules": rules}
    key = plan.config.key if plan.config else None
    if key:
        inputs["config_key"] = key  # only then: records of runs without a key keep their keys
    return run_stage(
        runner,
        PrecisionOutput,
        "precision",
        inputs,
        lambda: engine.precision(baseline.pinned, plan.image.pinned, plan.options, key),
        "precision diff",
    )


NO_GOLDEN = ValidatorOutput(status=NA, reason=f"no {GOLDEN_FOLDER}/ in the benchmark repository")


def golden_check(plan: Plan) -> ValidatorOutput:
    """C9: the config key's acceptance-length settings vs the golden files (inputs: hashes)."""
    if plan.workspace is None or not plan.golden or not plan.golden.get("files"):
        return NO_GOLDEN
    key = plan.config.key if plan.config else None
    return golden_al_result(Workspace(Path(plan.workspace)), key)


def golden_al_result(ws: Workspace, key: str | None) -> ValidatorOutput:
    """`validate.golden_al.check` scoped to the config key: other keys never change C9.

    FAIL rows are problems; rows that cannot be checked (K or golden value unknown) are evidence
    marked "cannot check"; a key without agentic spec-decode settings is N/A."""

    if key is None:
        return ValidatorOutput(
            status=NA, reason="no --config-key: golden AL is checked for the released key"
        )
    try:
        found = golden_al.verdict(ws.root, [key])
    except ValidateError as exc:
        raise PipelineError(str(exc)) from exc
    if found.status == golden_al.NA:
        return ValidatorOutput(status=NA, reason=f"{key}: {found.reason}")
    checked = [r for r in found.rows if r.verdict != golden_al.NA]
    problems = tuple(
        f"{r.path}:{r.line}: {r.reason}" for r in checked if r.verdict == golden_al.FAIL
    )
    evidence = {
        f"{r.path}:{r.line}": (
            r.reason if r.verdict == golden_al.PASS else f"{CANNOT_CHECK}{r.reason}"
        )
        for r in checked
        if r.verdict != golden_al.FAIL
    }
    return ValidatorOutput(status=PASS, reason=found.reason, problems=problems, evidence=evidence)
