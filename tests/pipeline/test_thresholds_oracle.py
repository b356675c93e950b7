"""Eval thresholds as InferenceX reads them: the exact model-prefix, else the default.

The oracle is `utils/evals/validate_scores.py` from the real tree (`resolve_threshold`), run once
per task for the model-prefix of every key of the real masters.
"""

from __future__ import annotations

import json
from pathlib import Path

import corpus
import pytest

from relpipe.changelog.configs.load import load_masters
from relpipe.pipeline.workspace import Workspace, threshold_for

DRIVER = Path(__file__).resolve().parent.parent / "oracles" / "thresholds.py"


@pytest.mark.parametrize("task", ["gsm8k", "gpqa_diamond_cot_n_shot", "swebench_lite"])
def test_every_real_key_gets_inferencex_threshold(inferencex_tree: Path, task: str) -> None:
    masters = sorted((inferencex_tree / "configs").glob("*-master.yaml"))
    configs = load_masters(masters).configs
    prefixes = sorted({str(cfg["model-prefix"]) for cfg in configs.values()})
    table = Workspace(inferencex_tree).thresholds()
    done = corpus.run_oracle(
        str(DRIVER), "utils/evals/thresholds.yaml", task, *prefixes, cwd=inferencex_tree
    )
    assert done.returncode == 0, done.stderr[-2000:]
    oracle = json.loads(done.stdout)
    mine = {p: threshold_for(table, p, task) for p in prefixes}
    assert mine == oracle
    assert len(configs) == 208 and len(prefixes) >= 8
    if task == "gsm8k":
        # not glm5's 0.94: InferenceX matches the model-prefix exactly
        assert (mine["glm5.2"], mine["glm5.1"], mine["qwen3.5"]) == (0.90, 0.93, 0.94)
