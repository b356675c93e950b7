"""The gsm8k stage in a real fixture nightly: `server-smoke` starts relpipe's own engine server in
the image through its adapter (model folder mounted read-only), decodes through the API, checks
that decode against the baseline image's, then runs gsm8k through the same server."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from relpipe.images.build import build_fixtures
from relpipe.images.runtime import Runtime
from relpipe.pipeline.containers import Engine
from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.plan import Options

pytestmark = [pytest.mark.services, pytest.mark.slow]


def test_server_smoke_and_gsm8k_in_a_fixture_image(
    registry: str, docker_host: str, fixture_cache: Path, tmp_path: Path
) -> None:
    image = build_fixtures(
        registry,
        f"relpipe-test-serversmoke/atom-good-{uuid.uuid4().hex[:8]}",
        count=1,
        variant="good",
        cache_dir=fixture_cache,
    )[-1]
    dataset = tmp_path / "gsm8k.jsonl"
    dataset.write_text(json.dumps({"question": "What is 2 plus 3?", "answer": "#### 5"}) + "\n")
    options = Options(
        suites=("gsm8k",),
        timeout_s=300,
        gpu="none",
        dataset=str(dataset),
        max_new=2,
        prompt_bytes=4,
        n_shot=0,
        eval_limit=1,
    )
    engine = Engine(_runtime=Runtime.from_env(docker_host=docker_host, gpu="none"))
    ref = str(image.reference)
    inputs = {"threshold": 0.0, "batch": 1, "metric": "accuracy", "baseline": ref}
    out = engine.gsm8k(ref, inputs, options)
    # the baseline (here the same digest) decoded the same tokens: no regression; the tiny
    # model scores 0 on both exact_match metrics, which meets a threshold of 0
    assert out["status"] == "pass", out
    assert out["score"] == 0.0 and out["samples"] == 1 and out["reason"] == ""
    strict = engine.gsm8k(ref, {**inputs, "threshold": 0.5, "baseline": None}, options)
    assert strict["status"] == "fail"
    assert (
        "exact_match,strict-match = 0.0000; exact_match,flexible-extract = 0.0000"
        in strict["reason"]
    )
    with pytest.raises(PipelineError, match="gsm8k needs --dataset FILE"):
        engine.gsm8k(ref, inputs, Options(dataset=None))
