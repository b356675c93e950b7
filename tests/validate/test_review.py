"""`relpipe review` on a git copy of the real InferenceX tree: mutations, the whole tree, hostile
content, and the parsers (CODEOWNERS, the checklist template, MODELS.md, recipe inheritance)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from support import git

from relpipe.pipeline.cli import main as cli
from relpipe.validate.review import recipe as recipes
from relpipe.validate.review.context import Options
from relpipe.validate.review.models import parse as parse_models
from relpipe.validate.review.owners import _compile, template_items
from relpipe.validate.review.run import run

HERE = Path(__file__).resolve().parent
KEY = "dsr1-fp4-mi355x-sglang"
SCRIPT = "benchmarks/single_node/fixed_seq_len/dsr1_fp4_mi355x.sh"
RUNNER = "runners/launch_mi355x-amds.sh"
RECIPE_KEY = "glm5.2-fp4-gb300-dynamo-sglang-agentic-disagg"
RECIPE = (
    "benchmarks/multi_node/srt-slurm-recipes/sglang/glm5.2/gb300-fp4/agentic/glm5.2-agentx.yaml"
)
NEXTN = "SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE"


@pytest.fixture(scope="module")
def tree(inferencex_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git copy of the real tree (one commit on `main`), shared by this module's tests."""
    repo = tmp_path_factory.mktemp("ix") / "InferenceX"
    shutil.copytree(inferencex_tree, repo, symlinks=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "real tree")
    return repo


def _one(repo: Path, check: str, *args: str) -> dict:
    """Run the CLI in-process; return the one check's JSON record and the exit code."""
    from contextlib import redirect_stdout
    from io import StringIO

    out = StringIO()
    with redirect_stdout(out):
        code = cli(["review", "--repo", str(repo), "--check", check, "--json", *args])
    doc = json.loads(out.getvalue())
    (record,) = doc["checks"]
    record["exit"] = code
    return record


def _insert(path: Path, after: int, line: str) -> bytes:
    """Insert `line` after line `after` (1-based); return the original bytes."""
    original = path.read_bytes()
    lines = original.decode().splitlines(keepends=True)
    lines.insert(after, line + "\n")
    path.write_text("".join(lines))
    return original


def _where(record: dict) -> list[str]:
    return [row[0] for row in record["evidence"]]


def test_hf_overrides_in_a_launch_script_fails_and_names_the_line(tree: Path) -> None:
    assert _one(tree, "arch-hacks", "--config-key", KEY)["status"] == "PASS"
    original = _insert(tree / SCRIPT, 40, 'EXTRA="--hf-overrides \'{\\"index_topk_freq\\": 4}\'"')
    try:
        record = _one(tree, "arch-hacks", "--config-key", KEY)
        assert record["status"] == "FAIL" and record["exit"] == 1
        assert f"{SCRIPT}:41" in _where(record)
        assert f"{SCRIPT}:41" in record["reason"]
    finally:
        (tree / SCRIPT).write_bytes(original)
    assert _one(tree, "arch-hacks", "--config-key", KEY)["status"] == "PASS"


def test_commented_out_hf_overrides_is_not_a_finding(tree: Path) -> None:
    original = _insert(tree / SCRIPT, 40, "# --hf-overrides '{}' was tried and removed")
    try:
        assert _one(tree, "arch-hacks", "--config-key", KEY)["status"] == "PASS"
    finally:
        (tree / SCRIPT).write_bytes(original)


def test_git_apply_in_a_runner_fails_and_names_the_line(tree: Path) -> None:
    assert _one(tree, "engine-patches", "--config-key", KEY)["status"] == "PASS"
    original = _insert(tree / RUNNER, 2, "git apply /tmp/vllm-fix.patch")
    try:
        record = _one(tree, "engine-patches", "--config-key", KEY)
        assert record["status"] == "FAIL"
        assert f"{RUNNER}:3" in _where(record)
    finally:
        (tree / RUNNER).write_bytes(original)
    assert _one(tree, "engine-patches", "--config-key", KEY)["status"] == "PASS"


