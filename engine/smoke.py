"""`python -m relpipe.engine smoke`: a watched greedy decode on the mono path, checked against the
reference.

The parent process only supervises (watchdog.py); the worker decodes the fixed prompts on the
reference path and on the mono path (with the image's ops when present), then checks: the first
K greedy tokens are identical, the logits agree within a tolerance up to the first divergence,
and, with `--golden`, the mono tokens equal the recorded ones. Any miss is FAIL (exit 1).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from . import options, result, watchdog
from .adapters.atom import load_ops
from .errors import EngineError
from .files import read_capped
from .runtime import require_triton

# Max |logit difference| allowed on identical inputs, per KV cache dtype (both paths quantise
# the cache identically, so the remaining difference is fp32 summation order plus rare
# rounding-boundary flips of a quantised entry).
LOGIT_TOLERANCE = {"fp32": 1e-3, "bf16": 2e-2, "fp8": 1e-1}
MAX_GOLDEN_BYTES = 1 << 20


class CheckFailed(EngineError):
    """The decode itself failed (a kernel or an image op raised): a FAIL of the image, exit 1."""

    exit_code = 1


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m relpipe.engine smoke", description=__doc__)
    options.add_model_args(p)
    p.add_argument(
        "--prompts", type=options.prompt_count, default=4, help="batch size (fixed prompts)"
    )
    p.add_argument(
        "--prompt-bytes", type=int, default=0, help="truncate prompts to N bytes (0: whole)"
    )
    p.add_argument(
        "--max-new", type=options.positive, default=16, help="tokens generated per prompt"
    )
    p.add_argument(
        "--exact", type=int, default=None, help="first K tokens must match (default: all)"
    )
    p.add_argument("--kv-dtype", choices=options.KV_DTYPE_NAMES, default="fp32")
    p.add_argument("--ops", choices=options.OPS_MODES, default="auto")
    p.add_argument(
        "--tolerance", type=float, default=None, help="max |logit diff| (default per KV dtype)"
    )
    p.add_argument(
        "--timeout", type=float, default=600.0, help="watchdog: seconds before the decode is killed"
    )
    p.add_argument("--golden", help="JSON file of recorded mono tokens to compare with")
    p.add_argument("--record", help="write the mono tokens to this golden file")
    p.add_argument("--out", help="result JSON file (default stdout)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.worker:
        return work(args)
    problem = None
    if args.exact is not None and not 0 <= args.exact <= args.max_new:
        problem = "--exact must be in 0..--max-new"
    elif not args.timeout > 0:
        problem = "--timeout must be > 0 seconds"
    if problem:
        return result.write(result.envelope("smoke", "error", reason=problem), args.out)
    doc = watchdog.watched("smoke", list(sys.argv[2:] if argv is None else argv), args.timeout)
    return result.write(doc, args.out)


def work(args: argparse.Namespace) -> int:
    """The worker: decode, compare, report the result on the watchdog channel."""
    reporter = watchdog.Reporter()
    try:
        doc = run(args, reporter)
    except EngineError as exc:
        doc = result.envelope("smoke", "fail" if exc.exit_code == 1 else "error", reason=str(exc))
    reporter.result(doc)
    return 0


def _golden(path: str) -> dict[str, Any]:
    raw = read_capped(path, MAX_GOLDEN_BYTES, "golden file")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EngineError(f"golden file {path}: not JSON ({exc})") from exc
    ok = (
        isinstance(data, dict)
        and isinstance(data.get("prompts"), list)
        and isinstance(data.get("tokens"), list)
        and all(isinstance(t, list) and all(isinstance(x, int) for x in t) for t in data["tokens"])
    )
    if not ok:
        raise EngineError(
            f"golden file {path}: needs 'prompts' and 'tokens' (lists of token lists)"
        )
    return data


def first_divergence(a: Sequence[int], b: Sequence[int]) -> int:
    """Index of the first differing token (len if none)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def run(args: argparse.Namespace, reporter: watchdog.Reporter) -> dict[str, Any]:
    reporter.progress("import torch")

    require_triton()
    from . import model  # deferred: loads torch (the engine extra)
    from .decode import (  # deferred: loads torch (the engine extra)
        greedy,
        make_decoder,
    )

    reporter.progress("load model")
    weights = options.load_weights(args)
    device = options.device(args)
    texts = options.prompts(args.prompts, args.prompt_bytes)
    tokens = [model.encode(t) for t in texts]
    reporter.progress("load ops")
    ops, notes = load_ops(args.ops)
    ref = greedy(
        make_decoder("reference", weights, args.kv_dtype, device),
        tokens,
        args.max_new,
        progress=reporter.progress,
    )
    try:
        mono = greedy(
            make_decoder("mono", weights, args.kv_dtype, device, ops),
            tokens,
            args.max_new,
            progress=reporter.progress,
        )
    except EngineError:
        raise
    except Exception as exc:  # noqa: BLE001 - a kernel or an image op failing is the verdict, not a crash
        raise CheckFailed(
            f"mono decode raised {type(exc).__name__} in step {reporter.step!r}: {exc}"
        ) from exc
    reporter.progress("compare")
    checks = _checks(args, texts, ref, mono)
    if args.record:
        _record(args, texts, mono)
    failed = [c["name"] for c in checks if not c["ok"]]
    return result.envelope(
        "smoke",
        "fail" if failed else "pass",
        reason=f"failed checks: {', '.join(failed)}" if failed else None,
        checks=checks,
        ops=ops.provider,
        ops_notes=notes,
        kv_dtype=args.kv_dtype,
        device=device,
        batch=len(tokens),
        max_new=args.max_new,
        tokens={"reference": ref.tokens, "mono": mono.tokens},
        timings={
            "reference_s": round(ref.seconds, 4),
            "mono_s": round(mono.seconds, 4),
            "reference_tokens_per_s": ref.tokens_per_second,
            "mono_tokens_per_s": mono.tokens_per_second,
        },
    )


def _checks(
    args: argparse.Namespace, texts: list[str], ref: Any, mono: Any
) -> list[dict[str, Any]]:
    """The smoke's checks of the mono decode against the reference (and the golden file)."""
    exact = args.max_new if args.exact is None else args.exact
    tol = args.tolerance if args.tolerance is not None else LOGIT_TOLERANCE[args.kv_dtype]
    checks: list[dict[str, Any]] = []
    diverge = [first_divergence(r, m) for r, m in zip(ref.tokens, mono.tokens, strict=True)]
    checks.append(
        {
            "name": "exact-tokens",
            "ok": all(d >= exact for d in diverge),
            "first_k": exact,
            "first_divergence": diverge,
        }
    )
    # Logits are comparable only while both paths saw the same inputs: up to the first divergence.
    max_diff = 0.0
    for i, d in enumerate(diverge):
        n = min(d + 1, args.max_new)
        max_diff = max(max_diff, float((ref.logits[i, :n] - mono.logits[i, :n]).abs().max()))
    checks.append(
        {"name": "max-logit-diff", "ok": max_diff <= tol, "value": max_diff, "limit": tol}
    )
    if args.golden:
        gold = _golden(args.golden)
        same = gold["prompts"] == texts and gold["tokens"] == mono.tokens
        checks.append({"name": "golden", "ok": same, "file": args.golden})
    return checks


def _record(args: argparse.Namespace, texts: list[str], mono: Any) -> None:
    """Write the mono decode as a golden file (`--record`)."""
    record = {
        "schema": 1,
        "prompts": texts,
        "tokens": mono.tokens,
        "kv_dtype": args.kv_dtype,
        "seed": None if args.weights else args.seed,
    }
    result.write_file(record, args.record)
