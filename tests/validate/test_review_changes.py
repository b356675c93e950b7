"""`relpipe review` on base -> head changes of a git copy of the real 2026-08 tree: the cases the
real reviews found (issue 23), each with the verdict a careful reviewer gives."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest
from support import git

from relpipe.pipeline.cli import main as cli

H200_KEY = "qwen3.5-fp8-h200-sglang-agentic-mtp"
H200_RUNNER = "benchmarks/benchmark_lib.sh"  # shared by every single-node key
H200_SCRIPT = "benchmarks/single_node/agentic/qwen3.5_fp8_h200_mtp.sh"  # sed -i at :133
LIB = "benchmarks/benchmark_lib.sh"  # the lm-eval sitecustomize copy at :896
RECIPE = (
    "benchmarks/multi_node/srt-slurm-recipes/sglang/qwen3.5/gb300-fp4/8k1k/disagg/stp/"
    "8k1k_stp_maxtpt_0.yaml"
)
MASTER = "configs/nvidia-master.yaml"


@pytest.fixture(scope="module")
def tree(inferencex_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("ixc") / "InferenceX"
    shutil.copytree(inferencex_tree, repo, symlinks=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "real tree")
    return repo


@pytest.fixture
def change(tree: Path) -> Iterator[Path]:
    """A branch off main for one change; main's tree is restored after the test."""
    git(tree, "checkout", "-q", "-B", "change", "main")
    yield tree
    git(tree, "checkout", "-q", "-f", "main")
    git(tree, "clean", "-qfd")


def _review(repo: Path, *checks: str, extra: tuple[str, ...] = ()) -> tuple[int, dict]:
    out = StringIO()
    args = ["review", "--repo", str(repo), "--base-ref", "main", "--head-ref", "HEAD", "--json"]
    for c in checks:
        args += ["--check", c]
    with redirect_stdout(out):
        code = cli([*args, *extra])
    doc = json.loads(out.getvalue())
    return code, {c["id"]: c for c in doc["checks"]}


def _edit(repo: Path, path: str, after: int, text: str) -> None:
    lines = (repo / path).read_text().splitlines(keepends=True)
    lines.insert(after, text + "\n")
    (repo / path).write_text("".join(lines))
    git(repo, "commit", "-qam", f"edit {path}")


def test_a_touched_shared_runner_lists_other_lines_as_pre_existing(change: Path) -> None:
    # The change adds a harmless line to a runner that keys with an unwaived sed -i share.
    _edit(change, H200_RUNNER, 3, 'echo "runner v2"')
    code, checks = _review(change, "engine-patches")
    record = checks["engine-patches"]
    assert record["status"] == "WARN" and code == 0
    assert any(
        w == f"{H200_SCRIPT}:133" and "pre-existing" in what for w, what in record["evidence"]
    )
    # Auditing the key still FAILs it.
    out = StringIO()
    with redirect_stdout(out):
        code = cli(
            ["review", "--repo", str(change), "--config-key", H200_KEY]
            + ["--check", "engine-patches", "--json"]
        )
    assert code == 1 and json.loads(out.getvalue())["checks"][0]["status"] == "FAIL"


def test_a_new_patch_on_a_changed_line_fails_even_behind_an_evasion(change: Path) -> None:
    _edit(change, H200_RUNNER, 3, 'log() { "$@"; }; log git -C /opt/sglang apply /tmp/x.patch')
    code, checks = _review(change, "engine-patches")
    assert code == 1 and checks["engine-patches"]["status"] == "FAIL"
    assert f"{H200_RUNNER}:4" in checks["engine-patches"]["reason"]


def test_the_lm_eval_sitecustomize_is_the_harness_not_a_patch(change: Path) -> None:
    lines = (change / LIB).read_text().splitlines()
    assert "sitecustomize.py" in lines[895]
    _edit(change, LIB, 896, "    : # lm-eval patch dir prepared")
    _, checks = _review(change, "engine-patches")
    assert not any(w == f"{LIB}:896" for w, _ in checks["engine-patches"]["evidence"])
    assert checks["engine-patches"]["status"] != "FAIL"