def test_git_apply_over_a_change_selects_the_keys_of_the_runner(tree: Path) -> None:
    git(tree, "checkout", "-q", "-b", "mutant")
    try:
        original = _insert(tree / RUNNER, 2, "git apply /tmp/vllm-fix.patch")
        git(tree, "commit", "-q", "-am", "patch the engine")
        record = _one(tree, "engine-patches", "--base-ref", "main", "--head-ref", "HEAD")
        assert record["status"] == "FAIL" and f"{RUNNER}:3" in _where(record)
        (tree / RUNNER).write_bytes(original)  # the working tree (default head) without it
        record = _one(tree, "engine-patches", "--base-ref", "main")
        assert record["status"] == "N/A"  # nothing changed against main: no key in scope
    finally:
        git(tree, "checkout", "-q", "-f", "main")
        git(tree, "branch", "-q", "-D", "mutant")


def test_waived_patch_passes_and_names_the_waiver(tree: Path) -> None:
    record = _one(tree, "engine-patches", "--config-key", "kimik3-fp4-mi355x-vllm-agentic-mtp")
    assert record["status"] == "PASS"
    assert any("waived by docs/waiver/2508.md" in row[1] for row in record["evidence"])


def test_incomplete_waiver_does_not_cover_the_patch(tree: Path) -> None:
    waiver = tree / "docs/waiver/2508.md"
    original = waiver.read_bytes()
    waiver.write_text(original.decode().replace("## Removal plan", "## Later"))
    try:
        record = _one(tree, "engine-patches", "--config-key", "kimik3-fp4-mi355x-vllm-agentic-mtp")
        assert record["status"] == "FAIL"
        assert ["docs/waiver/2508.md", "waiver lacks: removal plan"] in record["evidence"]
    finally:
        waiver.write_bytes(original)


def test_nextn_moe_in_an_inherited_recipe_block_fails(tree: Path) -> None:
    path = tree / RECIPE
    real = path.read_bytes()
    # The real file sets it in `base` (line 69); a clean baseline first, then the mutation.
    clean = real.decode().replace(f"      {NEXTN}: '1'\n", "")
    path.write_text(clean)
    try:
        assert _one(tree, "draft-as-shipped", "--config-key", RECIPE_KEY)["status"] == "PASS"
        _insert(path, 60, f'      {NEXTN}: "1"')  # inside base.backend.decode_environment
        record = _one(tree, "draft-as-shipped", "--config-key", RECIPE_KEY)
        assert record["status"] == "FAIL"
        row = next(r for r in record["evidence"] if r[0] == f"{RECIPE}:61")
        assert "in effect for zip_override_mtp_agentx_lowlat[0]" in row[1]
        tree_ = recipes.located(path.read_text(), RECIPE)
        eff = recipes.effective(tree_, RECIPE, "zip_override_mtp_agentx_hightpt[1]")
        leaf = next(x for x in eff.leaves if x.path.endswith(NEXTN))
        assert (leaf.path, leaf.line) == (f"backend.decode_environment.{NEXTN}", 61)
        path.write_text(clean)
        assert _one(tree, "draft-as-shipped", "--config-key", RECIPE_KEY)["status"] == "PASS"
    finally:
        path.write_bytes(real)


def test_all_keys_on_the_real_tree(tree: Path) -> None:
    results = {r.id: r for r in run(tree, all_keys=True)}
    assert results["arch-hacks"].status == "FAIL"
    assert any(
        e.where == "benchmarks/single_node/agentic/minimaxm3_fp4_mi355x_mtp.sh:223"
        for e in results["arch-hacks"].evidence
    )
    patches = [e.where for e in results["engine-patches"].evidence]
    assert "benchmarks/single_node/agentic/qwen3.5_fp8_h200_mtp.sh:133" in patches
    assert results["draft-as-shipped"].status == "FAIL"
    assert results["deprecated"].status == "FAIL"
    assert "glm5.1-fp8-b200-tilert" in {e.what for e in results["deprecated"].evidence}
    assert results["upstream-images"].status == "PASS"
    # No artifact, no verdict: these are never PASS without their inputs.
    for cid in ("owners", "checklist", "append-only", "pareto", "notes"):
        assert results[cid].status == "N/A", cid


