"""The engine benchmark and the standalone GPU script, run at their CPU (correctness) size."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

from conftest import ROOT


def test_bench_engine_on_cpu_is_correctness_only() -> None:
    spec = importlib.util.spec_from_file_location(
        "bench_engine", ROOT / "bench" / "bench_engine.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = module.main()
    assert lines[0] == "CPU: correctness only (Triton interpreter; tiny model; no target applies)"
    assert [
        line.split(" |")[0] for line in lines if line.startswith("| ") and line[2].isdigit()
    ] == ["| 1", "| 4", "| 16"]
    assert not any("MISS" in line for line in lines)


def test_gpu_script_tiny_checks_parity_then_prints_the_table() -> None:
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gpu_mono_decode.py"), "--tiny", "--batches", "2"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT.parent,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    for kv in ("fp32", "bf16", "fp8"):
        assert f"parity {kv}: max |logit diff|" in out and "argmax agreement 1.000" in out
    assert "| batch | reference tok/s | mono tok/s | mono / reference |" in out
    assert "\n| 2 | " in out