def test_git_apply_to_the_srt_slurm_checkout_is_infrastructure(change: Path) -> None:
    _edit(change, H200_RUNNER, 3, "git -C srt-slurm apply ../patches/launcher.patch")
    _, checks = _review(change, "engine-patches")
    assert checks["engine-patches"]["status"] != "FAIL"
    assert not any(w == f"{H200_RUNNER}:4" for w, _ in checks["engine-patches"]["evidence"])


def test_a_duplicate_top_level_master_key_is_a_finding_not_exit_2(change: Path) -> None:
    text = (change / MASTER).read_text()
    first = text.splitlines()[0]
    assert first.endswith(":") and not first.startswith(" ")
    (change / MASTER).write_text(text + "\n" + text.split("\n\n", 1)[0] + "\n")
    git(change, "commit", "-qam", "duplicate key")
    code, checks = _review(change, "yaml-keys", "engine-patches")
    assert code == 1
    assert checks["yaml-keys"]["status"] == "FAIL" and MASTER in checks["yaml-keys"]["reason"]


def test_a_key_in_two_master_files_is_a_finding_with_both_lines(change: Path) -> None:
    # InferenceX's load_config_files raises "Duplicate configuration keys found" on this merge.
    text = (change / MASTER).read_text()
    block = text.split("\n\n", 1)[0]
    key = block.splitlines()[0].rstrip(":")
    amd = change / "configs/amd-master.yaml"
    line = len(amd.read_text().splitlines()) + 2
    amd.write_text(amd.read_text() + "\n" + block + "\n")
    git(change, "commit", "-qam", "key in two masters")
    code, checks = _review(change, "yaml-keys", "engine-patches")
    record = checks["yaml-keys"]
    assert code == 1 and record["status"] == "FAIL"
    # Masters load in path order: the nvidia definition is the second one, the amd one its first.
    assert record["reason"] == (
        f"{MASTER}:1: duplicate config key `{key}`, also at configs/amd-master.yaml:{line} "
        "(two master files)"
    )
    assert checks["engine-patches"]["status"] in {"PASS", "WARN", "N/A"}


def test_a_duplicate_key_inside_a_recipe_mapping_fails(change: Path) -> None:
    lines = (change / RECIPE).read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if line.strip().startswith("max-running-requests"))
    _edit(change, RECIPE, n + 1, lines[n])
    code, checks = _review(change, "yaml-keys")
    assert code == 1 and checks["yaml-keys"]["status"] == "FAIL"
    assert f"{RECIPE}:{n + 2}" in checks["yaml-keys"]["reason"]


def test_a_rewritten_changelog_without_append_only_is_left_to_the_hook(change: Path) -> None:
    path = change / "perf-changelog.yaml"
    path.write_text(
        path.read_text().replace("\n", "\n", 1).replace("- config-keys", "-  config-keys", 1)
    )
    git(change, "commit", "-qam", "rewrite history")
    _, checks = _review(change, "append-only")
    assert checks["append-only"]["status"] == "N/A"


def test_no_signoff_no_template_warning(change: Path) -> None:
    (change / "docs/PR_REVIEW_CHECKLIST.md").write_text("# checklist\n\nno template here\n")
    git(change, "commit", "-qam", "template moved")
    _, checks = _review(change, "checklist")
    assert checks["checklist"]["status"] == "N/A"


def _bump_first_image(repo: Path) -> tuple[str, int]:
    """Bump the image of the master's first key; return the key and the image line."""
    lines = (repo / MASTER).read_text().splitlines(keepends=True)
    key = lines[0].rstrip().rstrip(":")
    n = next(i for i, line in enumerate(lines) if line.strip().startswith("image:"))
    lines[n] = lines[n].rstrip("\n") + "-bump\n"
    (repo / MASTER).write_text("".join(lines))
    git(repo, "commit", "-qam", "bump image")
    return key, n + 1


