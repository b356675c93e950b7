"""gsm8k scoring (lm-eval's strict and flexible extraction), statistics, thresholds, and the suite
end to end against `python -m relpipe.engine serve` on a synthetic GSM8K-format set."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from relpipe.engine.errors import EngineError
from relpipe.engine.evals import gsm8k, thresholds
from relpipe.engine.evals.stats import Accuracy
from support import source_root

P = gsm8k.Problem("q", "Some steps.\n#### 1,234")


@pytest.mark.parametrize(
    ("completion", "strict", "flexible", "strict_ok", "flexible_ok"),
    [
        (" She pays 2 * 617 = 1234.\n#### 1234", "1234", "1234", True, True),
        (
            " The total is $1,234.",
            "[invalid]",
            "$1,234.",
            False,
            True,
        ),  # flexible strips $ , and final .
        (
            " #### 1234 but then 99 more",
            "1234",
            "99",
            True,
            False,
        ),  # flexible takes the LAST number
        (" no idea", "[invalid]", "[invalid]", False, False),
        (" 7 apples and 1234", "[invalid]", "1234", False, True),
        (" #### -5", "-5", "-5", False, False),
    ],
)
def test_scoring_matches_hand_computed_results(
    completion: str, strict: str, flexible: str, strict_ok: bool, flexible_ok: bool
) -> None:
    s = gsm8k.score(P, completion)
    assert (s.strict, s.flexible, s.strict_ok, s.flexible_ok) == (
        strict,
        flexible,
        strict_ok,
        flexible_ok,
    )


def test_prompt_is_lm_eval_n_shot_format() -> None:
    shots = [gsm8k.Problem("1+1?", "1+1=2\n#### 2")]
    assert gsm8k.prompt(P, shots) == "Question: 1+1?\nAnswer: 1+1=2\n#### 2\n\nQuestion: q\nAnswer:"


def test_accuracy_statistics() -> None:
    a = Accuracy(correct=3, n=4)
    assert a.value == 0.75
    assert a.stderr == pytest.approx(math.sqrt(0.75 * 0.25 / 3))
    assert a.wilson_lower() == pytest.approx(0.3006, abs=1e-4)  # Wilson 95% for 3/4
    assert Accuracy(0, 0).to_json() == {
        "correct": 0,
        "n": 0,
        "accuracy": 0.0,
        "stderr": None,
        "wilson_lower_95": 0.0,
    }


def test_thresholds_read_the_real_inferencex_file(corpus_dir: Path) -> None:
    t = thresholds.load(str(corpus_dir / "thresholds.yaml"))
    assert t.lookup("gsm8k", "glm5.1-fp8-mi355x-atom") == (
        0.93,
        "models.glm5.1.gsm8k",
    )  # longest prefix
    assert t.lookup("gsm8k", "glm5-fp8-mi355x-sglang") == (0.94, "models.glm5.gsm8k")
    assert t.lookup("gsm8k", "llama70b-fp8") == (0.90, "default.gsm8k")
    assert t.lookup("swebench_lite", "dsr1-fp8") == (0.50, "default.swebench_lite")
    with pytest.raises(EngineError, match="no threshold for task 'mmlu'"):
        t.lookup("mmlu", "dsr1")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("default:\n\tgsm8k: 0.9\n", ":2: tabs"),
        ("default:\n  gsm8k: 0.9\n  gsm8k: 0.8\n", ":3: duplicate task 'gsm8k'"),
        ("default: {gsm8k: 0.9}\n", ":1: expected 'key:'"),
        ("default:\n  gsm8k: &a 0.9\n", ":2: expected 'key:'"),
        ("default:\n  gsm8k: 1.5\n", ":2: threshold 1.5 is outside [0, 1]"),
        ("models:\n  dsr1:\n    gsm8k: 0.9\n      deep: 1\n", ":4: unexpected indentation"),
        ("other:\n  x: 1\n", ":1: top-level keys"),
        ('{"default": {"gsm8k": 2}}', "default.gsm8k must be a number in [0, 1]"),
    ],
)
def test_thresholds_reader_is_strict(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(EngineError, match=message.replace("[", r"\[").replace("]", r"\]")):
        thresholds.load(str(path))


_KEYS = st.from_regex(r"[a-z0-9][a-z0-9_.\-]{0,8}", fullmatch=True)
_SCORES = st.dictionaries(_KEYS, st.integers(0, 100).map(lambda n: n / 100), max_size=4)


@settings(max_examples=40, deadline=None)
@given(default=_SCORES, models=st.dictionaries(_KEYS, _SCORES, max_size=4))
def test_thresholds_yaml_round_trip(
    default: dict[str, float], models: dict[str, dict[str, float]]
) -> None:
    lines = ["# thresholds", "default:"] + [f"  {k}: {v}" for k, v in default.items()] + ["models:"]
    for name, tasks in models.items():
        lines += [f"  {name}:"] + [f"    {k}: {v}  # why" for k, v in tasks.items()]
    parsed = thresholds.parse_yaml("\n".join(lines) + "\n")
    assert parsed == thresholds.Thresholds(default=default, models=models)


def test_thresholds_json_form(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"default": {"gsm8k": 0.5}, "models": {"relpipe": {"gsm8k": 0.25}}}))
    assert thresholds.load(str(path)).lookup("gsm8k", "relpipe-tiny") == (
        0.25,
        "models.relpipe.gsm8k",
    )


def test_dataset_rows_are_validated(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"question": "a", "answer": "#### 1"}\n{"question": "b"}\n')
    with pytest.raises(EngineError, match=r"d.jsonl:2: needs string 'question' and 'answer'"):
        gsm8k.read_jsonl(str(path))


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """`python -m relpipe.engine serve` on an ephemeral loopback port (reference path, seed 0)."""
    env = dict(os.environ, PYTHONPATH=str(source_root()))
    proc = subprocess.Popen(
        [sys.executable, "-m", "relpipe.engine", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = json.loads(proc.stdout.readline())
    assert line["event"] == "listening"
    yield line["url"]
    proc.terminate()
    out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0 and json.loads(out)["status"] == "pass"


def _model_answers(questions: list[str], max_tokens: int) -> list[str]:
    """What the server's model (reference decode, seed 0) completes for each prompt, in process."""
    from relpipe.engine.decode import greedy, make_decoder
    from relpipe.engine.model import TINY, decode_bytes, encode, init_weights

    dec = make_decoder("reference", init_weights(TINY, 0))
    out = []
    for q in questions:
        text = decode_bytes(
            greedy(dec, [encode(gsm8k.prompt(gsm8k.Problem(q, "#### 0"), []))], max_tokens).tokens[
                0
            ]
        )
        out.append(text.split("Question:")[0])
    return out


