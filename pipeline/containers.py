"""The engine of the qualification stages: runs the engine payload in containers
(`images.runtime`) and diffs engine repositories (`validate.precision`), wired here.

Stage results are data, failures included: a smoke that hangs is recorded as `fail`. Only
environment errors (no docker, no registry) raise.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import engine as payload
from ..changelog.repository.era import THRESHOLDS_NAME
from ..core import jsoncodec
from ..core.jsoncodec import RecordError
from ..core.reference import parse
from ..core.status import FAIL, NA, PASS
from ..images.nightly import engine_of
from ..images.results import OUT_DIR, RESULT_NAME
from ..images.runtime import PAYLOAD_DIR, Runtime
from ..validate import precision
from ..validate.precision import keypath
from . import enginerepo
from .errors import PipelineError
from .outputs import (
    EngineFacts,
    EvalOutput,
    Facts,
    PrecisionOutput,
    ProbeOutput,
    PullOutput,
    SmokeOutput,
)
from .plan import Options

if TYPE_CHECKING:
    from ..validate.precision import PrecisionReport

_MAX_LOG = 4000


@dataclass(kw_only=True)
class Engine:
    """Runs the engine payload in containers and diffs engine repositories
    (the I/O of the stages).
    """

    _runtime: Any = field(default=None, repr=False)
    owner: str | None = None  # the run id: labels its containers; a killed run's are reaped
    # Engine pairs already extracted and diffed by this engine (old, new, rules) -> (repository,
    # report): a release of several keys diffs each old -> new pair once and scopes it per key.
    _pairs: dict[tuple[str, str, str | None], tuple[Path, Any]] = field(
        default_factory=dict, repr=False
    )
    _keep: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)
    keep_pairs: bool = False  # a release of several keys keeps them until `close`

    def close(self) -> None:
        """Remove the engine repositories kept for other keys of the same pair."""
        self._keep.close()
        self._pairs.clear()

    @property
    def pairs_diffed(self) -> int:
        """How many distinct old -> new engine pairs this engine kept (`keep_pairs`)."""
        return len(self._pairs)

    @property
    def runtime(self) -> Any:
        """The container runtime, made on first use (a run served from its cache needs no docker).

        With an owner, containers of that run left by a killed process (SIGKILL, a lost runner)
        are removed first; those of live processes (other shards) and other runs are kept.
        """
        if self._runtime is None:
            runtime = Runtime.from_env(owner=self.owner)
            if self.owner:
                runtime.reap_stale(self.owner)
            self._runtime = runtime
        return self._runtime

    def pull(self, ref: str) -> PullOutput:
        image, _labels = self.runtime.ensure_image(ref)
        return PullOutput(status=PASS, image=str(image))

    def _run(self, ref: str, command: str, args: list[str], options: Options) -> dict[str, Any]:
        """`python -m relpipe.engine COMMAND` in the image:
        {'status': pass|fail|error, 'result', 'reason'}.
        """

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

        # vLLM and SGLang images record their version and commit their own way (engine.packaging)
        engine = engine_of(parse(ref).repository)
        out = self._run(ref, "probe", ["--engine", engine], options)
        if out["status"] != "pass" or not out["result"]:
            return ProbeOutput(status=FAIL, reason=out["reason"] or "probe produced no facts")
        # The probe's JSON is untrusted: a shape it should not have is a failed probe (C2 FAIL).
        try:
            return ProbeOutput(status=PASS, facts=normalise_facts(out["result"]))
        except (TypeError, ValueError, AttributeError, RecordError) as exc:
            return ProbeOutput(status=FAIL, reason=f"malformed probe output: {exc}")

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
            return jsoncodec.from_json(SmokeOutput, raw, where="smoke result")
        except RecordError as exc:  # the container's JSON is untrusted: a failure
            return SmokeOutput(status=FAIL, reason=f"malformed smoke result: {exc}")

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
                f"gsm8k needs --dataset FILE and a gsm8k threshold in {THRESHOLDS_NAME}"
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

    def precision(
        self, old_ref: str, new_ref: str, options: Options, key: str | None = None
    ) -> PrecisionOutput:
        """The engine diff of the two images, read for config `key` when given (C5's question:
        did anything change on this key's path?)."""
        rules, path = enginerepo.source_of(new_ref, options.rules)
        pair = (old_ref, new_ref, rules)
        with contextlib.ExitStack() as once:
            if pair not in self._pairs:
                keep = self._keep if self.keep_pairs else once
                tmp = keep.enter_context(tempfile.TemporaryDirectory(prefix="relpipe-precision-"))
                repo = enginerepo.extract(
                    self.runtime, new_ref, Path(tmp), old_ref=old_ref, path=path
                )
                self._pairs[pair] = (repo, precision_report(repo, rules, f"image:{new_ref}"))
            repo, report = self._pairs[pair]
            scoped = keypath.scope(repo, report, key) if key else None
            if not self.keep_pairs:
                del self._pairs[pair]
            return PrecisionOutput(status=PASS, report=report, key_scope=scoped)


def _eval_output(raw: Mapping[str, Any], inputs: Mapping[str, Any]) -> EvalOutput:
    """An eval result from the container's (untrusted) JSON; a malformed one is a recorded error."""
    try:
        return jsoncodec.from_json(EvalOutput, raw, where=f"{inputs['suite']} result")
    except RecordError as exc:
        return EvalOutput(
            status=NA,
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


# Where server-smoke finds its inputs in the container (all mounted read-only) and what it records.
SERVER_DATASET = "/relpipe/data/gsm8k.jsonl"
SERVER_MODEL = "/relpipe/model"
SERVER_GOLDEN = "/relpipe/data/golden-decode.json"
SERVER_DECODE = "decode.json"
SERVER_PORT = "18080"


def precision_report(repo: Path, rules: str | None, display: str) -> PrecisionReport:

    loaded = precision.load_rules(rules) if rules else None
    return precision.diff(repo, enginerepo.OLD_REF, enginerepo.NEW_REF, loaded, display=display)


def _version(value: Any) -> Any:
    # The probe reports some facts as objects ({"version": ..., "file": ...}), others as strings.
    return value.get("version") if isinstance(value, Mapping) else value


def _text(value: Any) -> str | None:
    # A fact is text whatever JSON type the probe gave it (a version may come as a number).
    return None if value is None else str(value)


def normalise_facts(raw: Mapping[str, Any]) -> Facts:
    """Probe JSON -> the flat facts the verdict, lock and notes use (engine, python, torch, ...)."""
    packages = raw.get("packages") or {}
    aiter = raw.get("aiter")
    engine = raw.get("engine") or {}
    if isinstance(engine, Mapping):  # the probe's engine object names more than the facts
        engine = {f.name: _text(engine.get(f.name)) for f in fields(EngineFacts)}
    facts = {
        "engine": engine,
        "python": _version(raw.get("python")),
        "torch": _version(packages.get("torch") or raw.get("torch")),
        "triton": _version(packages.get("triton") or raw.get("triton")),
        "lmcache": _version(packages.get("lmcache")),
        "aiter": aiter.get("commit") if isinstance(aiter, Mapping) else aiter,
        "rocm": _version(raw.get("rocm")),
    }
    return jsoncodec.from_json(
        Facts,
        {
            **{k: v if k == "engine" else _text(v) for k, v in facts.items()},
            "gpu": raw.get("gpu"),
            "errors": [str(e) for e in raw.get("errors") or []],
        },
        where="probe result",
    )