def test_signoff_checklist(tree: Path, tmp_path: Path) -> None:
    template = (tree / "docs/PR_REVIEW_CHECKLIST.md").read_text()
    block = template.split("```", 2)[1]
    signed = block.replace("- [ ]", "- [x]").replace("FILL_IN_GITHUB_USERNAME", "chunfangamd")
    good = tmp_path / "good.md"
    good.write_text(signed)
    assert _one(tree, "checklist", "--signoff", str(good))["status"] == "PASS"
    stale = tmp_path / "stale.md"
    lines = signed.splitlines()
    stale.write_text("\n".join(line for line in lines if "append-only" not in line))
    record = _one(tree, "checklist", "--signoff", str(stale))
    assert record["status"] == "FAIL" and "append-only" in record["reason"]
    unsigned = tmp_path / "unsigned.md"
    unsigned.write_text(block.replace("- [ ]", "- [x]"))
    assert _one(tree, "checklist", "--signoff", str(unsigned))["status"] == "FAIL"


def test_owners_last_match_wins(tree: Path, tmp_path: Path) -> None:
    git(tree, "checkout", "-q", "-b", "owners")
    try:
        path = tree / "configs/amd-master.yaml"
        path.write_text(path.read_text() + "\n")
        git(tree, "commit", "-q", "-am", "touch amd master")
        signoff = tmp_path / "s.md"
        signoff.write_text("Signed: `chunfangamd`\n")
        record = _one(
            tree, "owners", "--base-ref", "main", "--head-ref", "HEAD", "--signoff", str(signoff)
        )
        assert record["status"] == "PASS"
        assert any(
            "@billishyahao" in row[1] and ".github/CODEOWNERS:4" in row[1]
            for row in record["evidence"]
        )
        signoff.write_text("Signed: `ankur-singh`\n")
        record = _one(
            tree, "owners", "--base-ref", "main", "--head-ref", "HEAD", "--signoff", str(signoff)
        )
        assert record["status"] == "FAIL" and "configs/amd-master.yaml" in record["reason"]
    finally:
        git(tree, "checkout", "-q", "-f", "main")
        git(tree, "branch", "-q", "-D", "owners")


def test_codeowners_patterns() -> None:
    assert _compile("*").match("a/b/c.py")
    assert _compile("configs/amd-master.yaml").match("configs/amd-master.yaml")
    assert not _compile("configs/amd-master.yaml").match("x/configs/amd-master.yaml")
    assert _compile("experimental/operatorx/").match("experimental/operatorx/a/b.py")
    assert _compile("*.md").match("docs/x.md") and not _compile("/*.md").match("docs/x.md")


def test_models_md_policy(inferencex_tree: Path) -> None:
    policy = parse_models((inferencex_tree / "MODELS.md").read_text())
    assert "kimik2.5" in policy.retired and "glm5.1" in policy.retired
    assert ("fixed-seq-len/8192/1024", 143) in policy.scenarios["minimaxm3"]
    assert ("bf16", 148) in policy.precisions["qwen3.5"]
    assert "dsv4" not in policy.retired
    # the A/B retirement table is "not yet enacted": the non-MTP dsv4 arm is not deprecated
    assert "dsv4" not in policy.nonspec


def test_template_items_are_the_current_checklist(inferencex_tree: Path) -> None:
    items = template_items((inferencex_tree / "docs/PR_REVIEW_CHECKLIST.md").read_text())
    assert len(items) == 15 and "latest version" in items[0][1]


