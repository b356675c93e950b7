"""`python -m relpipe.engine eval --suite decode-parity`: passes on the host, and mutants of the
real kernel source (copied, edited, run from the copy) make it FAIL: the check bites."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT

SMALL = ["--prompts", "1", "--prompt-bytes", "3", "--max-new", "3", "--ops", "engine"]


def mutant(tmp_path: Path, rel: str, old: str, new: str) -> Path:
    """A copy of engine/ with one exact edit in `rel`; returns the dir to put first on
    PYTHONPATH."""
    root = tmp_path / "mutant"
    engine = root / "relpipe" / "engine"
    shutil.copytree(ROOT / "engine", engine, ignore=shutil.ignore_patterns("__pycache__"))
    path = engine / rel
    text = path.read_text()
    assert text.count(old) == 1, f"mutation target moved: {old!r}"
    path.write_text(text.replace(old, new))
    return root


def test_decode_parity_passes_for_every_kv_dtype(cli, tiny_decode) -> None:  # type: ignore[no-untyped-def]
    r = cli("eval", "--suite", "decode-parity", *tiny_decode, "--ops", "engine")
    assert r.code == 0, r.doc
    assert r.doc["suite"] == "decode-parity" and r.doc["status"] == "pass"
    assert [x["kv_dtype"] for x in r.doc["results"]] == ["fp32", "bf16", "fp8"]
    assert all(x["ok"] and x["positions"] == 8 and x["agreement"] == 1.0 for x in r.doc["results"])


@pytest.mark.parametrize(
    ("name", "old", "new", "kv"),
    [
        ("wrong softmax scale", "sm_scale = HD**-0.5", "sm_scale = HD**-0.25", "fp32"),
        (
            "fp8 KV without its scale",
            "            k = k * tl.load(scale_ptr + k_base + t, mask=tmask, other=0.0)[:, None]\n",
            "",
            "fp8",
        ),
    ],
)
def test_mutated_attention_kernel_fails_parity(
    cli, tmp_path: Path, name: str, old: str, new: str, kv: str
) -> None:  # type: ignore[no-untyped-def]
    root = mutant(tmp_path, "kernels/attention.py", old, new)
    r = cli("eval", "--suite", "decode-parity", *SMALL, "--kv-dtypes", kv, extra_path=[root])
    assert r.code == 1, (name, r.doc)
    assert r.doc["status"] == "fail"
    assert r.doc["reason"] == f"parity out of limits for KV dtype(s): {kv}"
    assert not r.doc["results"][0]["ok"]
