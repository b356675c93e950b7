"""Mono decode (Triton) vs the unfused torch reference: tokens/s at batch 1, 4 and 16.

On a GPU the target is mono >= 2x the reference at every batch (DESIGN.md, Performance).
Without one the kernels run in the Triton interpreter, where speed means nothing: a tiny,
correctness-sized measurement runs (parity checked first) and is labelled "CPU: correctness only".
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

TARGET = 2.0
BATCHES = (1, 4, 16)


def _script():  # type: ignore[no-untyped-def]
    path = Path(__file__).with_name("gpu_mono_decode.py")
    spec = importlib.util.spec_from_file_location("gpu_mono_decode", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module through sys.modules
    spec.loader.exec_module(module)
    return module


def main() -> list[str]:
    import torch

    script = _script()
    on_gpu = torch.cuda.is_available()
    device, rows, failures = script.measure(tiny=not on_gpu, batches=BATCHES)
    if failures:
        return [f"- mono decode parity FAILED for KV dtype(s) {', '.join(failures)}: MISS"]
    lines = script.table(rows)
    if not on_gpu:
        return [
            "CPU: correctness only (Triton interpreter; tiny model; no target applies)",
            "",
            *lines,
        ]
    out = [
        f"GPU {torch.cuda.get_device_name(0)}: target mono >= {TARGET:g}x reference",
        "",
        *lines,
        "",
    ]
    for r in rows:
        verdict = "met" if r.ratio >= TARGET else "MISS"
        out.append(
            f"- batch {r.batch}: mono/reference {r.ratio:.2f}x (target {TARGET:g}x): {verdict}"
        )
    return out