def test_pareto_counts_frontier_points(tree: Path, tmp_path: Path) -> None:
    base = {
        "infmax_model_prefix": "dsr1",
        "hw": "mi355x",
        "framework": "sglang",
        "precision": "fp4",
        "spec_decoding": "none",
        "isl": 8192,
        "osl": 1024,
    }
    # 6 points on the frontier, 2 dominated
    for i, (intvty, tput) in enumerate(
        [(100, 10), (80, 20), (60, 30), (40, 40), (20, 50), (10, 60), (50, 5), (30, 1)]
    ):
        (tmp_path / f"agg_{i}.json").write_text(
            json.dumps({**base, "median_intvty": intvty, "tput_per_gpu": tput})
        )
    record = _one(tree, "pareto", "--results", str(tmp_path))
    assert record["status"] == "PASS"
    assert record["evidence"][0][1] == "6 frontier point(s) of 8"
    for i in range(2, 8):
        (tmp_path / f"agg_{i}.json").unlink()
    assert _one(tree, "pareto", "--results", str(tmp_path))["status"] == "WARN"


# ---- hostile repository content: a WARN or one line, never a hang or a traceback ----------


def test_huge_binary_and_symlinked_scripts_are_warnings(tree: Path) -> None:
    script = tree / SCRIPT
    original = script.read_bytes()
    try:
        script.write_bytes(b"#!/bin/bash\n" + b"x" * (5 * 1024 * 1024))
        record = _one(tree, "arch-hacks", "--config-key", KEY)
        assert record["status"] == "WARN" and any("cap" in row[1] for row in record["evidence"])
        script.write_bytes(b"#!/bin/bash\n\x00\x01binary")
        record = _one(tree, "engine-patches", "--config-key", KEY)
        assert record["status"] == "WARN" and any("binary" in r[1] for r in record["evidence"])
        script.unlink()
        os.symlink("/etc/passwd", script)
        record = _one(tree, "arch-hacks", "--config-key", KEY)
        assert record["status"] == "WARN"
        assert any("symlink out of the repository" in row[1] for row in record["evidence"])
    finally:
        script.unlink()
        script.write_bytes(original)


def _recipe_key(tree: Path, body: str) -> None:
    (tree / RECIPE).write_text(body)


@pytest.mark.parametrize(
    "body",
    [
        "base:\n  a: " + "[" * 5000 + "]" * 5000 + "\n",  # deep nesting
        "".join(f"b{i}: &a{i}\n  <<: *a{i - 1}\n  k{i}: 1\n" for i in range(1, 400)).replace(
            "<<: *a0\n", "x: 1\n"
        ),  # an inheritance chain 400 merges deep
        "a: &a [1,2,3,4,5,6,7,8,9]\n"
        + "".join(
            f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
            for p, c in zip("abcdefgh", "bcdefghi", strict=True)
        )
        + "base: {x: *i}\n",  # billion laughs
    ],
    ids=["nesting", "merge-chain", "alias-bomb"],
)
def test_hostile_recipes_are_one_line_warnings(tree: Path, body: str) -> None:
    path = tree / RECIPE
    original = path.read_bytes()
    try:
        path.write_text(body)
        record = _one(tree, "draft-as-shipped", "--config-key", RECIPE_KEY)
        assert record["status"] == "WARN"
        assert any(RECIPE in row[1] and "not resolved" in row[1] for row in record["evidence"])
    finally:
        path.write_bytes(original)


def test_source_loop_terminates(tree: Path) -> None:
    script = tree / SCRIPT
    original = _insert(tree / SCRIPT, 1, f'source "$(dirname "$0")/{Path(SCRIPT).name}"')
    helper = tree / "benchmarks/benchmark_lib.sh"
    lib = _insert(helper, 1, f"source {SCRIPT}")
    try:
        assert _one(tree, "arch-hacks", "--config-key", KEY)["status"] == "PASS"
    finally:
        script.write_bytes(original)
        helper.write_bytes(lib)


