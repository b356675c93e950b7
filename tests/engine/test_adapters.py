"""Exact server argv/env per engine, including the golden acceptance-length conversions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from relpipe.engine.adapters import atom, sglang, trtllm, vllm
from relpipe.engine.adapters.server import acceptance_length, accepted_drafts
from relpipe.engine.errors import EngineError


def test_atom_argv() -> None:
    s = atom.server(
        "/models/minimax", 8001, kv_cache_dtype="fp8", tensor_parallel=8, acceptance=2.27
    )
    assert s.argv == (
        "python3",
        "-m",
        "atom.entrypoints.openai_server",
        "--model",
        "/models/minimax",
        "--host",
        "127.0.0.1",
        "--server-port",
        "8001",
        "--tensor-parallel-size",
        "8",
        "--kv_cache_dtype",
        "fp8",
        "--spec-decode-acceptance-length",
        "2.27",
    )
    assert s.env == {} and s.base_url == "http://127.0.0.1:8001" and s.health_path == "/health"


def test_vllm_synthetic_rejection_sampling() -> None:
    s = vllm.server("m", 8000, kv_cache_dtype="fp8", acceptance="3.10", num_speculative_tokens=5)
    assert s.argv[:9] == (
        "vllm",
        "serve",
        "m",
        "--host",
        "127.0.0.1",
        "--port",
        "8000",
        "--tensor-parallel-size",
        "1",
    )
    assert s.argv[9:11] == ("--kv-cache-dtype", "fp8")
    assert s.argv[11] == "--speculative-config"
    assert json.loads(s.argv[12]) == {
        "method": "eagle3",
        "num_speculative_tokens": 5,
        "rejection_sample_method": "synthetic",
        "synthetic_acceptance_length": 3.1,
    }
    assert '"synthetic_acceptance_length": 3.1}' in s.argv[12]  # exact decimal text, no float noise


def test_sglang_simulated_acceptance_env() -> None:
    s = sglang.server("m", 30000, acceptance=1.79, tensor_parallel=4)
    assert s.argv == (
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "m",
        "--host",
        "127.0.0.1",
        "--port",
        "30000",
        "--tp",
        "4",
    )
    assert s.env == {
        "SGLANG_SIMULATE_ACC_LEN": "1.79",
        "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
        "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token",
    }


def test_trtllm_forces_al_minus_one() -> None:
    s = trtllm.server("m", 8000, acceptance=2.27)
    assert s.argv == (
        "trtllm-serve",
        "m",
        "--host",
        "127.0.0.1",
        "--port",
        "8000",
        "--tp_size",
        "1",
    )
    assert s.env == {"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "1.27"}
    with pytest.raises(EngineError, match="--extra_llm_api_options"):
        trtllm.server("m", 8000, kv_cache_dtype="fp8")


def _golden_values(corpus_dir: Path) -> list[str]:
    # plain "  N: X.YY" lines of the real golden AL files (read as text: engine/ has no YAML)
    values = []
    for path in sorted((corpus_dir / "golden_al_distribution").glob("*.yaml")):
        for line in path.read_text().splitlines():
            key, _, value = line.strip().partition(":")
            if key.isdigit() and value.strip():
                values.append(value.strip())
    return values


def test_golden_acceptance_lengths_convert_exactly(corpus_dir: Path) -> None:
    values = _golden_values(corpus_dir)
    assert len(values) > 20
    for text in values:
        assert acceptance_length(text) == (text.rstrip("0").rstrip(".") if "." in text else text)
        # AL - 1 computed in decimal: 2.27 -> 1.27, never 1.2699999999999998
        whole, _, frac = text.partition(".")
        expected = (
            f"{int(whole) - 1}.{frac}".rstrip("0").rstrip(".") if frac else str(int(whole) - 1)
        )
        assert accepted_drafts(text) == expected
    assert (
        accepted_drafts(2.27) == "1.27"
        and accepted_drafts("3") == "2"
        and accepted_drafts("1") == "0"
    )


@pytest.mark.parametrize("bad", ["0.5", "abc", "nan", "inf", "65", ""])
def test_acceptance_length_out_of_range_is_refused(bad: str) -> None:
    with pytest.raises(EngineError, match="acceptance length"):
        acceptance_length(bad)


def test_port_and_host_are_validated() -> None:
    with pytest.raises(EngineError, match="port 70000 is not in 1..65535"):
        atom.server("m", 70000)
    with pytest.raises(EngineError, match="is not a host name"):
        sglang.server("m", 1, host="a b")
