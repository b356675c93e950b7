"""`python -m relpipe.engine eval --suite decode-parity|gsm8k ...`: run one suite, write its result.

decode-parity runs as a watched worker (watchdog.py) like smoke: a hung kernel is a FAIL.
gsm8k talks to a server over HTTP, where every request has its own timeout.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from .. import options, result, watchdog
from ..adapters.atom import load_ops
from ..errors import EngineError
from ..runtime import require_triton
from ..smoke import CheckFailed
from . import gsm8k as suite
from . import thresholds

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
    m = p.add_argument_group("gsm8k (InferenceX's task and rules)")
    m.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000")
    m.add_argument(
        "--completions",
        metavar="FILE",
        help="score recorded completions offline (lm-eval samples JSONL, or rows of question,"
        " answer and completion|message) instead of asking a server",
    )
    m.add_argument(
        "--model", default="relpipe-tiny", help="model name sent and used for thresholds"
    )
    m.add_argument("--dataset", help="GSM8K-format JSONL (the test split)")
    m.add_argument(
        "--fewshot",
        help="JSONL of the few-shot split (default: the dataset itself, the doc left out)",
    )
    m.add_argument("--n-shot", type=int, default=5, help="(default: %(default)s)")
    m.add_argument("--limit", type=int, default=0, help="score the first N problems (0: all)")
    m.add_argument("--concurrency", type=options.positive, default=8)
    m.add_argument(
        "--context-len",
        type=options.positive,
        default=16384,
        help="EVAL_MAX_MODEL_LEN; max_tokens follows InferenceX's rule (default: %(default)s)",
    )
    m.add_argument(
        "--max-tokens", type=options.positive, help="override the max_tokens rule (explicit)"
    )
    m.add_argument("--request-timeout", type=float, default=300.0)
    m.add_argument(
        "--thresholds", help="thresholds file (InferenceX thresholds.yaml shape, or JSON)"
    )
    m.add_argument("--threshold", type=float, help="minimum accuracy (overrides --thresholds)")
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

    require_triton()
    from .. import model  # deferred: loads torch (the engine extra)
    from . import parity  # deferred: loads torch (the engine extra)

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


def _threshold(args: argparse.Namespace) -> tuple[float, str]:

    if args.threshold is not None:
        if not 0 <= args.threshold <= 1:
            raise EngineError("--threshold must be in [0, 1]")
        return args.threshold, "--threshold"
    if args.thresholds:
        return thresholds.load(args.thresholds).lookup("gsm8k", args.model)
    raise EngineError("gsm8k needs --thresholds FILE or --threshold X")


def gsm8k(args: argparse.Namespace) -> dict[str, Any]:
    """gsm8k against a server (or recorded completions) by InferenceX's rules."""

    limit, source = _threshold(args)
    if args.n_shot < 0 or args.limit < 0:
        raise EngineError("--n-shot and --limit must be >= 0")
    if args.completions:
        if args.base_url:
            raise EngineError("gsm8k takes --completions or --base-url, not both")
        recorded = suite.read_completions(args.completions)
        if args.limit:
            recorded = recorded[: args.limit]
        report = suite.Report(scored=tuple(suite.score(p, text) for p, text in recorded), errors=())
        max_tokens = None
    else:
        if not args.base_url or not args.dataset:
            raise EngineError("gsm8k needs --base-url and --dataset (or --completions FILE)")
        report, max_tokens = ask_server(args)
    status, reason = suite.verdict(report, limit, source)
    return result.envelope(
        "eval",
        status,
        suite="gsm8k",
        reason=reason,
        model=args.model,
        threshold={"value": limit, "source": source},
        n_shot=args.n_shot,
        max_tokens=max_tokens,
        scores={m: report.accuracy(m).to_json() for m in suite.METRICS},
        errors=list(report.errors[:20]),
        error_count=len(report.errors),
        samples=[
            {
                "target": s.problem.answer.split("####")[-1].strip(),
                **s.extracted,
                "completion": s.completion[:500],
            }
            for s in report.scored[:50]
        ],
    )


def ask_server(args: argparse.Namespace) -> tuple[Any, int]:

    problems = suite.read_jsonl(args.dataset)
    if args.limit:
        problems = problems[: args.limit]
    pool = suite.read_jsonl(args.fewshot) if args.fewshot else suite.read_jsonl(args.dataset)
    shots_for = suite.fewshot_sampler(pool, args.n_shot, same_split=not args.fewshot)
    max_tokens = args.max_tokens or suite.max_output_tokens(args.context_len)
    report = suite.run(
        args.base_url,
        args.model,
        problems,
        shots_for,
        max_tokens,
        args.concurrency,
        args.request_timeout,
    )
    return report, max_tokens
