"""The vLLM and SGLang precision rules on those engines' real layouts and real labelled changes
(../shared/data/engines/: vllm-paths.txt, sglang-paths.txt, labelled-changes.tsv).

* `relpipe diff --lint-rules --paths LISTING`: every listed path has a category; the only globs
  that match nothing there are the folders SOURCE.md says the listing did not walk.
* Each of the 20 labelled PRs, replayed as a commit touching its files in a real git repository,
  comes out as labelled: relevant (at least one relevant file) or not.
* Mixed files (model runners, env tables, server args, schedulers) count only when a changed
  line touches numerics.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import engines_dir
from support import commit_files

from relpipe.validate import precision

# Folders real vLLM/SGLang have that the partial listings did not walk (SOURCE.md, "not listed").
UNWALKED = {
    "vllm": {"docs/**", "*.rst", "csrc/moe/**", "csrc/quickreduce/**"},
    "sglang": {
        "test/**",
        "tests/**",
        "**/tests/**",
        "**/test_*.py",
        "docs/**",
        "*.rst",
        "benchmark/**",
        "sgl-kernel/benchmark/**",
        "python/sglang/srt/sampling/**",
    },
}
# Rows whose `files_touched` names a folder (the thread did not show the file): the file in that
# folder the row's evidence points at.
IN_FOLDER = {
    "csrc/quantization/fp8/": "csrc/quantization/fp8/common.cu",
    ".buildkite/": ".buildkite/test_areas/misc.yaml",
    "python/sglang/srt/layers/moe/": "python/sglang/srt/layers/moe/flashinfer_trtllm_moe.py",
    "python/sglang/srt/layers/quantization/": "python/sglang/srt/layers/quantization/fp8_kernel.py",
    "python/sglang/srt/layers/moe/ep_moe/": "python/sglang/srt/layers/moe/ep_moe/layer.py",
    "docs/": "docs/advanced_features/structured_outputs.ipynb",
    "sgl-kernel/": "sgl-kernel/csrc/common_extension.cc",
    ".github/workflows/": ".github/workflows/pr-test.yml",
    "*.md": "docs/getting_started/quickstart.md",
}


def _relpipe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline.cli", "diff", *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_listed_path_has_a_category(engine: str) -> None:
    listing = engines_dir() / f"{engine}-paths.txt"
    proc = _relpipe("--lint-rules", "--paths", str(listing), "--rules", engine, "--json")
    report = json.loads(proc.stdout)
    assert report["uncovered"] == [], report["uncovered"][:20]
    assert report["files"] == len(listing.read_text().splitlines())
    assert {s["glob"] for s in report["stale_globs"]} == UNWALKED[engine]
    assert proc.returncode == 1  # the unwalked folders' globs are reported, as they should be
    rules = precision.load_rules(engine)
    engine_source = [
        p for p in listing.read_text().splitlines() if p.startswith(("vllm/", "csrc/", "python/"))
    ]
    assert all(rules.category_of(p) for p in engine_source)


def _labelled() -> list[dict[str, str]]:
    with open(engines_dir() / "labelled-changes.tsv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def _files(row: dict[str, str]) -> list[str]:
    out = []
    for part in row["files_touched"].split(";"):
        name = part.strip().split(" (")[0].strip()
        out.append(IN_FOLDER.get(name, name))
        if name == "*.md":
            out.append("README.md")
    return out


def _content(path: str, version: int) -> str:
    if path.endswith((".cu", ".cc", ".cpp", ".h")):
        return f"int kernel_value() {{ return {version}; }}\n"
    if path.endswith((".yaml", ".yml")):
        return f"steps:\n  - label: step {version}\n"
    if path.endswith(".md"):
        return f"# Title\n\nText, edition {version}.\n"
    if path.endswith(".ipynb"):
        return json.dumps({"cells": [{"source": [f"edition {version}"]}]}) + "\n"
    return f"VALUE = {version}\n"


def test_labelled_changes_come_out_as_labelled(tmp_path: Path) -> None:
    rows = _labelled()
    assert len(rows) == 20
    outcomes = {}
    for i, row in enumerate(rows):
        repo = tmp_path / f"pr{i}"
        files = _files(row)
        old = commit_files(repo, {f: _content(f, 1) for f in files}, "base")
        new = commit_files(repo, {f: _content(f, 2) for f in files}, row["title"])
        report = precision.diff(repo, old, new, precision.load_rules(row["engine"]))
        relevant = [f.path for f in report.files if f.verdict == "relevant"]
        assert all(f.category for f in report.files), row["pr_url"]
        outcomes[row["pr_url"]] = ("relevant" if relevant else "not", row["moves_numerics"])
    wrong = {url: got for url, got in outcomes.items() if got[0] != got[1]}
    assert wrong == {}


RUNNER_LINES = [
    # (engine, path, old line, new line, relevant?)
    ("vllm", "vllm/v1/worker/gpu_model_runner.py", 'label = "step"', 'label = "step-bs"', False),
    (
        "vllm",
        "vllm/v1/worker/gpu_model_runner.py",
        "kv_cache_dtype = self.dtype",
        "kv_cache_dtype = torch.float8_e4m3fnuz",
        True,
    ),
    ("vllm", "vllm/envs.py", '"VLLM_PORT": lambda: 8000,', '"VLLM_PORT": lambda: 8001,', False),
    (
        "vllm",
        "vllm/envs.py",
        '"VLLM_ROCM_USE_AITER_MHA": lambda: True,',
        '"VLLM_ROCM_USE_AITER_MHA": lambda: False,',
        True,
    ),
    ("vllm", "vllm/config/parallel.py", "dp_load_balance = 'rr'", "dp_load_balance = 'lr'", False),
    ("vllm", "vllm/v1/core/sched/scheduler.py", "waiting = []", "waiting = deque()", False),
    ("sglang", "python/sglang/srt/server_args.py", "port: int = 30000", "port: int = 30001", False),
    (
        "sglang",
        "python/sglang/srt/server_args.py",
        'kv_cache_dtype: str = "auto"',
        'kv_cache_dtype: str = "fp8_e4m3"',
        True,
    ),
    (
        "sglang",
        "python/sglang/srt/model_executor/model_runner.py",
        "self.tp_rank_label = rank",
        "self.tp_rank_label = str(rank)",
        False,
    ),
    (
        "sglang",
        "python/sglang/srt/managers/scheduler.py",
        "self.sampling_seed = None",
        "self.sampling_seed = 0",
        True,
    ),
]


@pytest.mark.parametrize(("engine", "path", "before", "after", "relevant"), RUNNER_LINES)
def test_mixed_files_count_only_on_numerics_lines(
    tmp_path: Path, engine: str, path: str, before: str, after: str, relevant: bool
) -> None:
    body = "# a mixed file\n\ndef setup(self):\n    {}\n    return self\n"
    old = commit_files(tmp_path, {path: body.format(before)}, "base")
    new = commit_files(tmp_path, {path: body.format(after)}, "change")
    rules = precision.load_rules(engine)
    (change,) = precision.diff(tmp_path, old, new, rules).files
    assert change.verdict == ("relevant" if relevant else "not-relevant"), change.reason
    if not relevant:
        assert change.reason.startswith("no changed line matches the content gates of")
