"""Fixtures of tests/pipeline: a recorded qualification outcome shaped like a real fixture run,
and (`env`) the real fixture nightlies and benchmark repository the qualification tests run on.

`outcome(**over)` takes each field as recorded JSON (what a run record holds) and parses it with
`core.jsoncodec.from_json`, so the tests read the same boundary a re-render does.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from qualify_support import Env, make_env

from relpipe.core import jsoncodec
from relpipe.pipeline.outputs import (
    ConfigScope,
    EvalOutput,
    PrecisionOutput,
    ProbeOutput,
    Resolved,
    SmokeOutput,
    ValidatorOutput,
)
from relpipe.pipeline.plan import Options, Plan
from relpipe.pipeline.verdict import Outcome

DIGEST = "sha256:" + "ab" * 32
BASE_DIGEST = "sha256:" + "cd" * 32


def base_json() -> dict[str, Any]:
    """The recorded JSON of a PASS-shaped outcome (C5 warns: one relevant norm change)."""
    return copy.deepcopy(_BASE)


_BASE: dict[str, Any] = {
    "image": {
        "ref": "127.0.0.1:5000/rocm/atom-dev:nightly_202610070333",
        "digest": DIGEST,
        "verified": True,
        "pinned": f"127.0.0.1:5000/rocm/atom-dev:nightly_202610070333@{DIGEST}",
    },
    "baseline": {
        "ref": "127.0.0.1:5000/rocm/atom-dev:nightly_202610011210",
        "digest": BASE_DIGEST,
        "verified": True,
        "pinned": f"127.0.0.1:5000/rocm/atom-dev:nightly_202610011210@{BASE_DIGEST}",
    },
    "probe": {
        "status": "ok",
        "facts": {
            "engine": {
                "name": "atom",
                "version": "0.1.7.dev10+gf9ff5b056",
                "commit": "f9ff5b05644b",
            },
            "python": "3.11.2",
            "torch": "2.13.0",
            "triton": "3.8.0",
            "rocm": "7.2.4-112",
            "aiter": "1a2b3c",
            "lmcache": "0.5.6.dev139+gf22dec28",
            "errors": [],
        },
    },
    "smoke": {"status": "pass", "tokens": 64, "tokens_per_s": 80.0, "max_logit_diff": 0.001},
    "evals": (
        {
            "status": "pass",
            "suite": "decode-parity",
            "batch": 1,
            "point": "agentic-coding/tp4/conc1",
            "metric": "token_agreement",
            "score": 1.0,
            "threshold": 0.99,
            "samples": 32,
        },
        {
            "status": "pass",
            "suite": "decode-parity",
            "batch": 4,
            "point": "agentic-coding/tp4/conc4",
            "metric": "token_agreement",
            "score": 0.995,
            "threshold": 0.99,
            "samples": 32,
        },
    ),
    "precision": {
        "status": "ok",
        "old": "831ef6924aaa",
        "new": "f9ff5b05644b",
        "commits": [
            {
                "sha": "874acf188105",
                "subject": "fix(layernorm): accumulate in fp32 <b>now</b> (#2479)",
                "pr": 2479,
            },
            {
                "sha": "c3bd6b03be7d",
                "subject": "docs(linear): explain | dequantization (#2485)",
                "pr": 2485,
            },
        ],
        "files": [
            {
                "path": "atom/model_ops/layernorm.py",
                "category": "norm",
                "verdict": "relevant",
                "commits": ["874acf188105"],
            },
            {
                "path": "atom/model_ops/linear.py",
                "category": "linear",
                "verdict": "cosmetic",
                "commits": ["c3bd6b03be7d"],
            },
        ],
        "watch": [
            {
                "label": "eagle3_llama.py",
                "path": "atom/models/eagle3_llama.py",
                "state": "unchanged",
            }
        ],
        "upstream": [],
    },
    "config": {
        "status": "ok",
        "key": "minimaxm3-fp4-mi355x-atom-agentic-mtp",
        "master": "configs/amd-master.yaml",
        "image": "rocm/atom-dev:nightly_202610011210",
        "framework": "atom",
        "model_prefix": "minimaxm3",
        "points": [
            {"name": "agentic-coding/tp4/conc1", "concurrency": 1, "batch": 1},
            {"name": "agentic-coding/tp4/conc4", "concurrency": 4, "batch": 4},
        ],
    },
    "golden": {"status": "ok", "problems": [], "evidence": {"golden files": "1"}},
}

_COMMIT = {
    "parents": [],
    "side": "new",
    "author": "dev",
    "date": "2026-10-06T00:00:00+00:00",
    "type": "fix",
    "scope": None,
    "pr": None,
    "files": [],
}
_FILE = {
    "old_path": None,
    "status": "modified",
    "categories": [],
    "reason": "",
    "binary": False,
    "commits": [],
}
_REPORT = {
    "repo": "image:fixture",
    "rules": "atom",
    "project": "atom",
    "scope": None,
    "old_ref": "refs/relpipe/old",
    "new_ref": "refs/relpipe/new",
    "old": "",
    "new": "",
    "ancestor": True,
    "shallow": False,
    "commits": [],
    "files": [],
    "watch": [],
    "upstream": [],
}


def precision_json(data: dict[str, Any]) -> dict[str, Any]:
    """A precision stage output from the fields a test names (the rest as a real diff has them)."""
    if data.get("status") != "ok":
        return data
    out = {**_REPORT, **data}
    out["commits"] = [{**_COMMIT, **c} for c in out["commits"]]
    out["files"] = [
        {**_FILE, "categories": [f.get("category")] if f.get("category") else [], **f}
        for f in out["files"]
    ]
    out["watch"] = [{"files": [], "commits": [], "note": "", **w} for w in out["watch"]]
    out["upstream"] = [{"why": "", "commit": None, **u} for u in out["upstream"]]
    return out


_PARSERS: dict[str, Callable[[Any], Any]] = {
    "image": lambda d: jsoncodec.from_json(Resolved, d),
    "baseline": lambda d: jsoncodec.from_json(Resolved, d),
    "probe": lambda d: jsoncodec.from_json(ProbeOutput, d),
    "smoke": lambda d: jsoncodec.from_json(SmokeOutput, d),
    "precision": lambda d: jsoncodec.from_json(PrecisionOutput, precision_json(d)),
    "config": lambda d: jsoncodec.from_json(ConfigScope, d),
    "golden": lambda d: jsoncodec.from_json(ValidatorOutput, d),
    "changelog": lambda d: jsoncodec.from_json(ValidatorOutput, d),
    "notes": lambda d: jsoncodec.from_json(ValidatorOutput, d),
}


def outcome(**over: Any) -> Outcome:
    """A PASS-shaped outcome; keyword arguments replace single fields (recorded JSON or typed)."""
    base = base_json()
    base.update(over)
    fields: dict[str, Any] = {}
    for name, value in base.items():
        if name == "evals":
            fields[name] = tuple(
                jsoncodec.from_json(EvalOutput, e) if isinstance(e, dict) else e for e in value
            )
        elif isinstance(value, dict):
            fields[name] = _PARSERS[name](value)
        else:
            fields[name] = value
    return Outcome(**fields)


@pytest.fixture
def sample_outcome() -> Outcome:
    return outcome()


@pytest.fixture
def make_outcome() -> Any:
    return outcome


@pytest.fixture
def outcome_json() -> Any:
    return base_json


@pytest.fixture(name="precision_json")
def precision_json_fixture() -> Any:
    return precision_json


@pytest.fixture(scope="module")
def env(
    registry: str,
    docker_host: str,
    fixture_cache: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Env:
    """Good fixture nightlies in the loopback registry and a benchmark repository naming them, one
    per test module (tests/pipeline/test_qualify*.py): a module's tests build on each other's
    runs and edits."""
    return make_env(registry, docker_host, fixture_cache, tmp_path_factory)


def plan_of(data: dict[str, Any]) -> Plan:
    """The qualification plan of an outcome's recorded JSON (`base_json()`): image, baseline,
    config, default options."""
    return Plan(
        image=jsoncodec.from_json(Resolved, data["image"]),
        baseline=jsoncodec.from_json(Resolved, data["baseline"]),
        config=jsoncodec.from_json(ConfigScope, data["config"]),
        thresholds={},
        golden=None,
        options=Options(),
        workspace=None,
    )


@pytest.fixture(name="plan_of")
def plan_of_fixture() -> Callable[[dict[str, Any]], Plan]:
    return plan_of
