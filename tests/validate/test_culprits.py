"""Culprits and key-scoped precision relevance on ATOM's real history: the commits between the
last good and the first bad run ranked for the series' model; C5 narrowed to the key's path."""

from __future__ import annotations

from pathlib import Path

from relpipe.validate.precision import culprits, keypath

SEED_KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"
# ATOM's May dashboard: Qwen3.5-397B MTP acceptance 0.847 at GOOD, nothing accepted from BAD on,
# both runs on rocm/atom-dev:nightly_202605181640
GOOD, BAD = "6619cc7d33e3bb1f5a8f2f9966b2c4cb3a20e494", "0bb75144e859529514ce2b0d7243944fca44ec95"


def test_key_config_reads_config_keys_and_dashboard_series() -> None:
    assert keypath.key_config(SEED_KEY) == keypath.KeyConfig(
        model="minimaxm3", precision="fp4", spec_decode="mtp"
    )
    assert keypath.key_config("ATOM::Qwen3.5-397B-A17B-FP8 MTP3") == keypath.KeyConfig(
        model="Qwen3.5-397B-A17B", precision="fp8", spec_decode="mtp"
    )
    assert keypath.key_config("ATOM::DeepSeek-V4-Pro DSpark").spec_decode == "dspark"


def test_the_seed_keys_path_is_its_model_its_draft_and_what_they_import(atom_repo: Path) -> None:
    path = keypath.resolve(atom_repo, "HEAD", keypath.key_config(SEED_KEY))
    assert "atom/models/minimax_m3.py" in path.models
    assert "atom/spec_decode/eagle_proposer.py" in path.models  # MTP drafts through it
    for on in ("atom/model_ops/linear.py", "atom/model_ops/moe.py", "atom/quant_spec.py"):
        assert path.on_path(on), on
    assert path.why("atom/model_engine/model_runner.py") == "an engine-wide switch"
    for off in (
        "atom/models/deepseek_v4.py",  # another model
        "atom/model_ops/attention_mla.py",  # MLA: the model imports MHA only
        "atom/plugin/vllm/model_wrapper.py",  # another engine's plugin
        "atom/spec_decode/dspark_proposer.py",  # another spec-decode method
        "tests/test_mxfp4_moe_has_bias.py",
        "docs/README.md",
    ):
        assert path.why(off) == "elsewhere", off


def test_the_may_collapse_names_the_one_commit_between_its_runs(atom_repo: Path) -> None:
    found = culprits.find(atom_repo, GOOD, BAD, series="ATOM::Qwen3.5-397B-A17B-FP8 MTP")
    assert found.reason == "" and [c.sha for c in found.culprits] == [BAD]
    (only,) = found.culprits
    assert only.pr == 817 and "MTP-K skeleton" in only.subject
    # its change to the EAGLE proposer MTP drafts through is on Qwen3.5 MTP's path
    assert "draft-model" in only.on_path and "atom/spec_decode/eagle.py" in only.files
    assert "atom/models/deepseek_v4.py" not in only.files  # changed too, but another model's


def test_culprits_rank_commits_on_the_models_path_first(atom_repo: Path) -> None:
    # a 5-commit window of ATOM's history: its changes on minimax_m3's path rank first
    found = culprits.find(atom_repo, "2c658f95", "6c4bbba3", series=SEED_KEY)
    ranks = [bool(c.on_path) for c in found.culprits]
    assert ranks == sorted(ranks, reverse=True) and ranks[0]
    assert found.culprits[-1].on_path == ()


def test_unknown_commits_are_a_reason_not_a_crash(atom_repo: Path) -> None:
    found = culprits.find(atom_repo, "f" * 40, BAD, series=SEED_KEY)
    assert found.culprits == () and found.reason
    assert culprits.find(atom_repo, None, BAD, series=SEED_KEY).reason.startswith("an engine")


def test_key_scoped_c5_on_atoms_last_100_commits(atom_repo: Path) -> None:
    """The issue's measurement: every 5-commit window of ATOM's last 100 commits has a
    precision-relevant file (20 of 20 WARN); scoped to the seed's key, 17 still WARN, each on a
    file of its path (below), and 3 windows touch only other models and engines."""
    found = keypath.windows(atom_repo, keypath.key_config(SEED_KEY))
    assert len(found) == 20
    assert sum(w.warned_before for w in found) == 20
    assert sum(w.warns for w in found) == 17
    path = keypath.resolve(atom_repo, "HEAD", keypath.key_config(SEED_KEY))
    for w in found:
        assert all(path.on_path(p) or p in w.on_path for p in w.on_path)
        assert set(w.on_path) <= set(w.relevant)
    quiet = [w for w in found if not w.warns]
    assert all(not any(p.startswith("atom/models/minimax") for p in w.relevant) for w in quiet)
