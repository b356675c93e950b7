"""Qualification stages: plan (resolve) -> pull -> probe -> smoke -> evals -> precision diff ->
verdict.

`make_plan` pins the image under test and its baseline (digests re-hashed by `images.registry`),
reads the config key and thresholds of the benchmark repository, and fixes every input of every
later stage; the run id is the hash of that plan. The later stages are grouped into *units*
(image: pull, probe, smoke; golden: AL settings vs golden files; precision: baseline probe and
engine commit diff; one eval unit per distinct eval batch of the benchmark points), each stage
cached in the run record under the hash of its own inputs. Running all units is an
unsharded qualification; running every n-th unit is a shard; `assemble` reads the results back
(running nothing when `offline`) and turns them into the `Outcome` the verdict is computed from.

Stage results are data, failures included: a smoke that hangs is recorded as `fail` and stays
failed on a re-run of the same digest. Only environment errors (no docker, no registry) raise.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from relpipe.images.archive import pin_or_archived
from relpipe.images.registry import Pinned, RegistryClient
from relpipe.pipeline import enginerepo
from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.outputs import (
    ConfigScope,
    EvalOutput,
    Facts,
    PrecisionOutput,
    ProbeOutput,
    PullOutput,
    Resolved,
    SmokeOutput,
    ValidatorOutput,
    run_stage,
)
from relpipe.pipeline.record import RunRecord, StageRunner, digest_of, relpipe_version
from relpipe.pipeline.verdict import Outcome
from relpipe.pipeline.workspace import Point, Workspace, threshold_for

if TYPE_CHECKING:
    from relpipe.validate.precision import PrecisionReport

DEFAULT_SUITES = ("decode-parity",)
DEFAULT_MAX_BATCH = 4
DEFAULT_TIMEOUT_S = 300.0
# The metric each suite is judged on, and the threshold used when thresholds.yaml has none.
SUITE_METRIC = {"decode-parity": ("token_agreement", 0.95), "gsm8k": ("accuracy", None)}
_MAX_LOG = 4000


@dataclass(frozen=True, kw_only=True)
class Options:
    """How a qualification runs (the CLI's options); part of the plan, so of the run id."""

    suites: tuple[str, ...] = DEFAULT_SUITES
    max_batch: int = DEFAULT_MAX_BATCH
    timeout_s: float = DEFAULT_TIMEOUT_S
    gpu: str = "auto"
    dataset: str | None = None  # GSM8K-format JSONL on the host, mounted into the container
    rules: str | None = None  # precision rules file
    max_new: int = 8  # tokens decoded per prompt by smoke and decode-parity
    kv_dtypes: tuple[str, ...] = ("fp32", "bf16", "fp8")
    prompt_bytes: int = 0  # truncate the fixed prompts (0: whole); small values keep CPU runs short
    n_shot: int = 5  # gsm8k few-shot examples (taken from the head of the dataset)
    eval_limit: int = 0  # gsm8k: score at most N problems (0: all)
    # Fixed at plan time, so that shards on other hosts check the very same dataset bytes.
    dataset_sha256: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "suites": list(self.suites),
            "max_batch": self.max_batch,
            "timeout_s": self.timeout_s,
            "gpu": self.gpu,
            "dataset": self.dataset,
            "rules": self.rules,
            "max_new": self.max_new,
            "kv_dtypes": list(self.kv_dtypes),
            "prompt_bytes": self.prompt_bytes,
            "n_shot": self.n_shot,
            "eval_limit": self.eval_limit,
            "dataset_sha256": self.dataset_sha256,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Options:
        return cls(
            suites=tuple(str(s) for s in data["suites"]),
            max_batch=int(data["max_batch"]),
            timeout_s=float(data["timeout_s"]),
            gpu=str(data["gpu"]),
            dataset=data.get("dataset"),
            rules=data.get("rules"),
            max_new=int(data["max_new"]),
            kv_dtypes=tuple(str(k) for k in data["kv_dtypes"]),
            prompt_bytes=int(data["prompt_bytes"]),
            n_shot=int(data["n_shot"]),
            eval_limit=int(data["eval_limit"]),
            dataset_sha256=data.get("dataset_sha256"),
        )


@dataclass(frozen=True, kw_only=True)
class Plan:
    """Every input of a qualification, fixed before any stage runs (run.json)."""

    image: Resolved
    baseline: Resolved | None
    config: ConfigScope | None
    thresholds: Mapping[str, Any]  # utils/evals/thresholds.yaml as read (InferenceX's shape)
    golden: Mapping[str, str | None] | None  # tree hashes of golden_al_distribution/ and configs/
    options: Options
    workspace: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "qualify",
            "image": self.image.to_json(),
            "baseline": self.baseline.to_json() if self.baseline else None,
            "config": self.config.to_json() if self.config else None,
            "thresholds": dict(self.thresholds),
            "golden": dict(self.golden) if self.golden else None,
            "options": self.options.to_json(),
            "relpipe": relpipe_version(),
        }

    @property
    def run_id(self) -> str:
        return digest_of(self.to_json())[:32]

    @classmethod
    def from_json(cls, data: Mapping[str, Any], workspace: str | None = None) -> Plan:
        if data.get("kind") != "qualify":
            raise PipelineError("not a qualification plan (run.json of `relpipe qualify --plan`)")
        try:
            baseline, config = data.get("baseline"), data.get("config")
            return cls(
                image=Resolved.from_json(data["image"]),
                baseline=Resolved.from_json(baseline) if baseline is not None else None,
                config=ConfigScope.from_json(config) if config is not None else None,
                thresholds=data.get("thresholds") or {},
                golden=data.get("golden"),
                options=Options.from_json(data["options"]),
                workspace=workspace,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PipelineError(
                f"malformed qualification plan ({exc}); re-run `relpipe qualify --plan`"
            ) from exc

    @property
    def points(self) -> tuple[Point, ...]:
        if self.config:
            return self.config.points
        return (Point("default", 1, 1),)

    @property
    def title(self) -> str:
        key = f" for {self.config.key}" if self.config else ""
        return f"qualify {self.image.ref}{key}"


def resolved(pin: Pinned) -> Resolved:
    """The resolve result of one image; `verified` because `RegistryClient.pin` re-hashes every
    byte.
    """
    return Resolved(
        ref=pin.ref,
        pinned=str(pin.reference),
        digest=pin.digest,
        verified=True,
        media_type=pin.media_type,
        platform=pin.platform,
        platform_digest=pin.platform_digest,
        created=pin.created,
    )


def make_plan(
    image: str,
    baseline: str | None,
    config_key: str | None,
    ws: Workspace | None,
    options: Options,
    client: RegistryClient,
) -> Plan:
    """Pin the image (and the baseline: `pinned` = the config key's image, locked digest first)."""
    config = None
    thresholds: Mapping[str, Any] = {}
    golden = None
    if config_key:
        if ws is None:
            raise PipelineError("--config-key needs a benchmark repository (--repo PATH)")
        ck = ws.config_key(config_key, options.max_batch)
        config = ConfigScope(
            status="ok",
            key=ck.key,
            master=ck.master,
            image=ck.image,
            framework=ck.framework,
            model_prefix=ck.model_prefix,
            points=ck.points,
        )
    if ws is not None:
        thresholds = ws.thresholds()
        golden = {
            "files": ws.tree_hash(ws.layout.golden),
            "key": config.key if config else None,
            # everything C9 reads for the key (masters, its recipes and launch scripts)
            "sources": golden_inputs(ws, config.key) if config else None,
        }
    if baseline == "pinned":
        if config is None:
            raise PipelineError(
                "--baseline pinned needs --config-key K (the baseline is K's pinned image)"
            )
        baseline = locked_ref(ws, config.image)
    # A pin upstream has deleted is taken from the archive the lock names (images.archive).
    lock_path = ws.root / "images.lock.yaml" if ws is not None else None
    pins = [pin_or_archived(client, image, lock_path)]
    pins += [pin_or_archived(client, baseline, lock_path)] if baseline else []
    return Plan(
        image=resolved(pins[0]),
        baseline=resolved(pins[1]) if baseline else None,
        config=config,
        thresholds=thresholds,
        golden=golden,
        options=options,
        workspace=str(ws.root) if ws else None,
    )


def locked_ref(ws: Workspace | None, ref: str) -> str:
    """The digest the lock file recorded for `ref` (what was benchmarked), else `ref` itself."""
    from relpipe.images import lock
    from relpipe.images.reference import parse

    if ws is None or not (ws.root / ws.lock).is_file():
        return ref
    entry = lock.lookup(lock.load(ws.root / ws.lock), ref)
    if entry is None:
        return ref
    # Pinning `tag@digest` re-hashes the locked digest: a tag that moved does not move the baseline.
    return str(parse(ref).with_digest(entry.digest))


# -- units --------------------------------------------------------------------------------------


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
    return run_stage(
        runner,
        PrecisionOutput,
        "precision",
        inputs,
        lambda: engine.precision(baseline.pinned, plan.image.pinned, plan.options),
        "precision diff",
    )


NO_GOLDEN = ValidatorOutput(
    status="n/a", reason="no golden_al_distribution/ in the benchmark repository"
)


def golden_check(plan: Plan) -> ValidatorOutput:
    """C9: the config key's acceptance-length settings vs the golden files (inputs: hashes)."""
    if plan.workspace is None or not plan.golden or not plan.golden.get("files"):
        return NO_GOLDEN
    key = plan.config.key if plan.config else None
    return golden_al_result(Workspace(Path(plan.workspace)), key)


def golden_inputs(ws: Workspace, key: str) -> str | None:
    """Hash of what C9 reads for `key` (None without golden files: C9 is then N/A)."""
    from relpipe.validate import golden_al
    from relpipe.validate.errors import ValidateError

    if not (ws.root / ws.layout.golden).is_dir():
        return None
    try:
        return golden_al.inputs_digest(ws.root, [key])
    except ValidateError as exc:
        raise PipelineError(str(exc)) from exc


def golden_al_result(ws: Workspace, key: str | None) -> ValidatorOutput:
    """`validate.golden_al.check` scoped to the config key: other keys never change C9.

    FAIL rows are problems; rows that cannot be checked (K or golden value unknown) are evidence
    marked "cannot check"; a key without agentic spec-decode settings is N/A."""
    from relpipe.validate import golden_al
    from relpipe.validate.errors import ValidateError

    if key is None:
        return ValidatorOutput(
            status="n/a", reason="no --config-key: golden AL is checked for the released key"
        )
    try:
        rows = golden_al.check(ws.root, [key])
    except ValidateError as exc:
        raise PipelineError(str(exc)) from exc
    checked = [r for r in rows if r.verdict != golden_al.NA]
    if not checked:
        why = rows[0].reason if rows else "no agentic spec-decode setting"
        return ValidatorOutput(status="n/a", reason=f"{key}: {why}")
    problems = tuple(
        f"{r.path}:{r.line}: {r.reason}" for r in checked if r.verdict == golden_al.FAIL
    )
    evidence = {
        f"{r.path}:{r.line}": (
            r.reason if r.verdict == golden_al.PASS else f"cannot check: {r.reason}"
        )
        for r in checked
        if r.verdict != golden_al.FAIL
    }
    return ValidatorOutput(status="ok", problems=problems, evidence=evidence)


# -- the engine: images.runtime + validate.precision, wired here -----------------------------------


@dataclass
class Engine:
    """Runs the engine payload in containers and diffs engine repositories
    (the I/O of the stages).
    """

    _runtime: Any = field(default=None, repr=False)
    owner: str | None = None  # the run id: labels its containers; a killed run's are reaped

    @property
    def runtime(self) -> Any:
        """The container runtime, made on first use (a run served from its cache needs no docker).

        With an owner, containers of that run left by a killed process (SIGKILL, a lost runner)
        are removed first; those of live processes (other shards) and other runs are kept.
        """
        if self._runtime is None:
            from relpipe.images.runtime import Runtime

            runtime = Runtime.from_env(owner=self.owner)
            if self.owner:
                runtime.reap_stale(self.owner)
            self._runtime = runtime
        return self._runtime

    def pull(self, ref: str) -> PullOutput:
        image, _labels = self.runtime.ensure_image(ref)
        return PullOutput(status="ok", image=str(image))

    def _run(self, ref: str, command: str, args: list[str], options: Options) -> dict[str, Any]:
        """`python -m relpipe.engine COMMAND` in the image:
        {'status': pass|fail|error, 'result', 'reason'}.
        """
        import relpipe.engine as payload

        with tempfile.TemporaryDirectory(prefix=f"relpipe-{command}-") as tmp:
            run = self.runtime.run_engine(
                ref,
                command,
                args,
                engine_dir=Path(payload.__file__).parent,
                out_dir=Path(tmp),
                timeout_s=options.timeout_s,
                gpu=None if options.gpu == "auto" else options.gpu,
            )
        return _outcome(run, options)

    def probe(self, ref: str, options: Options) -> ProbeOutput:
        from relpipe.images.nightly import engine_of
        from relpipe.images.reference import parse

        # vLLM and SGLang images record their version and commit their own way (engine.packaging)
        engine = engine_of(parse(ref).repository)
        out = self._run(ref, "probe", ["--engine", engine], options)
        if out["status"] != "pass" or not out["result"]:
            return ProbeOutput(status="error", reason=out["reason"] or "probe produced no facts")
        # The probe's JSON is untrusted: a shape it should not have is a failed probe (C2 FAIL).
        try:
            return ProbeOutput(status="ok", facts=normalise_facts(out["result"]))
        except (TypeError, ValueError, AttributeError) as exc:
            return ProbeOutput(status="error", reason=f"malformed probe output: {exc}")

    def _watchdog(self, options: Options) -> str:
        # The engine's own watchdog fires first, so a hang is reported with the step it hung in;
        # the container timeout stays as the backstop.
        return f"{max(5.0, options.timeout_s * 0.8):.0f}"

    def smoke(self, ref: str, options: Options) -> SmokeOutput:
        args = [
            "--prompts",
            "1",
            "--max-new",
            str(options.max_new),
            "--prompt-bytes",
            str(options.prompt_bytes),
            "--timeout",
            self._watchdog(options),
        ]
        out = self._run(ref, "smoke", args, options)
        result = out["result"]
        mono = (result.get("tokens") or {}).get("mono") or []
        checks = {c.get("name"): c for c in result.get("checks") or [] if isinstance(c, dict)}
        raw = {
            "status": "pass" if out["status"] == "pass" else "fail",
            "reason": out["reason"] or str(result.get("reason") or ""),
            "tokens": sum(len(seq) for seq in mono if isinstance(seq, list)),
            "tokens_per_s": (result.get("timings") or {}).get("mono_tokens_per_s"),
            "max_logit_diff": (checks.get("max-logit-diff") or {}).get("value"),
            "ops": result.get("ops"),
            "seconds": out["seconds"],
        }
        try:
            return SmokeOutput.from_json(raw)
        except (TypeError, ValueError) as exc:  # the container's JSON is untrusted: a failure
            return SmokeOutput(status="fail", reason=f"malformed smoke result: {exc}")

    def evaluate(self, ref: str, inputs: Mapping[str, Any], options: Options) -> EvalOutput:
        suite = str(inputs["suite"])
        if suite == "gsm8k":
            return _eval_output(self.gsm8k(ref, inputs, options), inputs)
        args = [
            "--suite",
            suite,
            "--prompts",
            str(inputs["batch"]),
            "--max-new",
            str(options.max_new),
            "--prompt-bytes",
            str(options.prompt_bytes),
            "--kv-dtypes",
            ",".join(options.kv_dtypes),
            "--timeout",
            self._watchdog(options),
        ]
        out = self._run(ref, "eval", args, options)
        rows = [r for r in out["result"].get("results") or [] if isinstance(r, dict)]
        agreements = [
            float(r["agreement"]) for r in rows if isinstance(r.get("agreement"), (int, float))
        ]
        raw = {
            "status": out["status"],
            "suite": suite,
            "batch": inputs["batch"],
            "metric": inputs["metric"],
            # The weakest KV dtype decides: every dtype the benchmark may use must agree.
            "score": min(agreements) if agreements else None,
            "threshold": inputs["threshold"],
            "samples": sum(int(r.get("positions") or 0) for r in rows),
            "per_dtype": {str(r.get("kv_dtype")): r.get("agreement") for r in rows},
            "reason": out["reason"] or str(out["result"].get("reason") or ""),
            "seconds": out["seconds"],
        }
        return _eval_output(raw, inputs)

    def gsm8k(self, ref: str, inputs: Mapping[str, Any], options: Options) -> Mapping[str, Any]:
        """Server-mode smoke, then gsm8k, in the image (`python -m relpipe.engine server-smoke`).

        The engine's own OpenAI-compatible server is started through its adapter on the
        container's loopback (it has no other network), with the model folder mounted read-only;
        fixed prompts are decoded greedily through the API and compared with the decode of the
        baseline (the config key's last qualified image, run the same way), then gsm8k runs by
        InferenceX's rules through the same server. The weaker exact_match metric is the score.
        """
        if not options.dataset or inputs["threshold"] is None:
            raise PipelineError(
                "gsm8k needs --dataset FILE and a gsm8k threshold in thresholds.yaml"
            )
        with tempfile.TemporaryDirectory(prefix="relpipe-gsm8k-") as tmp:
            work = Path(tmp)
            model = work / "model"
            model.mkdir()
            # relpipe's own engine reads a model folder like a real one: here, the tiny model.
            (model / "relpipe-model.json").write_text('{"seed": 0}\n')
            golden, notes = None, []
            if inputs.get("baseline"):
                base = self._server_smoke(str(inputs["baseline"]), model, work / "base", options)
                if (work / "base" / SERVER_DECODE).is_file():
                    golden = work / "base" / SERVER_DECODE
                else:
                    # the baseline is not under test: no regression check, said in the reason
                    notes.append(f"no baseline decode to compare with ({base['reason']})")
            gsm_args = ["--dataset", SERVER_DATASET, "--threshold", str(inputs["threshold"])]
            gsm_args += ["--n-shot", str(options.n_shot), "--limit", str(options.eval_limit)]
            gsm_args += [
                "--concurrency",
                str(inputs["batch"]),
                "--max-tokens",
                str(options.max_new),
            ]
            out = self._server_smoke(
                ref, model, work / "image", options, golden=golden, extra=gsm_args
            )
        result = out["result"]
        scores = (result.get("gsm8k") or {}).get("scores") or {}
        values = [s.get("accuracy") for s in scores.values() if isinstance(s, dict)]
        numbers = [float(v) for v in values if isinstance(v, (int, float))]
        reason = "; ".join([out["reason"] or str(result.get("reason") or ""), *notes]).strip("; ")
        return {
            "status": out["status"],
            "suite": "gsm8k",
            "batch": inputs["batch"],
            "metric": inputs["metric"],
            # every exact_match metric must meet the threshold: the weakest one decides
            "score": min(numbers) if numbers else None,
            "threshold": inputs["threshold"],
            "samples": min((int(s.get("n") or 0) for s in scores.values()), default=0),
            "reason": reason[:_MAX_LOG],
            "seconds": out["seconds"],
        }

    def _server_smoke(
        self,
        ref: str,
        model: Path,
        out_dir: Path,
        options: Options,
        golden: Path | None = None,
        extra: list[str] | None = None,
    ) -> dict[str, Any]:
        """`server-smoke` with relpipe's own engine in the image; its decode lands in out_dir."""
        import relpipe.engine as payload
        from relpipe.images.runtime import OUT_DIR, PAYLOAD_DIR, RESULT_NAME

        # The inner timeouts end first, so a hung server is reported with what it was doing;
        # the container timeout stays the backstop and removes the container.
        inner = f"{max(5.0, options.timeout_s * 0.4):.0f}"
        args = ["--engine", "relpipe", "--model", SERVER_MODEL, "--port", SERVER_PORT]
        args += ["--python", self.runtime.python, "--prompts", "1"]
        args += ["--max-new", str(options.max_new), "--prompt-bytes", str(options.prompt_bytes)]
        args += ["--health-timeout", inner, "--stall-timeout", inner, "--request-timeout", inner]
        args += ["--record", f"{OUT_DIR}/{SERVER_DECODE}", "--out", f"{OUT_DIR}/{RESULT_NAME}"]
        mounts = {
            str(Path(payload.__file__).parent): f"{PAYLOAD_DIR}/relpipe/engine",
            str(model): SERVER_MODEL,
        }
        if options.dataset:
            mounts[options.dataset] = SERVER_DATASET
        if golden is not None:
            mounts[str(golden)] = SERVER_GOLDEN
            args += ["--golden", SERVER_GOLDEN]
        run = self.runtime.run(
            ref,
            [self.runtime.python, "-m", "relpipe.engine", "server-smoke", *args, *(extra or [])],
            out_dir=out_dir,
            mounts=mounts,
            env={"PYTHONPATH": PAYLOAD_DIR},
            timeout_s=options.timeout_s,
            gpu=None if options.gpu == "auto" else options.gpu,
            workdir=PAYLOAD_DIR,
            result_command="server-smoke",
        )
        return _outcome(run, options)

    def precision(self, old_ref: str, new_ref: str, options: Options) -> PrecisionOutput:
        rules, path = enginerepo.source_of(new_ref, options.rules)
        with tempfile.TemporaryDirectory(prefix="relpipe-precision-") as tmp:
            repo = enginerepo.extract(self.runtime, new_ref, Path(tmp), old_ref=old_ref, path=path)
            report = precision_report(repo, rules, f"image:{new_ref}")
            return PrecisionOutput(status="ok", report=report)


def _eval_output(raw: Mapping[str, Any], inputs: Mapping[str, Any]) -> EvalOutput:
    """An eval result from the container's (untrusted) JSON; a malformed one is a recorded error."""
    try:
        return EvalOutput.from_json(raw)
    except (KeyError, TypeError, ValueError) as exc:
        return EvalOutput(
            status="error",
            suite=str(inputs["suite"]),
            batch=int(inputs["batch"]),
            metric=str(inputs["metric"]),
            reason=f"malformed {inputs['suite']} result: {exc}",
        )


def _outcome(run: Any, options: Options) -> dict[str, Any]:
    """An `images.runtime.EngineRun` as
    {'status': pass|fail|error, 'result', 'reason', 'seconds'}.
    """
    result = run.result if isinstance(run.result, dict) else {}
    if run.timed_out:
        status, reason = (
            "fail",
            f"killed after {options.timeout_s:.0f}s (timeout): {run.error or 'no result'}",
        )
    elif run.error is None:
        status, reason = "pass", ""
    else:
        status = "error" if result.get("status") == "error" or not result else "fail"
        # The engine's own reason (e.g. its watchdog naming the step that hung) says more than
        # the runtime's summary of the exit code.
        reason = str(result.get("reason") or run.error)
    return {
        "status": status,
        "result": result,
        "reason": reason[:_MAX_LOG],
        "seconds": round(float(run.duration_s), 3),
    }


def file_sha256(path: str | None) -> str | None:
    import hashlib

    if not path:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise PipelineError(f"cannot read --dataset {path}: {exc.strerror}") from exc


# Where server-smoke finds its inputs in the container (all mounted read-only) and what it records.
SERVER_DATASET = "/relpipe/data/gsm8k.jsonl"
SERVER_MODEL = "/relpipe/model"
SERVER_GOLDEN = "/relpipe/data/golden-decode.json"
SERVER_DECODE = "decode.json"
SERVER_PORT = "18080"


def precision_report(repo: Path, rules: str | None, display: str) -> PrecisionReport:
    from relpipe.validate import precision

    loaded = precision.load_rules(rules) if rules else None
    return precision.diff(repo, enginerepo.OLD_REF, enginerepo.NEW_REF, loaded, display=display)


def _version(value: Any) -> Any:
    # The probe reports some facts as objects ({"version": ..., "file": ...}), others as strings.
    return value.get("version") if isinstance(value, Mapping) else value


def normalise_facts(raw: Mapping[str, Any]) -> Facts:
    """Probe JSON -> the flat facts the verdict, lock and notes use (engine, python, torch, ...)."""
    packages = raw.get("packages") or {}
    aiter = raw.get("aiter")
    return Facts.from_json(
        {
            "engine": raw.get("engine") or {},
            "python": _version(raw.get("python")),
            "torch": _version(packages.get("torch") or raw.get("torch")),
            "triton": _version(packages.get("triton") or raw.get("triton")),
            "lmcache": _version(packages.get("lmcache")),
            "aiter": aiter.get("commit") if isinstance(aiter, Mapping) else aiter,
            "rocm": _version(raw.get("rocm")),
            "gpu": raw.get("gpu"),
            "errors": [str(e) for e in raw.get("errors") or []],
        }
    )


def open_record(state: Path, plan: Plan, out: Path | None = None) -> RunRecord:
    record = RunRecord(out or state / "runs" / plan.run_id, cache=state / "cache" / "stages")
    record.write_inputs(plan.to_json())
    return record
