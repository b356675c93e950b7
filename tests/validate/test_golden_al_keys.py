"""Golden AL scoped to config keys, on the real InferenceX tree (C9, `relpipe review`).

The draft length K comes from where InferenceX states it: the srt-slurm recipe named by
CONFIG_FILE and the single-node launch scripts (variables resolved, comments ignored).
"""

from __future__ import annotations

import shutil
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

from relpipe.changelog.configs.load import load_masters
from relpipe.core.status import FAIL, NA, PASS, WARN
from relpipe.validate.errors import ValidateError
from relpipe.validate.golden_al import KeySetting, check

KIMI_KEY = "kimik3-fp4-gb200-dynamo-vllm-agentic-dspark-mooncake-tp8pp2"
C16 = (
    "benchmarks/multi_node/srt-slurm-recipes/vllm/kimi-k3/agentic/"
    "agg-gb200-tp8pp2-mooncake-c16-agentic.yaml"
)
ATOM_DSV4 = "benchmarks/single_node/agentic/dsv4_fp4_mi355x_atom_mtp.sh"


@pytest.fixture(scope="module")
def all_rows(inferencex_tree: Path) -> list[KeySetting]:
    keys = list(load_masters(sorted((inferencex_tree / "configs").glob("*-master.yaml"))).configs)
    return check(inferencex_tree, keys)


def test_every_setting_whose_k_is_stated_is_checked(all_rows: list[KeySetting]) -> None:
    verdicts = Counter(r.verdict for r in all_rows)
    assert verdicts[PASS] >= 140 and verdicts[FAIL] >= 1
    # Nothing is left as "cannot check" on the real tree but the one key whose AMD multinode
    # wrapper derives the AL from K in a shell `case` table (not resolved; reported, not passed)
    # and the two whose scripts write a synthetic setting whose value is not resolved (the same
    # rows `relpipe review` and a release's C9 report: one function judges them).
    warns = {r.key: r.reason for r in all_rows if r.verdict == WARN}
    assert set(warns) == {
        "dsv4-fp4-mi355x-sglang-disagg-agentic-hicache-mtp",
        "minimaxm3-fp4-b200-vllm-agentic-mtp",
        "minimaxm3-fp4-b300-vllm-agentic-mtp",
    }
    assert (
        "wrapper's settings are not resolved"
        in warns["dsv4-fp4-mi355x-sglang-disagg-agentic-hicache-mtp"]
    )
    assert (
        "a synthetic setting is written but its value is not resolved"
        in warns["minimaxm3-fp4-b200-vllm-agentic-mtp"]
    )
    checked = [r for r in all_rows if r.verdict in (PASS, FAIL)]
    assert all(r.k is not None and r.k_source and r.golden is not None for r in checked)
    assert {r.engine for r in checked} >= {"ATOM", "SGLang", "vLLM", "TensorRT-LLM"}
    # N/A only where nothing is forced (real drafting) or InferenceX resolves it at run time.
    assert all(r.written is None for r in all_rows if r.verdict == NA)


def test_the_kimi_k3_recipes_take_their_sample_method_curve(all_rows: list[KeySetting]) -> None:
    # The recipe runs DSpark with `draft_sample_method: probabilistic`: its committed curve is
    # the probabilistic/block one (K=7: 3.84), not the plain one (3.78).
    [row] = [r for r in all_rows if r.key == KIMI_KEY and r.line == 8409]
    assert (row.path, row.engine, row.k, row.k_source) == (
        "configs/nvidia-master.yaml",
        "vLLM",
        7,
        f"{C16}:104",
    )
    assert (row.configured, row.golden, row.golden_file, row.verdict) == (
        Decimal("3.84"),
        Decimal("3.84"),
        "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method",
        PASS,
    )
    assert row.to_json()["source"] == "configs/nvidia-master.yaml:8409"
    k2 = [r for r in all_rows if r.key.startswith("kimik3") and r.k == 2 and r.verdict == PASS]
    assert k2 and {r.golden for r in k2} == {Decimal("2.51")}


def test_the_only_failing_keys_are_the_dsv4_gb200_vllm_mtp_pair(
    all_rows: list[KeySetting],
) -> None:
    failing = [r for r in all_rows if r.verdict == FAIL]
    assert {r.key for r in failing} == {
        "dsv4-fp4-gb200-dynamo-vllm-agentic-mtp-agg",
        "dsv4-fp4-gb200-dynamo-vllm-agentic-mtp-disagg",
    }
    assert {(r.configured, r.k, r.golden) for r in failing} == {
        (Decimal("2.49"), 2, Decimal("2.27"))
    }


