"""The points plan equals InferenceX's own sweep generator, point for point, on all real keys.

The oracle is `utils/matrix_logic/generate_sweep_configs.py` from the real tree, run once (one
process for both real masters plus a small synthetic master with the edge cases) by
`tests/oracles/sweep_points.py` with InferenceX's own dependencies. Each generated matrix
entry is flattened to one point per concurrency and projected onto the identifying fields;
the plan must give the same multiset for every key.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import corpus
import pytest
import yaml

from relpipe.changelog.configs import points, semdiff
from relpipe.changelog.configs.load import load_masters
from relpipe.changelog.errors import ChangelogError

DRIVER = Path(__file__).resolve().parent.parent / "oracles" / "sweep_points.py"
SYNTHETIC = "zz-relpipe-edge-cases"
IDENTITY = (
    "scenario-type",
    "isl",
    "osl",
    "tp",
    "pp",
    "dcp-size",
    "pcp-size",
    "ep",
    "dp-attn",
    "spec-decoding",
    "kv-offloading",
    "kv-offload-backend",
    "prefill",
    "decode",
)


def _synthetic(tree: Path) -> dict[str, Any]:
    """A real single-node key with the arms the old counts got wrong."""
    doc = yaml.safe_load((tree / "configs" / "amd-master.yaml").read_text())
    cfg = doc["dsr1-fp4-mi355x-sglang"]
    space = [
        {"tp": 4, "conc-start": 4, "conc-end": 48},  # 4, 8, 16, 32, 48
        {"tp": 4, "ep": 4, "conc-list": [8, 8, 16]},  # repeated value: two runs
        {"tp": 4, "dp-attn": True, "conc-list": [8]},  # differs only in dp-attn
    ]
    cfg["scenarios"] = {
        "fixed-seq-len": [
            {"isl": 1024, "osl": 1024, "search-space": space},
            {"isl": 8192, "osl": 1024, "search-space": space},
        ]
    }
    return {SYNTHETIC: cfg}


@pytest.fixture(scope="module")
def generated(inferencex_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    extra = tmp_path_factory.mktemp("points") / "edge-master.yaml"
    extra.write_text(yaml.safe_dump(_synthetic(inferencex_tree)))
    masters = sorted(str(p) for p in (inferencex_tree / "configs").glob("*-master.yaml"))
    done = corpus.run_oracle(
        str(DRIVER), "configs/runners.yaml", *masters, str(extra), cwd=inferencex_tree
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _oracle_points(entries: list[dict[str, Any]]) -> Counter[str]:
    out: Counter[str] = Counter()
    for entry in entries:
        fields = {k: entry[k] for k in IDENTITY if k in entry}
        fields.setdefault("scenario-type", "fixed-seq-len")  # fixed-seq-len entries omit it
        concs = entry["conc"] if isinstance(entry["conc"], list) else [entry["conc"]]
        for conc in concs:
            out[json.dumps({**fields, "conc": conc}, sort_keys=True, separators=(",", ":"))] += 1
    return out


def test_plan_equals_the_generator_on_every_real_key(
    generated: dict[str, Any], inferencex_tree: Path
) -> None:
    masters = sorted((inferencex_tree / "configs").glob("*-master.yaml"))
    configs = load_masters(masters).configs
    plan = points.plan_configs(configs)
    assert len(plan) == 208 and set(plan) <= set(generated)
    wrong = [
        key
        for key, planned in plan.items()
        if Counter(p.identity() for p in planned) != _oracle_points(generated[key])
    ]
    assert wrong == []
    # The notes' count (semdiff) is the same plan, master by master.
    for master in masters:
        counts = semdiff.points_plan(master.read_text())
        assert counts == {k: len(plan[k]) for k in counts}
    # Names are unique within a key (qualification keys eval units by them).
    assert all(len({p.name for p in v}) == len(v) for v in plan.values())


def test_edge_cases_match_the_generator(generated: dict[str, Any], inferencex_tree: Path) -> None:
    cfg = _synthetic(inferencex_tree)[SYNTHETIC]
    planned = points.plan_key(SYNTHETIC, cfg)
    assert Counter(p.identity() for p in planned) == _oracle_points(generated[SYNTHETIC])
    names = [p.name for p in planned][:9]
    assert names == [
        "fixed-seq-len/1k1k/tp4/conc4",
        "fixed-seq-len/1k1k/tp4/conc8",
        "fixed-seq-len/1k1k/tp4/conc16",
        "fixed-seq-len/1k1k/tp4/conc32",
        "fixed-seq-len/1k1k/tp4/conc48",  # the last step is clamped to conc-end
        "fixed-seq-len/1k1k/tp4-ep4/conc8",
        "fixed-seq-len/1k1k/tp4-ep4/conc8#2",  # a repeated conc-list value runs twice
        "fixed-seq-len/1k1k/tp4-ep4/conc16",
        "fixed-seq-len/1k1k/tp4-dpa/conc8",
    ]
    assert len(planned) == 2 * 9  # 1k1k and 8k1k are separate arms


@pytest.mark.parametrize(
    ("arm", "message"),
    [
        ({"tp": 4}, "conc-start"),
        ({"tp": 4, "conc-start": 8, "conc-end": 4}, "above conc-end"),
        ({"tp": 4, "conc-list": []}, "non-empty list"),
        ({"tp": 4, "conc-list": [4], "conc-end": 8}, "not both"),
        ({"tp": True, "conc-list": [4]}, "tp must be an integer"),
        ({"tp": 4, "conc-list": ["4"]}, "conc-list value"),
    ],
)
def test_malformed_arms_are_one_line_errors(arm: dict[str, Any], message: str) -> None:
    cfg = {"scenarios": {"fixed-seq-len": [{"isl": 1024, "osl": 1024, "search-space": [arm]}]}}
    with pytest.raises(ChangelogError, match=message):
        points.plan_key("k", cfg)


def test_a_hostile_range_is_bounded() -> None:
    cfg = {
        "scenarios": {
            "fixed-seq-len": [
                {
                    "isl": 1,
                    "osl": 1,
                    "search-space": [{"tp": 1, "conc-start": 1, "conc-end": 10**300}],
                }
            ]
        }
    }
    assert len(points.plan_key("k", cfg)) < 1100  # doubling: about log2(10**300) points


def _row_multiset(rows: list[dict[str, Any]]) -> Counter[str]:
    """Rows without `exp-name`, one per concurrency (multinode rows carry a list)."""
    out: Counter[str] = Counter()
    for row in rows:
        concs = row["conc"] if isinstance(row["conc"], list) else [row["conc"]]
        rest = {k: v for k, v in row.items() if k not in ("conc", "exp-name")}
        for conc in concs:
            out[json.dumps({**rest, "conc": conc}, sort_keys=True)] += 1
    return out


def test_matrix_rows_equal_the_generator_rows_on_every_real_key(
    generated: dict[str, Any], inferencex_tree: Path
) -> None:
    """The whole rows (every field but exp-name) that append-only entries are judged on."""
    masters = sorted((inferencex_tree / "configs").glob("*-master.yaml"))
    configs = load_masters(masters).configs
    runners = yaml.safe_load((inferencex_tree / "configs" / "runners.yaml").read_text())
    wrong = [
        key
        for key, cfg in configs.items()
        if _row_multiset(points.matrix_rows(key, cfg, runners=runners))
        != _row_multiset(generated[key])
    ]
    assert wrong == []
    dram = [
        key
        for key, cfg in configs.items()
        if any(r.get("total-cpu-dram-gb") for r in points.matrix_rows(key, cfg, runners=runners))
    ]
    assert dram  # the DRAM offload budget is exercised by real keys
    fixed = points.matrix_rows(SYNTHETIC, _synthetic(inferencex_tree)[SYNTHETIC])
    assert len(fixed) == 18 and all("scenario-type" not in r for r in fixed)
    assert (
        points.matrix_rows(
            SYNTHETIC, _synthetic(inferencex_tree)[SYNTHETIC], scenarios=("agentic-coding",)
        )
        == []
    )  # a scenario filter the key has no items for generates no rows
