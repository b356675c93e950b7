"""The precision rules on ATOM's real history (../shared/data/atom/atom.bundle, cloned to a temp
folder): every file at the head has a category, every glob matches something, and a real release
span gives every changed file a category with the reasons a reviewer expects."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from relpipe.validate import precision
from relpipe.validate.errors import ValidateError

HEAD = "ffdf3bb5ddf8a15a64d521a2eeb3bc7438f9ac21"


def relpipe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline.cli", "diff", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_rules_cover_atoms_head_and_no_glob_is_stale(atom_repo: Path) -> None:
    proc = relpipe("--lint-rules", "--repo", str(atom_repo), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert (report["commit"], report["ok"]) == (HEAD, True)
    assert report["files"] > 1000
    assert report["stale_globs"] == [] and report["uncovered"] == []


def test_lint_reports_stale_globs_and_uncovered_files(atom_repo: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "categories:\n  kernel: {precision: true, why: kernels}\n"
        "rules:\n  - {category: kernel, paths: ['atom/model_ops/**', 'csrc/**']}\n"
    )
    proc = relpipe("--lint-rules", "--repo", str(atom_repo), "--rules", str(rules), "v0.1.3")
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert "stale glob: rules[0] (kernel): csrc/**" in lines
    assert "uncovered: atom/model_engine/model_runner.py" in lines
    assert "uncovered: atom/model_ops/linear.py" not in lines


@pytest.mark.parametrize(
    ("path", "category"),
    [
        ("atom/model_engine/model_runner.py", "model-runner"),
        ("atom/model_engine/block_manager.py", "kv-cache"),
        ("atom/model_engine/block_pool.py", "kv-cache"),
        ("atom/model_engine/kv_block.py", "kv-cache"),
        ("atom/model_engine/state_cache.py", "kv-cache"),
        ("atom/model_engine/state_pool.py", "kv-cache"),
        ("atom/kv_transfer/offload/dense/__init__.py", "kv-transfer"),
        ("atom/utils/envs.py", "engine-defaults"),
        ("atom/utils/selector.py", "attention-backend"),
        ("atom/model_config/qwen3_5.py", "model-config"),
        ("atom/plugin/rtpllm/models/glm5.py", "plugin-rtpllm"),
        ("atom/models/deepseek_v4_dspark.py", "draft-model"),
        ("atom/models/kimi_k3_dspark.py", "draft-model"),
        ("atom/models/dspark_draft.py", "draft-model"),
        ("atom/model_ops/rejection_sampler.py", "draft-model"),
        ("atom/model_ops/quant_v4.py", "quantization"),
        ("atom/model_ops/v4_kernels/v4_quant.py", "quantization"),
        ("atom/model_ops/triton_fused_sigmoid_mul_quant.py", "quantization"),
        ("atom/model_ops/fused_moe/modular_kernel.py", "kernel"),
        ("atom/models/deepseek_v2.py", "model"),
        ("atom/config.py", "engine-config"),
        ("atom/entrypoints/openai/api_server.py", "entrypoints"),
        ("atom/mesh/src/lib.rs", "mesh"),
        ("atom/kv_transfer/offload/README.md", "docs"),
        ("tests/aiter_stub.py", "tests"),
        ("recipes/atom_vllm/README.md", "docs"),
        (".github/workflows/actionlint.yaml", "ci"),
        ("docker/atom_release.dockerfile", "build"),
    ],
)
def test_real_paths_get_their_category(path: str, category: str) -> None:
    rules = precision.load_rules()
    assert rules.category_of(path) == category
    meaning = rules.category(category)
    assert meaning is not None and meaning.why  # each category says why (not) in one line
    assert "\n" not in meaning.why


def test_release_span_gives_every_file_a_category(atom_repo: Path) -> None:
    proc = relpipe("v0.1.3", "v0.1.6-rc0", "--repo", str(atom_repo), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert (report["summary"]["commits"], report["summary"]["files"]) == (226, 606)
    assert [f["path"] for f in report["files"] if not f["category"]] == []
    files = {f["path"]: f for f in report["files"]}
    runner = files["atom/model_engine/model_runner.py"]
    assert (runner["category"], runner["verdict"]) == ("model-runner", "relevant")
    docs = [f for f in report["files"] if f["category"] == "docs"]
    assert docs and all(f["verdict"] == "not-relevant" for f in docs)
    assert all(f["reason"] == "prose and licences are not executed" for f in docs)
    # A commit's precision categories are those of the files it is responsible for.
    by_pr = {c["pr"]: c for c in report["commits"] if c["pr"]}
    assert len(by_pr) > 200
    assert any("draft-model" in c["precision"] for c in by_pr.values())


def test_a_commit_missing_from_the_history_is_named(atom_repo: Path) -> None:
    missing = "0123456789abcdef0123456789abcdef01234567"
    with pytest.raises(ValidateError, match=f"'{missing}' is missing in .*force-pushed"):
        precision.diff(atom_repo, missing, HEAD)


def test_load_aware_dp_routing_moves_no_numerics(atom_repo: Path) -> None:
    """ROCm/ATOM#1638 (with #1637 before it): a run-label argument in model_runner.py, a DP
    load-balance env var in utils/envs.py, a router reset in rollout/async_engine.py. The mixed
    files are named by their content gates, which none of those lines touches: no relevant file."""
    report = precision.diff(atom_repo, "d13bfb0c2", "c4b28ffa7")
    assert [f.path for f in report.files if f.verdict == "relevant"] == []
    files = {f.path: f for f in report.files}
    for path, category in [
        ("atom/model_engine/model_runner.py", "model-runner"),
        ("atom/utils/envs.py", "engine-defaults"),
        ("atom/rollout/async_engine.py", "rollout"),
    ]:
        assert (files[path].category, files[path].verdict) == (category, "not-relevant")
        assert files[path].reason == f"no changed line matches the content gates of {category}"
