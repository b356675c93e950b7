"""The real engine payload inside fixture nightlies run by digest: probe facts exactly, smoke and
decode-parity pass on the image's own ATOM ops, and the bad variants fail (CPU, Triton interpreter;
prompts and token counts are tiny so the whole module stays near two minutes)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

from relpipe.core import engines
from relpipe.images.build import FixtureImage, build_fixtures
from relpipe.images.runtime import EngineRun, Runtime

pytestmark = [pytest.mark.services, pytest.mark.slow]
ENGINE = Path(__file__).resolve().parents[2] / "engine"
TOY = Path(__file__).resolve().parents[1] / "fixtures" / "engines"  # the test-only engine
TINY = ["--prompts", "1", "--max-new", "2", "--prompt-bytes", "8", "--ops", "atom"]


@pytest.fixture(scope="module")
def images(registry: str, fixture_cache: Path) -> dict[str, FixtureImage]:
    run_id = uuid.uuid4().hex[:8]
    return {
        variant: build_fixtures(
            registry,
            f"relpipe-test-engine/atom-{variant}-{run_id}",
            count=1,
            variant=variant,
            cache_dir=fixture_cache,
        )[-1]
        for variant in ("good", "broken", "hang")
    }


def _run(
    runtime: Runtime,
    image: FixtureImage,
    command: str,
    args: Sequence[str] = (),
    *,
    out: Path,
    timeout_s: float = 300,
) -> EngineRun:
    return runtime.run_engine(
        image.reference, command, args, engine_dir=ENGINE, out_dir=out, timeout_s=timeout_s
    )


def test_probe_reports_the_fixture_facts_exactly(
    runtime: Runtime, images: dict[str, FixtureImage], tmp_path: Path
) -> None:
    image = images["good"]
    facts = _run(runtime, image, "probe", out=tmp_path).require()
    assert facts["engine"]["version"] == image.engine_version
    assert facts["engine"]["commit"] == image.engine_commit
    assert facts["aiter"]["commit"] == image.aiter_commit
    assert facts["rocm"]["version"] == image.rocm_version
    assert facts["packages"]["lmcache"] == image.lmcache_version
    assert facts["packages"]["torch"].startswith("2.13.0")


def test_an_engine_declared_outside_relpipe_travels_with_the_payload(
    runtime: Runtime,
    images: dict[str, FixtureImage],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The payload in the image reads the test-only engine's declaration (mounted read-only):
    its probe looks for the declared distribution, which this ATOM image does not have."""
    monkeypatch.setenv(engines.DECLARATIONS_ENV, str(TOY))
    facts = _run(runtime, images["good"], "probe", ["--engine", "toy"], out=tmp_path).require()
    assert facts["engine"]["name"] == "toy" and facts["engine"]["distribution"] == "toyengine"
    assert facts["engine"]["version"] is None
    assert "engine version: no installed distribution named toyengine" in facts["errors"]


def test_smoke_passes_on_the_images_own_atom_ops(
    runtime: Runtime, images: dict[str, FixtureImage], tmp_path: Path
) -> None:
    run = _run(runtime, images["good"], "smoke", [*TINY, "--timeout", "240"], out=tmp_path)
    result = run.require()
    assert result["status"] == "pass"
    assert result["ops"] == {"rms_norm": "atom", "silu_and_mul": "atom"}


@pytest.mark.parametrize(("variant", "verdict"), [("good", "PASS"), ("broken", "FAIL")])
def test_decode_parity_passes_on_good_and_fails_on_broken_rms_norm(
    runtime: Runtime, images: dict[str, FixtureImage], tmp_path: Path, variant: str, verdict: str
) -> None:
    parity = ["--suite", "decode-parity", "--kv-dtypes", "fp32", *TINY, "--timeout", "240"]
    run = _run(runtime, images[variant], "eval", parity, out=tmp_path)
    assert run.verdict == verdict, (run.error, run.logs[-2000:])
    assert run.result is not None and run.result["ops"]["rms_norm"] == "atom"
    if verdict == "FAIL":
        assert (
            run.result["status"] == "fail" and "parity" in (run.error or "") + run.result["reason"]
        )


def test_a_hanging_op_fails_smoke_by_watchdog(
    runtime: Runtime, images: dict[str, FixtureImage], tmp_path: Path
) -> None:
    # The watchdog budget covers start-up (torch import) too: leave room for a loaded CI host.
    smoke = [*TINY, "--timeout", "40"]
    run = _run(runtime, images["hang"], "smoke", smoke, out=tmp_path, timeout_s=150)
    assert run.verdict == "FAIL" and not run.timed_out
    assert run.result is not None and run.result["status"] == "fail"
    assert "mono decode" in run.result["hung_in"]
