"""Semantic diff of master configs: the real ATOM image-bump PR, reproduced on a real corpus key."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from relpipe.changelog.configs import semdiff
from relpipe.changelog.configs.semdiff import (
    ConcurrencyChange,
    ConfigDiff,
    EnvChange,
    FieldChange,
    ImageChange,
    KeyChange,
    KeyPoints,
    VersionChange,
)
from relpipe.changelog.errors import ChangelogError
from relpipe.changelog.notes import ReleaseFacts, render
from relpipe.validate import notes_check

BASE_KEY = "minimaxm3-fp4-mi355x-vllm-agentic-mtp"  # the corpus has no MiniMax-M3 ATOM key yet
KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"
OLD_IMAGE = "rocm/atom-dev:nightly_202609281543"
NEW_IMAGE = "rocm/atom-dev:nightly_202610070333"
MONO_POINTS = [15, 20, 24, 28]
ARM_TP4 = "tp=4, kv-offloading=none, spec-decoding=mtp"
ARM_TP2 = "tp=2, kv-offloading=none, spec-decoding=mtp"
ARM_LMCACHE = "tp=4, kv-offloading=dram, kv-offload-backend=lmcache, spec-decoding=mtp"


def _revisions(corpus_dir: Path) -> tuple[str, str]:
    """Old and new text of the key the way the real PR changed it, derived from the corpus key."""
    doc = yaml.load((corpus_dir / "amd-master.yaml").read_text(), Loader=yaml.CSafeLoader)
    base: dict[str, Any] = doc[BASE_KEY]
    assert [
        c
        for c in base["scenarios"]["agentic-coding"][0]["search-space"][0]["conc-list"]
        if c in MONO_POINTS
    ] == MONO_POINTS, "corpus key changed: pick other points"
    old = copy.deepcopy(base)
    old.update(framework="atom", image=OLD_IMAGE)
    arms = old["scenarios"]["agentic-coding"][0]["search-space"]
    mono = dict(arms[0], **{"conc-list": MONO_POINTS, "env": {"ATOM_MONO_ENABLE": "0"}})
    arms[0]["conc-list"] = [c for c in arms[0]["conc-list"] if c not in MONO_POINTS]
    arms.insert(1, mono)  # the same arm shape, split off by its environment
    new = copy.deepcopy(base)
    new.update(framework="atom", image=NEW_IMAGE)
    new_arms = new["scenarios"]["agentic-coding"][0]["search-space"]
    new_arms[1]["conc-list"] = [*new_arms[1]["conc-list"], 8]
    new_arms[2]["kv-offload-backend"]["version"] = "0.5.6.dev139+gf22dec28"
    return (
        yaml.safe_dump({KEY: old}, sort_keys=False),
        yaml.safe_dump({KEY: new}, sort_keys=False),
    )


EXPECTED = (
    ImageChange(key=KEY, old=OLD_IMAGE, new=NEW_IMAGE),
    EnvChange(
        key=KEY,
        scenario="agentic-coding",
        arm=ARM_TP4,
        name="ATOM_MONO_ENABLE",
        old="0",
        new=None,
        concurrency=tuple(MONO_POINTS),
    ),
    ConcurrencyChange(key=KEY, scenario="agentic-coding", arm=ARM_TP2, added=(8,), removed=()),
    VersionChange(
        key=KEY,
        scenario="agentic-coding",
        arm=ARM_LMCACHE,
        field="kv-offload-backend",
        name="lmcache",
        old="0.5.3",
        new="0.5.6.dev139+gf22dec28",
    ),
)


def test_the_real_pr_gives_exactly_its_changes(corpus_dir: Path) -> None:
    old, new = _revisions(corpus_dir)
    result = semdiff.diff(old, new)
    assert result.changes == EXPECTED
    assert result.points == (KeyPoints(KEY, 17, 18),)
    assert ConfigDiff.from_json(json.loads(json.dumps(result.to_json()))) == result


def test_the_real_pr_in_both_languages(corpus_dir: Path) -> None:
    old, new = _revisions(corpus_dir)
    result = semdiff.diff(old, new)
    example = json.loads(
        resources.files("relpipe.changelog.notes").joinpath("example.json").read_text()
    )
    # The shipped example facts carry exactly what the diff computes.
    assert example["config_changes"] == result.to_json()["changes"]
    facts = ReleaseFacts.from_json(
        dict(
            example,
            config_changes=result.to_json()["changes"],
            points_plan=result.to_json()["points"],
        )
    )
    en, zh = render(facts, "en"), render(facts, "zh")
    k = f"`{KEY}`"
    assert (
        f"- {k} (`agentic-coding; {ARM_TP4}`): "
        "`ATOM_MONO_ENABLE=0` removed at concurrency 15, 20, 24, 28" in en
    )
    assert f"- {k} (`agentic-coding; {ARM_TP2}`): concurrency 8 added" in en
    assert f"- {k}: image `{OLD_IMAGE}` → `{NEW_IMAGE}`" in en
    assert (
        f"- {k} (`agentic-coding; {ARM_LMCACHE}`): LMCache version `0.5.3` → "
        "`0.5.6.dev139+gf22dec28`"
    ) in en
    assert f"- {k}: throughput points 17 → 18" in en
    assert (
        f"- {k}（`agentic-coding; {ARM_TP4}`）：在并发 15、20、24、28 处移除 `ATOM_MONO_ENABLE=0`"
        in zh
    )
    assert f"- {k}（`agentic-coding; {ARM_TP2}`）：新增并发 8" in zh
    assert f"- {k}：镜像 `{OLD_IMAGE}` → `{NEW_IMAGE}`" in zh
    assert (
        f"- {k}（`agentic-coding; {ARM_LMCACHE}`）：LMCache 版本 `0.5.3` → `0.5.6.dev139+gf22dec28`"
        in zh
    )
    assert f"- {k}：吞吐测试点 17 → 18" in zh
    assert notes_check.check(render(facts, "both"), facts) == []


@pytest.mark.parametrize("name", ["amd-master.yaml", "nvidia-master.yaml"])
def test_a_real_master_against_itself_has_no_changes(corpus_dir: Path, name: str) -> None:
    text = (corpus_dir / name).read_text()
    assert semdiff.diff(text, text) == ConfigDiff((), ())


def test_points_plan_expands_conc_ranges_by_doubling(corpus_dir: Path) -> None:
    text = (corpus_dir / "amd-master.yaml").read_text()
    # tp4 and tp8 arms, 4..64 each: 4, 8, 16, 32, 64
    assert semdiff.points_plan(text, ["dsr1-fp4-mi355x-sglang"]) == {"dsr1-fp4-mi355x-sglang": 10}
    # conc-list arms: [1, 4] + [8, 10]
    assert semdiff.points_plan(text, ["kimik3-fp4-mi355x-atom-agentic-mtp"]) == {
        "kimik3-fp4-mi355x-atom-agentic-mtp": 4
    }
    with pytest.raises(ChangelogError, match="config keys not in config: no-such-key"):
        semdiff.points_plan(text, ["no-such-key"])


def test_disagg_settings_are_per_role_env_changes(corpus_dir: Path) -> None:
    text = (corpus_dir / "amd-master.yaml").read_text()
    key = "dsr1-fp4-mi355x-sglang-disagg-mtp"
    doc = yaml.load(text, Loader=yaml.CSafeLoader)
    arm = doc[key]["scenarios"]["fixed-seq-len"][0]["search-space"][0]
    assert arm["decode"]["additional-settings"] == ["DECODE_NODES=1", "DECODE_MTP_SIZE=3"]
    arm["decode"]["additional-settings"] = ["DECODE_NODES=1", "DECODE_MTP_SIZE=2"]
    arm["decode"]["additional-settings"].append("SGLANG_SIMULATE_ACC_LEN=2.49")
    changes = semdiff.diff(text, yaml.safe_dump(doc, sort_keys=False)).changes
    assert [
        (
            type(c).__name__,
            getattr(c, "name", None),
            getattr(c, "old", None),
            getattr(c, "new", None),
            getattr(c, "concurrency", None),
        )
        for c in changes
    ] == [
        ("EnvChange", "decode.DECODE_MTP_SIZE", "3", "2", (1, 2, 4, 8)),
        ("EnvChange", "decode.SGLANG_SIMULATE_ACC_LEN", None, "2.49", (1, 2, 4, 8)),
    ]


def test_key_and_field_changes() -> None:
    old = (
        "a-fp8-x:\n  image: r/x:1\n  model: m\n  scenarios:\n    fixed-seq-len:\n"
        "    - {isl: 1024, osl: 1024, search-space: [{tp: 1, conc-list: [1]}]}\n"
    )
    new = old.replace("model: m", "model: n") + "b-fp8-x:\n  image: r/y:1\n  scenarios: {}\n"
    result = semdiff.diff(old, new)
    assert result.changes == (
        FieldChange(key="a-fp8-x", path="model", old="m", new="n"),
        KeyChange("b-fp8-x", "added"),
    )
    assert result.points == (KeyPoints("a-fp8-x", 1, 1), KeyPoints("b-fp8-x", None, 0))


def test_recipe_files_get_a_leaf_path_diff() -> None:
    old = "engine:\n  args: {max-num-seqs: 8}\nenv:\n  ATOM_MONO_ENABLE: '0'\n"
    new = "engine:\n  args: {max-num-seqs: 16}\nenv: {}\n"
    assert semdiff.diff(old, new).changes == (
        FieldChange(key="engine.args.max-num-seqs", path="", old="8", new="16"),
        FieldChange(key="env.ATOM_MONO_ENABLE", path="", old="0", new=None),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\na: 2\n", "line 2: duplicate key `a`"),
        ("a: &x [1]\nb: *x\n", "line 2: YAML aliases are not allowed"),
        ("a: 1\x00\n", "contains a NUL byte"),
        ("a: [1\n", "invalid YAML"),
        (
            "k-fp8-x:\n  scenarios:\n    s:\n    - search-space:\n"
            "      - {tp: 1, conc-start: 8, conc-end: 4}\n",
            "conc-start 8 is above conc-end 4",
        ),
    ],
)
def test_untrusted_yaml_fails_with_one_line(text: str, message: str) -> None:
    with pytest.raises(ChangelogError, match=message) as info:
        semdiff.diff(text, text)
    assert "\n" not in str(info.value)


@settings(max_examples=30, deadline=None)
@given(
    old=st.dictionaries(st.integers(1, 64), st.booleans(), min_size=1, max_size=8),
    new=st.dictionaries(st.integers(1, 64), st.booleans(), min_size=1, max_size=8),
)
def test_points_and_per_point_env_are_diffed_exactly(
    old: dict[int, bool], new: dict[int, bool]
) -> None:
    """Each point may carry ATOM_MONO_ENABLE=0 (arms split by env, as the real configs do)."""

    def master(points: dict[int, bool]) -> str:
        arms = [
            {"tp": 4, "conc-list": sorted(c for c, mono in points.items() if mono == flag)}
            | ({"env": {"ATOM_MONO_ENABLE": "0"}} if flag else {})
            for flag in (False, True)
        ]
        arms = [a for a in arms if a["conc-list"]]
        cfg = {"image": "r/x:1", "scenarios": {"agentic-coding": [{"search-space": arms}]}}
        return yaml.safe_dump({"k-fp4-x": cfg})

    result = semdiff.diff(master(old), master(new))
    added = tuple(sorted(set(new) - set(old)))
    removed = tuple(sorted(set(old) - set(new)))
    both = sorted(set(old) & set(new))
    expected: list[semdiff.Change] = []
    if added or removed:
        expected.append(
            ConcurrencyChange(
                key="k-fp4-x", scenario="agentic-coding", arm="tp=4", added=added, removed=removed
            )
        )
    for was, now in ((True, False), (False, True)):
        concs = tuple(c for c in both if old[c] == was and new[c] == now)
        if concs:
            expected.append(
                EnvChange(
                    key="k-fp4-x",
                    scenario="agentic-coding",
                    arm="tp=4",
                    name="ATOM_MONO_ENABLE",
                    old="0" if was else None,
                    new="0" if now else None,
                    concurrency=concs,
                )
            )
    assert sorted(result.changes, key=repr) == sorted(expected, key=repr)
    assert result.points == ((KeyPoints("k-fp4-x", len(old), len(new)),) if expected else ())
