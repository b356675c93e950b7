"""Key-scoped C5 and `relpipe diff --config-key` on ATOM's real history: a window whose relevant
changes touch only other models passes for the seed's key, one that touches its path warns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from relpipe.core import jsoncodec
from relpipe.core.status import PASS, WARN
from relpipe.pipeline import cli
from relpipe.pipeline.outputs import PrecisionOutput
from relpipe.pipeline.verdict import evaluate
from relpipe.validate.precision import diff, keypath

SEED_KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"
ELSEWHERE = ("16c20d30", "57143379")  # relevant files, none on minimax_m3's path
ON_PATH = ("2c658f95", "6c4bbba3")  # MoE, linear, the EAGLE proposer: on its path


def _c5(repo: Path, span: tuple[str, str], make_outcome: Any, key: str | None) -> Any:
    report = diff(repo, *span, scope="atom")
    scoped = keypath.scope(repo, report, key) if key else None
    out = PrecisionOutput(status=PASS, report=report, key_scope=scoped)
    recorded = json.loads(json.dumps(jsoncodec.to_json(out)))  # what the run record keeps
    assert PrecisionOutput.from_json(recorded, where="precision").key_scope == scoped
    verdict = evaluate(make_outcome(precision=recorded))
    return next(c for c in verdict.checks if c.id == "C5")


def test_c5_warns_only_for_changes_on_the_keys_path(atom_repo: Path, make_outcome: Any) -> None:
    assert _c5(atom_repo, ELSEWHERE, make_outcome, None).status == WARN  # before: any change
    quiet = _c5(atom_repo, ELSEWHERE, make_outcome, SEED_KEY)
    assert quiet.status == PASS
    assert f"no precision-relevant change on {SEED_KEY}'s path" in quiet.reason
    loud = _c5(atom_repo, ON_PATH, make_outcome, SEED_KEY)
    assert loud.status == WARN and "kernel" in loud.reason and "draft-model" in loud.reason


def test_diff_config_key_splits_the_relevant_files(
    atom_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["diff", *ON_PATH, "--repo", str(atom_repo), "--config-key", SEED_KEY, "--json"]
    assert cli.main(argv) == 0
    scope = json.loads(capsys.readouterr().out)["key_scope"]
    assert scope["warn"] is True and scope["model"] == "minimaxm3"
    on = {f["path"]: f["why"] for f in scope["on_path"]}
    assert on["atom/model_ops/moe.py"] == "reached from the model by imports"
    assert on["atom/model_engine/model_runner.py"] == "an engine-wide switch"
    assert "atom/models/deepseek_v4.py" in {f["path"] for f in scope["elsewhere"]}
    assert cli.main(argv[:-1]) == 0
    assert f"### Scoped to `{SEED_KEY}`" in capsys.readouterr().out


def test_a_model_the_engine_has_no_module_of_is_not_scoped(
    atom_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = diff(atom_repo, *ON_PATH, scope="atom")
    assert keypath.scope(atom_repo, report, "nosuchmodel-fp8-mi355x-atom") is None
    argv = ["diff", *ON_PATH, "--repo", str(atom_repo), "--json"]
    assert cli.main([*argv, "--config-key", "nosuchmodel-fp8-mi355x-atom"]) == 0
    out = capsys.readouterr()
    assert "key_scope" not in json.loads(out.out)
    assert "not scoped, every relevant change counts" in out.err
