"""Command-line options shared by the decode commands (smoke, decode-parity, serve, bench):
which model (seed or weights file), which device, which KV cache dtype, which ops."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .errors import EngineError
from .runtime import default_device, require_torch

if TYPE_CHECKING:
    from .model import Weights

KV_DTYPE_NAMES = ("fp32", "bf16", "fp8")  # kv_cache_dtype values (engine/kvcache.py)
OPS_MODES = ("auto", "engine", "atom")  # --ops: see engine/adapters/atom.py
PROMPTS = (
    "The quick brown fox jumps over the lazy dog.",
    "Question: what is 12 times 7?\nAnswer:",
    "def add(a, b):\n    return",
    "ROCm nightly image smoke decode",
)


def add_model_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="seed of the deterministic weights")
    parser.add_argument(
        "--weights", help="weights file written by engine.model.save (instead of --seed)"
    )
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")


def load_weights(args: argparse.Namespace) -> Weights:
    from . import model  # deferred: loads torch (the engine extra)

    if args.weights:
        return model.load(args.weights)
    return model.init_weights(model.TINY, seed=args.seed)


def device(args: argparse.Namespace) -> str:

    torch = require_torch()
    chosen = default_device() if args.device == "auto" else str(args.device)
    if chosen == "cuda" and not torch.cuda.is_available():
        raise EngineError("--device cuda but torch sees no GPU; use --device cpu or auto")
    if chosen == "cpu":
        # The tiny model's ops are far too small to parallelise: extra threads only contend
        # (measured 6x slower decode on a loaded 2-core runner).
        torch.set_num_threads(1)
    return chosen


def prompt_count(value: str) -> int:
    n = int(value)
    if not 1 <= n <= 16:
        raise argparse.ArgumentTypeError("between 1 and 16 prompts (the decode batch)")
    return n


def positive(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return n


def prompts(count: int, max_bytes: int = 0) -> list[str]:
    """`count` fixed prompts (cycled, made distinct by their index), optionally truncated to
    `max_bytes` ASCII bytes (short decodes for the CPU interpreter)."""
    texts = [
        (f"{i}:" if i >= len(PROMPTS) else "") + PROMPTS[i % len(PROMPTS)] for i in range(count)
    ]
    return [t[:max_bytes] if max_bytes > 0 else t for t in texts]
