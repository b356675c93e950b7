"""Fixtures of tests/pipeline: a recorded qualification outcome shaped like a real fixture run."""

from __future__ import annotations

from typing import Any

import pytest
from relpipe.pipeline.verdict import Outcome

DIGEST = "sha256:" + "ab" * 32
BASE_DIGEST = "sha256:" + "cd" * 32


def outcome(**over: Any) -> Outcome:
    """A PASS-shaped outcome; keyword arguments replace single fields."""
    base: dict[str, Any] = {
        "image": {
            "ref": "127.0.0.1:5000/rocm/atom-dev:nightly_202610070333",
            "digest": DIGEST,
            "verified": True,
            "pinned": f"127.0.0.1:5000/rocm/atom-dev:nightly_202610070333@{DIGEST}",
        },
        "baseline": {
            "ref": "127.0.0.1:5000/rocm/atom-dev:nightly_202610011210",
            "digest": BASE_DIGEST,
            "verified": True,
        },
        "probe": {
            "status": "ok",
            "facts": {
                "engine": {
                    "name": "atom",
                    "version": "0.1.7.dev10+gf9ff5b056",
                    "commit": "f9ff5b05644b",
                },
                "python": "3.11.2",
                "torch": "2.13.0",
                "triton": "3.8.0",
                "rocm": "7.2.4-112",
                "aiter": "1a2b3c",
                "lmcache": "0.5.6.dev139+gf22dec28",
                "errors": [],
            },
        },
        "smoke": {"status": "pass", "tokens": 64, "tokens_per_s": 80.0, "max_logit_diff": 0.001},
        "evals": (
            {
                "status": "pass",
                "suite": "decode-parity",
                "point": "agentic-coding/tp4/conc1",
                "metric": "token_agreement",
                "score": 1.0,
                "threshold": 0.99,
                "samples": 32,
            },
            {
                "status": "pass",
                "suite": "decode-parity",
                "point": "agentic-coding/tp4/conc4",
                "metric": "token_agreement",
                "score": 0.995,
                "threshold": 0.99,
                "samples": 32,
            },
        ),
        "precision": {
            "status": "ok",
            "old": "831ef6924aaa",
            "new": "f9ff5b05644b",
            "commits": [
                {
                    "sha": "874acf188105",
                    "subject": "fix(layernorm): accumulate in fp32 <b>now</b> (#2479)",
                    "pr": 2479,
                },
                {
                    "sha": "c3bd6b03be7d",
                    "subject": "docs(linear): explain | dequantization (#2485)",
                    "pr": 2485,
                },
            ],
            "files": [
                {
                    "path": "atom/model_ops/layernorm.py",
                    "category": "norm",
                    "verdict": "relevant",
                    "commits": ["874acf188105"],
                },
                {
                    "path": "atom/model_ops/linear.py",
                    "category": "linear",
                    "verdict": "cosmetic",
                    "commits": ["c3bd6b03be7d"],
                },
            ],
            "watch": [
                {
                    "label": "eagle3_llama.py",
                    "path": "atom/models/eagle3_llama.py",
                    "state": "unchanged",
                }
            ],
            "upstream": [],
        },
        "config": {
            "status": "ok",
            "key": "minimaxm3-fp4-mi355x-atom-agentic-mtp",
            "master": "configs/amd-master.yaml",
            "image": "rocm/atom-dev:nightly_202610011210",
            "framework": "atom",
            "model_prefix": "minimaxm3",
            "points": [
                {"name": "agentic-coding/tp4/conc1", "batch": 1},
                {"name": "agentic-coding/tp4/conc4", "batch": 4},
            ],
        },
        "golden": {"status": "ok", "problems": [], "evidence": {"golden files": "1"}},
    }
    base.update(over)
    return Outcome(**base)


@pytest.fixture
def sample_outcome() -> Outcome:
    return outcome()


@pytest.fixture
def make_outcome() -> Any:
    return outcome