def test_atom_settings_resolve_variables_and_pass(inferencex_tree: Path) -> None:
    keys = [
        "kimik3-fp4-mi355x-atom-agentic-mtp",
        "dsv4-fp4-mi355x-atom-agentic-mtp",
        "glm5.2-fp4-mi355x-atom-agentic-mtp",
    ]
    rows = check(inferencex_tree, keys)
    got = {(r.key, r.line, r.k, str(r.configured), r.verdict) for r in rows}
    assert got == {
        # if [ "$CONC" = 1 ]: SPEC_DECODE_AL=3.75 / NUM_SPEC_TOKENS=6, else 2.51 / 2
        ("kimik3-fp4-mi355x-atom-agentic-mtp", 201, 6, "3.75", PASS),
        ("kimik3-fp4-mi355x-atom-agentic-mtp", 204, 2, "2.51", PASS),
        # --spec-decode-acceptance-length "$SPEC_DECODE_AL"
        ("dsv4-fp4-mi355x-atom-agentic-mtp", 89, 3, "2.49", PASS),
        # SIMULATE_ACC_LEN=2.99 feeding --spec-decode-acceptance-rate via awk
        ("glm5.2-fp4-mi355x-atom-agentic-mtp", 137, 3, "2.99", PASS),
    }


def test_other_keys_never_change_the_verdict(inferencex_tree: Path, tmp_path: Path) -> None:
    repo = tmp_path / "tree"
    shutil.copytree(inferencex_tree, repo, ignore=shutil.ignore_patterns(".git"))
    key = "dsv4-fp4-mi355x-atom-agentic-mtp"
    before = check(repo, [key])
    # Break another key's recipe and another key's script: the ATOM key's rows are unchanged.
    (repo / C16).write_text("SGLANG_SIMULATE_ACC_LEN: '9.99'\n")
    script = repo / "benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh"
    script.write_text(script.read_text().replace("SIMULATE_ACC_LEN=2.99", "SIMULATE_ACC_LEN=1.5"))
    assert check(repo, [key]) == before
    assert {r.verdict for r in before} == {PASS}


def test_a_mutated_atom_script_fails_at_its_line(inferencex_tree: Path, tmp_path: Path) -> None:
    repo = tmp_path / "tree"
    shutil.copytree(inferencex_tree, repo, ignore=shutil.ignore_patterns(".git"))
    script = repo / ATOM_DSV4
    text = script.read_text()
    # A commented-out value is not a setting; the real one, changed, is a FAIL at its line.
    mutated = text.replace(
        "SPEC_DECODE_AL=2.49\n", "SPEC_DECODE_AL=2.50\n# SPEC_DECODE_AL=2.49\n", 1
    )
    assert mutated != text
    script.write_text(mutated)
    [row] = check(repo, ["dsv4-fp4-mi355x-atom-agentic-mtp"])
    assert (row.path, row.line, row.verdict, row.golden) == (ATOM_DSV4, 89, FAIL, Decimal("2.49"))
    assert row.finding().code == "golden-fail" and f"{ATOM_DSV4}:89" in str(row.finding())


def test_rate_spelling_and_defaults(inferencex_tree: Path, tmp_path: Path) -> None:
    """ATOM's rate spelling is (AL - 1) / K; `${K:-3}` resolves to its default."""
    repo = tmp_path / "repo"
    shutil.copytree(inferencex_tree / "golden_al_distribution", repo / "golden_al_distribution")
    (repo / "configs").mkdir()
    (repo / "configs" / "amd-master.yaml").write_text(
        "glm5.2-fp4-mi355x-atom-agentic-mtp:\n"
        "  image: rocm/atom:x\n  model: zai/GLM\n  model-prefix: glm5.2\n"
        "  runner: cluster:mi355x-amds\n  precision: fp4\n  framework: atom\n"
        "  scenarios:\n    agentic-coding:\n    - search-space:\n"
        "      - {tp: 8, kv-offloading: none, spec-decoding: mtp, conc-list: [1]}\n"
    )
    script = repo / "benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh"
    script.parent.mkdir(parents=True)
    script.write_text(
        'NUM_SPEC_TOKENS="${NUM_SPEC_TOKENS:-3}"\n'
        "# --spec-decode-acceptance-rate 0.9999   (a comment, not a setting)\n"
        'ARGS=(--num-speculative-tokens "$NUM_SPEC_TOKENS" --spec-decode-acceptance-rate 0.6633)\n'
    )
    [row] = check(repo, ["glm5.2-fp4-mi355x-atom-agentic-mtp"])
    assert (row.line, row.k, row.k_source, row.configured, row.verdict) == (
        3,
        3,
        "benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh:1",
        Decimal("2.99"),
        PASS,
    )
    with pytest.raises(ValidateError, match="config key 'nope' is not in"):
        check(repo, ["nope"])
