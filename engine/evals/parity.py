"""Suite `decode-parity`: the mono path's numerics against the reference, per KV cache dtype.

For each dtype the reference greedily decodes the prompt set; the mono path is then teacher-forced
through the same tokens, so every position compares logits computed from identical inputs.
Reported per dtype: token agreement (mono argmax == reference token), mean KL(reference || mono)
and the max |logit difference|; each has a limit, and any miss is FAIL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch

from ..decode import Ops, Progress, greedy, make_decoder
from ..model import Weights


@dataclass(frozen=True)
class Limits:
    min_agreement: float
    max_mean_kl: float
    max_logit_diff: float


# Both paths quantise the KV cache identically, so these bound kernel error, not quantisation error.
LIMITS = {
    "fp32": Limits(min_agreement=1.0, max_mean_kl=1e-6, max_logit_diff=1e-3),
    "bf16": Limits(min_agreement=0.95, max_mean_kl=1e-4, max_logit_diff=2e-2),
    "fp8": Limits(min_agreement=0.95, max_mean_kl=1e-3, max_logit_diff=1e-1),
}


@dataclass(frozen=True, kw_only=True)
class DtypeParity:
    kv_dtype: str
    positions: int
    agreement: float
    mean_kl: float
    max_logit_diff: float
    limits: Limits

    @property
    def ok(self) -> bool:
        return (
            self.positions > 0
            and self.agreement >= self.limits.min_agreement
            and self.mean_kl <= self.limits.max_mean_kl
            and self.max_logit_diff <= self.limits.max_logit_diff
        )

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "ok": self.ok}


def compare(
    ref_logits: torch.Tensor,
    ref_tokens: Sequence[Sequence[int]],
    mono_logits: torch.Tensor,
    kv_dtype: str,
) -> DtypeParity:
    """Metrics of mono vs reference logits [B, N, V] at the reference's tokens."""
    target = torch.tensor([list(t) for t in ref_tokens])
    agreement = float((mono_logits.argmax(dim=-1) == target).float().mean())
    logp = ref_logits.double().log_softmax(dim=-1)
    logq = mono_logits.double().log_softmax(dim=-1)
    kl = (logp.exp() * (logp - logq)).sum(dim=-1)
    return DtypeParity(
        kv_dtype=kv_dtype,
        positions=int(target.numel()),
        agreement=agreement,
        mean_kl=float(kl.mean()),
        max_logit_diff=float((ref_logits - mono_logits).abs().max()),
        limits=LIMITS[kv_dtype],
    )


def run(
    weights: Weights,
    prompts: Sequence[Sequence[int]],
    max_new: int,
    kv_dtypes: Sequence[str],
    ops: Ops,
    device: str,
    progress: Progress | None = None,
) -> list[DtypeParity]:
    """decode-parity over `prompts` for each KV dtype."""
    out = []
    for kv_dtype in kv_dtypes:
        ref = greedy(
            make_decoder("reference", weights, kv_dtype, device),
            prompts,
            max_new,
            progress=progress,
        )
        mono = greedy(
            make_decoder("mono", weights, kv_dtype, device, ops),
            prompts,
            max_new,
            force=ref.tokens,
            progress=progress,
        )
        out.append(compare(ref.logits, ref.tokens, mono.logits, kv_dtype))
    return out
