"""`python -m relpipe.engine smoke` end to end: pass, golden files, the image's ops, the failures it
must catch (a broken op, a kernel that spins for ever, no torch in the image)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_smoke_passes_on_the_host_and_records_timings(cli, tiny_decode) -> None:  # type: ignore[no-untyped-def]
    r = cli("smoke", *tiny_decode, "--ops", "engine", "--timeout", "240")
    assert r.code == 0, r.doc
    assert r.doc["schema"] == 1 and r.doc["command"] == "smoke" and r.doc["status"] == "pass"
    assert r.doc["ops"] == {"rms_norm": "engine", "silu_and_mul": "engine"}
    assert r.doc["tokens"]["mono"] == r.doc["tokens"]["reference"]
    assert [len(t) for t in r.doc["tokens"]["mono"]] == [4, 4]
    assert {c["name"]: c["ok"] for c in r.doc["checks"]} == {
        "exact-tokens": True,
        "max-logit-diff": True,
    }
    assert r.doc["timings"]["mono_tokens_per_s"] > 0 and r.doc["watchdog"]["last_step"] == "compare"


def test_golden_record_then_compare_and_tampered_golden_fails(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    golden = tmp_path / "golden.json"
    args = ["smoke", "--prompts", "1", "--prompt-bytes", "3", "--max-new", "3", "--ops", "engine"]
    first = cli(*args, "--record", str(golden))
    assert (
        first.code == 0 and json.loads(golden.read_text())["tokens"] == first.doc["tokens"]["mono"]
    )
    again = cli(*args, "--golden", str(golden))
    assert (
        again.code == 0
        and {"name": "golden", "ok": True, "file": str(golden)} in again.doc["checks"]
    )
    data = json.loads(golden.read_text())
    data["tokens"][0][2] = (data["tokens"][0][2] + 1) % 256
    golden.write_text(json.dumps(data))
    tampered = cli(*args, "--golden", str(golden))
    assert tampered.code == 1 and tampered.doc["status"] == "fail"
    assert tampered.doc["reason"] == "failed checks: golden"


def test_smoke_uses_the_images_good_ops_and_passes(cli, fake_atom) -> None:  # type: ignore[no-untyped-def]
    r = cli(
        "smoke",
        "--prompts",
        "1",
        "--prompt-bytes",
        "3",
        "--max-new",
        "3",
        "--ops",
        "auto",
        extra_path=[fake_atom("good")],
    )
    assert r.code == 0, r.doc
    assert r.doc["ops"] == {"rms_norm": "atom", "silu_and_mul": "atom"}


def test_smoke_fails_on_a_broken_image_op(cli, fake_atom) -> None:  # type: ignore[no-untyped-def]
    r = cli(
        "smoke",
        "--prompts",
        "1",
        "--prompt-bytes",
        "3",
        "--max-new",
        "3",
        "--ops",
        "atom",
        extra_path=[fake_atom("broken")],
    )
    assert r.code == 1 and r.doc["status"] == "fail"
    assert r.doc["ops"]["rms_norm"] == "atom"
    assert "max-logit-diff" in r.doc["reason"]


def test_an_atom_image_whose_ops_cannot_be_bound_fails_with_the_reason(cli, fake_atom) -> None:  # type: ignore[no-untyped-def]
    # --ops auto in an image that has ATOM: no quiet fall-back to relpipe's kernels (C3 FAIL)
    r = cli(
        "smoke",
        "--prompts",
        "1",
        "--prompt-bytes",
        "3",
        "--max-new",
        "2",
        extra_path=[fake_atom("norm-only")],
    )
    assert r.code == 1 and r.doc["status"] == "fail"
    assert r.doc["reason"].startswith(
        "ATOM op binding failed: atom.model_ops.activation.silu_and_mul: not importable"
    )


def test_spinning_kernel_is_killed_by_the_watchdog_and_named(cli, fake_atom) -> None:  # type: ignore[no-untyped-def]
    r = cli(
        "smoke",
        "--prompts",
        "1",
        "--prompt-bytes",
        "2",
        "--max-new",
        "2",
        "--ops",
        "atom",
        "--timeout",
        "30",
        extra_path=[fake_atom("spinning")],
        timeout=120,
    )
    assert r.code == 1 and r.doc["status"] == "fail"
    assert r.doc["reason"].startswith(
        "watchdog: killed after 30s without completion; hung in: mono decode step 1/"
    )
    assert r.doc["hung_in"].startswith("mono decode step 1/")


def test_smoke_without_torch_is_an_error_not_a_traceback(tmp_path: Path, cli, tiny_decode) -> None:  # type: ignore[no-untyped-def]
    env_dir = tmp_path / "bare"
    # a real interpreter environment with no torch: a venv without system site-packages
    subprocess.run(
        [
            getattr(sys, "_base_executable", sys.executable),
            "-m",
            "venv",
            "--without-pip",
            str(env_dir),
        ],
        check=True,
    )
    bare = str(env_dir / "bin" / "python")
    r = cli("smoke", *tiny_decode, python=bare)
    assert r.code == 2 and r.doc["status"] == "error"
    assert r.doc["reason"].startswith("torch is not importable in this environment")
    assert "Traceback" not in r.stderr
    p = cli("probe", "--atom-dir", str(tmp_path / "none"), python=bare)
    assert p.code == 0 and p.doc["torch"] is None and p.doc["packages"]["torch"] is None
    assert any(e.startswith("torch: not importable") for e in p.doc["errors"])
    assert "gpu: unknown without torch" in p.doc["errors"]


def test_bad_usage_exits_2(cli) -> None:  # type: ignore[no-untyped-def]
    assert cli("smoke", "--kv-dtype", "int4").code == 2
    r = cli("smoke", "--max-new", "2", "--exact", "5")
    assert r.code == 2 and r.doc["reason"] == "--exact must be in 0..--max-new"
    t = cli("smoke", "--timeout", "0")
    assert t.code == 2 and t.doc["reason"] == "--timeout must be > 0 seconds"
    assert cli("nonsense").code == 2