def _append_entry(repo: Path, *keys: str) -> None:
    path = repo / "perf-changelog.yaml"
    listed = "".join(f"    - {k}\n" for k in keys)
    path.write_text(
        path.read_text().rstrip("\n")
        + f'\n\n- config-keys:\n{listed}  description:\n    - "Bump the image"\n'
        + "  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/9999\n"
    )
    git(repo, "commit", "-qam", "changelog entry")


def test_an_image_bump_without_a_changelog_entry_fails(change: Path) -> None:
    key, line = _bump_first_image(change)
    code, checks = _review(change, "changelog-required")
    record = checks["changelog-required"]
    assert code == 1 and record["status"] == "FAIL" and key in record["reason"]
    assert [f"{MASTER}:{line}", f"{key}: its block changed"] in record["evidence"]


def test_an_image_bump_with_an_entry_naming_the_key_passes(change: Path) -> None:
    key, _ = _bump_first_image(change)
    _append_entry(change, key)
    _, checks = _review(change, "changelog-required")
    assert checks["changelog-required"]["status"] == "PASS"


def test_an_entry_that_misses_an_affected_key_warns(change: Path) -> None:
    key, _ = _bump_first_image(change)
    _append_entry(change, H200_KEY)
    _, checks = _review(change, "changelog-required")
    record = checks["changelog-required"]
    assert record["status"] == "WARN" and key in record["reason"]


def test_a_launch_script_change_without_an_entry_names_every_key_it_moves(change: Path) -> None:
    _edit(change, H200_SCRIPT, 3, "export SGLANG_NEW_FLAG=1")
    code, checks = _review(change, "changelog-required")
    record = checks["changelog-required"]
    assert code == 1 and record["status"] == "FAIL" and H200_KEY in record["reason"]
    assert [f"{H200_SCRIPT}:4", f"{H200_KEY}: its script changed"] in record["evidence"]


def test_a_dated_retirement_fails_after_its_last_day(change: Path) -> None:
    lines = (change / MASTER).read_text().splitlines(keepends=True)
    start = lines.index(f"{H200_KEY}:\n")
    n = next(i for i in range(start, start + 20) if lines[i].strip() == "precision: fp8")
    lines[n] = lines[n].replace("fp8", "bf16")
    (change / MASTER).write_text("".join(lines))
    git(change, "commit", "-qam", "bf16 arm")
    code, checks = _review(change, "deprecated")
    record = checks["deprecated"]
    assert code == 1 and record["status"] == "FAIL"
    assert ["MODELS.md:23", "qwen3.5 bf16 ended 2026-08-03"] in record["evidence"]


def test_the_deprecation_notice_tables_and_prose_are_read() -> None:
    from relpipe.validate.review.models import parse

    text = (
        "## Deprecation Notice\n\n### Monday, August 3, 2026\n\n| Model | Deprecated | Remains |\n"
        "|---|---|---|\n| X (`xm`) | Single-turn 8k1k | Agentic coding |\n\n"
        "### Thursday, December 31, 2099\n\n**Thursday, December 31, 2099** is the last day for "
        "the **Single-turn 8k1k** scenario on **Y** (`ym`).\n"
    )
    assert parse(text).dated == [
        ("xm", "fixed-seq-len/8192/1024", "2026-08-03", 7),
        ("ym", "fixed-seq-len/8192/1024", "2099-12-31", 11),
    ]


def test_agentic_spec_decode_without_a_synthetic_target_fails(change: Path) -> None:
    path = change / H200_SCRIPT
    text = path.read_text()
    assert "    export SGLANG_SIMULATE_ACC_LEN=3.39\n" in text
    path.write_text(text.replace("    export SGLANG_SIMULATE_ACC_LEN=3.39\n", "    :\n"))
    out = StringIO()
    with redirect_stdout(out):
        code = cli(
            ["review", "--repo", str(change), "--config-key", H200_KEY]
            + ["--check", "golden-al", "--json"]
        )
    (record,) = json.loads(out.getvalue())["checks"]
    assert code == 1 and record["status"] == "FAIL"
    assert any("no synthetic target" in what for _, what in record["evidence"])
