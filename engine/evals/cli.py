"""`python -m relpipe.engine eval --suite decode-parity|gsm8k ...`: run one suite, write its result.

decode-parity runs as a watched worker (watchdog.py) like smoke: a hung kernel is a FAIL.
gsm8k talks to a server over HTTP, where every request has its own timeout.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from relpipe.engine import options, result, watchdog
from relpipe.engine.errors import EngineError

SUITES = ("decode-parity", "gsm8k")
KV = options.KV_DTYPE_NAMES


def _kv_list(value: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    if not names or any(n not in KV for n in names):
        raise argparse.ArgumentTypeError(f"comma-separated subset of {', '.join(KV)}")
    return names


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m relpipe.engine eval", description=__doc__)
    p.add_argument("--suite", choices=SUITES, required=True)
    p.add_argument("--out", help="result JSON file (default stdout)")
    g = p.add_argument_group("decode-parity")
    options.add_model_args(g)  # type: ignore[arg-type]
    g.add_argument("--prompts", type=options.prompt_count, default=4)
    g.add_argument("--prompt-bytes", type=int, default=0)
    g.add_argument("--max-new", type=options.positive, default=16)
    g.add_argument("--kv-dtypes", type=_kv_list, default=list(KV))
    g.add_argument("--ops", choices=options.OPS_MODES, default="auto")
    g.add_argument("--timeout", type=float, default=900.0, help="watchdog seconds")
    g.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    m = p.add_argument_group("gsm8k")
    m.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000")
    m.add_argument(
        "--model", default="relpipe-tiny", help="model name sent and used for thresholds"
    )
    m.add_argument("--dataset", help="GSM8K-format JSONL")
    m.add_argument(
        "--fewshot", help="JSONL of few-shot examples (default: first --n-shot dataset rows)"
    )
    m.add_argument("--n-shot", type=int, default=5)
    m.add_argument("--limit", type=int, default=0, help="score at most N problems (0: all)")
    m.add_argument("--concurrency", type=options.positive, default=8)
    m.add_argument("--max-tokens", type=options.positive, default=256)
    m.add_argument("--request-timeout", type=float, default=300.0)
    m.add_argument(
        "--thresholds", help="thresholds file (InferenceX thresholds.yaml shape, or JSON)"
    )
    m.add_argument("--threshold", type=float, help="minimum accuracy (overrides --thresholds)")
    m.add_argument("--metric", choices=("strict-match", "flexible-extract"), default="strict-match")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[2:] if argv is None else argv)
    args = parser().parse_args(given)
    if args.suite == "decode-parity":
        if args.worker:
            reporter = watchdog.Reporter()
            try:
                doc = decode_parity(args, reporter)
            except EngineError as exc:
                doc = result.envelope(
                    "eval",
                    "fail" if exc.exit_code == 1 else "error",
                    reason=str(exc),
                    suite="decode-parity",
                )
            reporter.result(doc)
            return 0
        doc = watchdog.watched("eval", given, args.timeout)
        doc.setdefault("suite", "decode-parity")
        return result.write(doc, args.out)
    return result.guarded("eval", args.out, lambda: gsm8k(args))


def decode_parity(args: argparse.Namespace, reporter: watchdog.Reporter) -> dict[str, Any]:
    reporter.progress("import torch")
    from relpipe.engine.runtime import require_triton

    require_triton()
    from relpipe.engine import model
    from relpipe.engine.adapters.atom import load_ops
    from relpipe.engine.evals import parity

    reporter.progress("load model")
    weights = options.load_weights(args)
    device = options.device(args)
    prompts = [model.encode(t) for t in options.prompts(args.prompts, args.prompt_bytes)]
    ops, notes = load_ops(args.ops)
    try:
        per_dtype = parity.run(
            weights, prompts, args.max_new, args.kv_dtypes, ops, device, reporter.progress
        )
    except EngineError:
        raise
    except Exception as exc:  # noqa: BLE001 - a kernel or image op raising is a FAIL of the image
        from relpipe.engine.smoke import CheckFailed

        raise CheckFailed(
            f"decode raised {type(exc).__name__} in step {reporter.step!r}: {exc}"
        ) from exc
    failed = [p.kv_dtype for p in per_dtype if not p.ok]
    return result.envelope(
        "eval",
        "fail" if failed else "pass",
        suite="decode-parity",
        reason=f"parity out of limits for KV dtype(s): {', '.join(failed)}" if failed else None,
        results=[p.to_json() for p in per_dtype],
        ops=ops.provider,
        ops_notes=notes,
        device=device,
        batch=len(prompts),
        max_new=args.max_new,
    )


def gsm8k(args: argparse.Namespace) -> dict[str, Any]:
    from relpipe.engine.evals import gsm8k as suite
    from relpipe.engine.evals import thresholds

    if not args.base_url or not args.dataset:
        raise EngineError("gsm8k needs --base-url and --dataset")
    if args.threshold is not None:
        if not 0 <= args.threshold <= 1:
            raise EngineError("--threshold must be in [0, 1]")
        limit, source = args.threshold, "--threshold"
    elif args.thresholds:
        limit, source = thresholds.load(args.thresholds).lookup("gsm8k", args.model)
    else:
        raise EngineError("gsm8k needs --thresholds FILE or --threshold X")
    if args.n_shot < 0 or args.limit < 0:
        raise EngineError("--n-shot and --limit must be >= 0")
    problems = suite.read_jsonl(args.dataset)
    if args.fewshot:
        shots = suite.read_jsonl(args.fewshot)[: args.n_shot]
    else:
        shots, problems = problems[: args.n_shot], problems[args.n_shot :]
    if len(shots) < args.n_shot:
        raise EngineError(
            f"gsm8k: {args.n_shot}-shot needs {args.n_shot} examples, found {len(shots)}"
        )
    if args.limit:
        problems = problems[: args.limit]
    report = suite.run(
        args.base_url,
        args.model,
        problems,
        shots,
        args.max_tokens,
        args.concurrency,
        args.request_timeout,
    )
    chosen = report.strict if args.metric == "strict-match" else report.flexible
    if chosen.n == 0:
        status, reason = (
            "fail",
            "zero scored samples" + (f" ({report.errors[0]})" if report.errors else ""),
        )
    elif report.errors:
        status, reason = (
            "fail",
            f"{len(report.errors)} request(s) failed, first: {report.errors[0]}",
        )
    elif chosen.value < limit:
        status, reason = (
            "fail",
            f"{args.metric} accuracy {chosen.value:.4f} < threshold {limit} ({source})",
        )
    else:
        status, reason = "pass", None
    return result.envelope(
        "eval",
        status,
        suite="gsm8k",
        reason=reason,
        model=args.model,
        metric=args.metric,
        threshold={"value": limit, "source": source},
        n_shot=len(shots),
        scores={
            "strict-match": report.strict.to_json(),
            "flexible-extract": report.flexible.to_json(),
        },
        errors=list(report.errors[:20]),
        error_count=len(report.errors),
        samples=[
            {
                "target": s.problem.target,
                "strict": s.strict,
                "flexible": s.flexible,
                "completion": s.completion[:500],
            }
            for s in report.scored[:50]
        ],
    )