def test_gsm8k_end_to_end_against_the_engine_server(cli, tmp_path: Path, server: str) -> None:  # type: ignore[no-untyped-def]
    questions = [f"What is {i} plus {i}?" for i in range(12)]
    answers = _model_answers(questions, 16)
    # gold = the model's own last number where it wrote one (flexible hits), else a miss
    rows, expect = [], 0
    for q, a in zip(questions, answers, strict=True):
        pred = gsm8k.flexible_extract(a)
        if pred != gsm8k.INVALID and expect < 4:
            rows.append({"question": q, "answer": f"work\n#### {gsm8k.normalise(pred)}"})
            expect += 1
        else:
            rows.append({"question": q, "answer": "work\n#### 123456789"})
    assert expect >= 1, "the seed-0 model should write at least one number"
    data = tmp_path / "gsm8k.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = [
        "eval",
        "--suite",
        "gsm8k",
        "--base-url",
        server,
        "--dataset",
        str(data),
        "--n-shot",
        "0",
        "--max-tokens",
        "16",
        "--concurrency",
        "4",
        "--metric",
        "flexible-extract",
    ]
    passed = cli(*args, "--threshold", str(expect / len(rows)))
    assert passed.code == 0, passed.doc
    assert passed.doc["scores"]["flexible-extract"]["correct"] == expect
    assert passed.doc["scores"]["flexible-extract"]["n"] == len(rows)
    assert (
        passed.doc["scores"]["strict-match"]["correct"] == 0
    )  # the tiny model never writes "#### N"
    failed = cli(*args, "--threshold", "0.9")
    assert failed.code == 1 and failed.doc["reason"].startswith("flexible-extract accuracy ")


def test_empty_dataset_is_a_fail(cli, tmp_path: Path, server: str) -> None:  # type: ignore[no-untyped-def]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    r = cli(
        "eval",
        "--suite",
        "gsm8k",
        "--base-url",
        server,
        "--dataset",
        str(empty),
        "--n-shot",
        "0",
        "--threshold",
        "0",
    )
    assert r.code == 1 and r.doc["status"] == "fail" and r.doc["reason"] == "zero scored samples"


def test_unreachable_server_is_a_fail_with_the_error(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "d.jsonl"
    data.write_text('{"question": "a", "answer": "#### 1"}\n')
    r = cli(
        "eval",
        "--suite",
        "gsm8k",
        "--base-url",
        "http://127.0.0.1:9",
        "--dataset",
        str(data),
        "--n-shot",
        "0",
        "--threshold",
        "0",
        "--request-timeout",
        "5",
    )
    assert r.code == 1 and r.doc["reason"].startswith("zero scored samples (completion request:")


def test_missing_threshold_is_a_usage_error(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    r = cli(
        "eval",
        "--suite",
        "gsm8k",
        "--base-url",
        "http://127.0.0.1:9",
        "--dataset",
        str(tmp_path / "x"),
    )
    assert r.code == 2 and r.doc["reason"] == "gsm8k needs --thresholds FILE or --threshold X"
