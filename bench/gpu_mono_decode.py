"""Mono (Triton) vs reference (plain torch, fp32) decode throughput, standalone.

    python bench/gpu_mono_decode.py            # on a GPU: d_model 2048, 8 layers, batches 1..16
    python bench/gpu_mono_decode.py --tiny     # CPU check of this script (Triton interpreter)

Needs only torch, triton, numpy and this repository (no services). It first verifies parity
(greedy tokens and max |logit difference| of mono vs reference, fp32/bf16/fp8 KV cache) and
exits 1 if that fails; then prints a Markdown table of decode tokens/s per batch size. Both
paths keep weights and math in fp32; the reference is the unfused torch step of engine/decode.py.
Tokens/s counts every decode step of every sequence (prompt positions are fed one per step too),
after a warm-up run that compiles every kernel specialisation.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BATCHES = (1, 2, 4, 8, 16)
PARITY_TOLERANCE = {"fp32": 1e-2, "bf16": 5e-2, "fp8": 2e-1}


@dataclass(frozen=True)
class Row:
    batch: int
    reference_tps: float
    mono_tps: float

    @property
    def ratio(self) -> float:
        return self.mono_tps / self.reference_tps


def setup(tiny: bool) -> str:
    """Pick the device; without a GPU, turn on the Triton interpreter before kernels are
    imported."""
    import torch

    if torch.cuda.is_available() and not tiny:
        return "cuda"
    os.environ.setdefault("TRITON_INTERPRET", "1")
    torch.set_num_threads(1)
    return "cpu"


def model_config(tiny: bool):  # type: ignore[no-untyped-def]
    from relpipe.engine.model import TINY, ModelConfig

    if tiny:
        return TINY
    return ModelConfig(
        d_model=2048, n_layers=8, n_heads=16, n_kv_heads=4, ffn=5632, vocab=32768, max_seq=4096
    )


def _prompts(batch: int, length: int, vocab: int) -> list[list[int]]:
    import torch

    g = torch.Generator().manual_seed(batch)
    return torch.randint(0, vocab, (batch, length), generator=g).tolist()


def check_parity(weights, device: str, length: int, new: int) -> list[str]:  # type: ignore[no-untyped-def]
    """Greedy tokens and logits of mono vs reference for each KV dtype; returns failures."""
    from relpipe.engine.decode import greedy, make_decoder

    failures = []
    prompts = _prompts(2, length, weights.config.vocab)
    for kv, tol in PARITY_TOLERANCE.items():
        ref = greedy(make_decoder("reference", weights, kv, device), prompts, new)
        mono = greedy(make_decoder("mono", weights, kv, device), prompts, new, force=ref.tokens)
        diff = float((ref.logits - mono.logits).abs().max())
        agree = float((mono.logits.argmax(-1) == ref.logits.argmax(-1)).float().mean())
        print(
            f"parity {kv}: max |logit diff| {diff:.2e} (limit {tol}), argmax agreement {agree:.3f}",
            flush=True,
        )
        if diff > tol or agree < 0.95:
            failures.append(kv)
    return failures


def throughput(weights, device: str, path: str, batch: int, length: int, new: int) -> float:  # type: ignore[no-untyped-def]
    """Decode steps x sequences per second for one path and batch (after a warm-up)."""
    import torch

    from relpipe.engine.decode import greedy, make_decoder

    decoder = make_decoder(path, weights, "fp32", device)
    prompts = _prompts(batch, length, weights.config.vocab)
    greedy(decoder, prompts, min(new, 2))  # warm-up: compile kernels, fill allocator caches
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    gen = greedy(decoder, prompts, new)
    if device == "cuda":
        torch.cuda.synchronize()
    return batch * gen.steps / (time.perf_counter() - t0)


def measure(
    tiny: bool,
    batches: tuple[int, ...] = BATCHES,
    length: int | None = None,
    new: int | None = None,
) -> tuple[str, list[Row], list[str]]:
    """(device, rows, parity failures) for the chosen size."""
    from relpipe.engine.model import init_weights

    device = setup(tiny)
    weights = init_weights(model_config(tiny), seed=0).to(device)
    # tiny: the fewest interpreter steps that still exercise prompt feeding and generation
    length = length or (2 if tiny else 32)
    new = new or (1 if tiny else 64)
    # on a GPU the parity prompts are long enough (300) for split-K attention (2 splits) to run
    failures = check_parity(weights, device, length if tiny else 300, 2 if tiny else 8)
    rows = []
    if not failures:
        for batch in batches:
            ref = throughput(weights, device, "reference", batch, length, new)
            mono = throughput(weights, device, "mono", batch, length, new)
            rows.append(Row(batch, ref, mono))
    return device, rows, failures


def table(rows: list[Row]) -> list[str]:
    lines = ["| batch | reference tok/s | mono tok/s | mono / reference |", "|---:|---:|---:|---:|"]
    lines += [
        f"| {r.batch} | {r.reference_tps:,.1f} | {r.mono_tps:,.1f} | {r.ratio:.2f}x |" for r in rows
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--tiny", action="store_true", help="tiny model on CPU (interpreter): checks the script"
    )
    p.add_argument("--batches", default=",".join(map(str, BATCHES)))
    p.add_argument("--new", type=int, default=None, help="generated tokens per sequence")
    args = p.parse_args(argv)
    batches = tuple(int(b) for b in args.batches.split(","))
    device, rows, failures = measure(args.tiny, batches, new=args.new)
    import torch

    name = (
        torch.cuda.get_device_name(0)
        if device == "cuda"
        else "CPU (Triton interpreter: correctness only)"
    )
    print(f"\n### mono decode vs reference on {name}\n")
    if failures:
        print(f"PARITY FAILED for KV dtype(s): {', '.join(failures)}; no timings")
        return 1
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