def test_unknown_key_and_bad_repo_are_one_line_errors(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(["review", "--repo", str(tree), "--config-key", "no-such-key"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-such-key" in err
    assert cli(["review", "--repo", str(tmp_path / "missing"), "--all-keys"]) == 2


def test_options_defaults_name_the_checklist_exceptions() -> None:
    assert Options().new_hardware == ("mi455x", "vr200", "rubin")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("hook", "check"),
    [("relpipe-review", "arch-hacks"), ("relpipe-changelog-required", "changelog-required")],
)
def test_pre_commit_hook_fails_a_staged_hf_override(
    tree: Path, tmp_path: Path, hook: str, check: str
) -> None:
    """Each review hook id through the real pre-commit client, on the staged change (a staged
    script change without a changelog entry fails changelog-required too)."""
    import importlib.util
    import subprocess
    import sys

    # The other hook's test builds the committed hook snapshot; one home for that recipe.
    spec = importlib.util.spec_from_file_location("test_precommit", HERE / "test_precommit.py")
    assert spec and spec.loader
    precommit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(precommit)
    hook_repo, sha = precommit._hook_repo(tmp_path)
    bench = tmp_path / "bench"
    shutil.copytree(tree, bench, symlinks=True)
    (bench / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {sha}\n    hooks:\n      - id: {hook}\n"
    )
    git(bench, "add", ".pre-commit-config.yaml")
    git(bench, "commit", "-q", "-m", "hook")
    _insert(bench / SCRIPT, 40, "EXTRA='--hf-overrides {}'")
    git(bench, "add", SCRIPT)
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "home"), PRE_COMMIT_COLOR="never")
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", hook],
        cwd=bench,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{SCRIPT}:41" in done.stdout and check in done.stdout


def _entry(key: str, append_only: bool) -> str:
    flag = "  append-only: true\n" if append_only else ""
    return (
        f"\n- config-keys:\n    - {key}\n  scenario-type:\n    - fixed-seq-len\n"
        f'  description:\n    - "More points"\n'
        f"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/9999\n{flag}"
    )


def test_append_only_keeps_every_existing_point(tree: Path) -> None:
    git(tree, "checkout", "-q", "-b", "append")
    master = tree / "configs/amd-master.yaml"
    changelog = tree / "perf-changelog.yaml"
    original = master.read_text()
    line = "      - { tp: 8, conc-start: 4, conc-end: 64 }\n"
    assert original.count(line) >= 1
    try:
        # conc 128 added to the tp8 arm of the first key: every old point stays.
        master.write_text(original.replace(line, line.replace("64 }", "128 }"), 1))
        changelog.write_text(changelog.read_text() + _entry(KEY, True))
        record = _one(tree, "append-only", "--base-ref", "main")
        assert record["status"] == "PASS", record
        assert any(KEY in row[1] and "added" in row[1] for row in record["evidence"])
        # tp8 -> tp4 drops the existing tp8 points: not append-only.
        master.write_text(original.replace(line, line.replace("tp: 8", "tp: 4"), 1))
        record = _one(tree, "append-only", "--base-ref", "main")
        assert record["status"] == "FAIL" and "existing point" in record["reason"]
        # mixing a regular entry in is refused
        master.write_text(original.replace(line, line.replace("64 }", "128 }"), 1))
        changelog.write_text(changelog.read_text() + _entry(KEY, False))
        record = _one(tree, "append-only", "--base-ref", "main")
        assert record["status"] == "FAIL" and "mixed" in record["reason"]
    finally:
        git(tree, "checkout", "-q", "-f", "main")
        git(tree, "branch", "-q", "-D", "append")


def test_vendor_image_on_established_hardware_fails(tree: Path) -> None:
    master = tree / "configs/amd-master.yaml"
    original = master.read_text()
    assert _one(tree, "upstream-images", "--config-key", KEY)["status"] == "PASS"
    try:
        master.write_text(
            original.replace("lmsysorg/sglang:v0.5.12-rocm700-mi35x", "rocm/sgl-dev:v0.5.12", 1)
        )
        record = _one(tree, "upstream-images", "--config-key", KEY)
        assert record["status"] == "FAIL" and "rocm/sgl-dev" in record["reason"]
        assert record["evidence"][0][0] == "configs/amd-master.yaml:2"
        record = _one(tree, "upstream-images", "--config-key", KEY, "--new-hardware", "mi355x")
        assert record["status"] == "PASS"
    finally:
        master.write_text(original)
