"""The benchmark repository as relpipe reads it: config keys, points, thresholds, shards, CLI
errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from relpipe.pipeline.demo import EXAMPLE, rewrite_registry
from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.release import new_image_text, pr_link
from relpipe.pipeline.shard import parse_shard
from relpipe.pipeline.workspace import Workspace, threshold_for

KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"


def test_config_key_expands_points_per_arm_with_batch_cap() -> None:
    ck = Workspace(EXAMPLE).config_key(KEY, max_batch=2)
    assert ck.image == "rocm/atom-dev:nightly_202610011210" and ck.framework == "atom"
    assert [(p.name, p.batch) for p in ck.points] == [
        ("agentic-coding/tp4-eagle3/conc1", 1),
        ("agentic-coding/tp4-eagle3/conc4", 2),
        ("agentic-coding/tp4-kvdram-lmcache-eagle3/conc8", 2),
    ]
    sweep = Workspace(EXAMPLE).config_key("qwen3.5-fp8-mi355x-atom", max_batch=16)
    assert [p.concurrency for p in sweep.points] == [4, 8, 16]  # conc-start..conc-end doubling


def test_unknown_key_and_bad_yaml_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(PipelineError, match="config key 'nope' is not in amd-master.yaml"):
        Workspace(EXAMPLE).config_key("nope", 4)
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    master = repo / "configs" / "amd-master.yaml"
    master.write_text(master.read_text() + "\ndsv4-fp4-mi355x-atom-agentic-mtp:\n  image: x\n")
    with pytest.raises(PipelineError, match="duplicate"):
        Workspace(repo).config_key(KEY, 4)


def test_thresholds_model_prefix_overrides_default() -> None:
    table = Workspace(EXAMPLE).thresholds()
    assert threshold_for(table, "minimaxm3", "gsm8k") == 0.92
    assert threshold_for(table, "qwen3.5", "gsm8k") == 0.90
    assert threshold_for(table, "minimaxm3", "decode-parity") == 0.95
    assert threshold_for(table, "minimaxm3", "unknown-suite") is None


def test_shard_spec_and_release_spelling() -> None:
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "a/b", "3"):
        with pytest.raises(PipelineError, match="expected i/n"):
            parse_shard(bad)
    assert (
        new_image_text("rocm/atom-dev:nightly_1", "docker.io/rocm/atom-dev:nightly_2")
        == "rocm/atom-dev:nightly_2"
    )
    assert new_image_text("127.0.0.1:5000/a/b:x", "127.0.0.1:5000/a/b:y") == "127.0.0.1:5000/a/b:y"
    assert pr_link("https://github.com/o/r/", None) == "https://github.com/o/r/pull/XXX"
    assert (
        rewrite_registry("image: rocm/atom-dev:t\nimage: xrocm/atom-dev:t", "h:1")
        == "image: h:1/rocm/atom-dev:t\nimage: xrocm/atom-dev:t"
    )


def test_cli_usage_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    cases = [
        (["qualify"], "qualify needs an image REF"),
        (["qualify", "x/y:z", "--suite", "gsm8k"], "--suite gsm8k needs --dataset FILE"),
        (
            [
                "qualify",
                "--from-plan",
                str(tmp_path),
                "--shard",
                "1/2",
                "--out",
                str(tmp_path / "s"),
            ],
            "no run.json",
        ),
        (["report", str(tmp_path)], "is not a run record"),
        (["release", "--image", "x/y:z"], "the following arguments are required: --config-key"),
    ]
    for args, message in cases:
        proc = subprocess.run(
            [sys.executable, "-m", "relpipe.pipeline", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 2, (args, proc.stderr)
        assert (
            message in proc.stderr
            and proc.stderr.count("\n") == 1
            and "Traceback" not in proc.stderr
        )
