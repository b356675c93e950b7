"""gsm8k by InferenceX's rules: the task constants against the corpus's `utils/evals/gsm8k.yaml`,
extraction and exact_match case by case, the max-tokens rule run through bash from
`benchmark_lib.sh`, the pass rule against InferenceX's own `validate_scores.py`, few-shot
sampling, offline re-scoring of recorded completions, statistics, thresholds, and the suite end
to end against `python -m relpipe.engine serve` through chat completions."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import corpus
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from support import source_root

from relpipe.engine.errors import EngineError
from relpipe.engine.evals import gsm8k, thresholds
from relpipe.engine.evals.stats import Accuracy

P = gsm8k.Problem(question="q", answer="Some steps.\n#### 1,234")


def test_task_constants_are_inferencex_gsm8k_yaml(inferencex_tree: Path) -> None:
    task = yaml.safe_load((inferencex_tree / "utils/evals/gsm8k.yaml").read_text())
    assert task["doc_to_text"].replace("{{question}}", "{question}") == gsm8k.DOC_TO_TEXT
    assert task["doc_to_target"] == "{{answer}}"  # the whole answer is the reference
    assert task["generation_kwargs"]["until"] == list(gsm8k.STOP)
    assert task["generation_kwargs"]["temperature"] == 0.0
    assert task["generation_kwargs"]["do_sample"] is False
    assert task["num_fewshot"] == gsm8k.N_SHOT
    (metric,) = task["metric_list"]
    assert metric["metric"] == "exact_match" and metric["ignore_case"] is gsm8k.IGNORE_CASE
    assert metric["ignore_punctuation"] is False
    assert metric["regexes_to_ignore"] == list(gsm8k.IGNORE)
    assert [f["name"] for f in task["filter_list"]] == list(gsm8k.METRICS)
    for spec, ours in zip(task["filter_list"], gsm8k.FILTERS, strict=True):
        regex, take = spec["filter"]
        assert regex == {
            "function": "regex",
            "group_select": ours.group_select,
            "regex_pattern": ours.pattern,
        }
        assert take == {"function": "take_first"}


@pytest.mark.parametrize(
    ("completion", "answer", "strict", "flexible", "strict_ok", "flexible_ok"),
    [
        ("2 * 617 = 1234.\n#### 1234", "#### 1234", "1234", "1234", True, True),
        # strict takes the LAST "#### N" (group_select -1), not the first
        ("#### 12 wait, no.\n#### 1234", "#### 1234", "1234", "1234", True, True),
        ("#### 1234\nActually\n#### 99", "#### 1234", "99", "99", False, False),
        # commas and $ are ignored on both sides; the reference keeps its own formatting
        ("#### 1,234", "x\n#### 1234", "1,234", "1,234", True, True),
        ("The total is $1,234.", "#### 1234", "[invalid]", "$1,234.", False, True),
        # a trailing period is captured by the regex, then removed by "\\.$"
        ("#### 18.", "#### 18", "18.", "18.", True, True),
        ("#### -5", "#### -5", "-5", "-5", True, True),
        ("#### 2.5", "#### 2.5", "2.5", "2.5", True, True),
        ("#### 2.50", "#### 2.5", "2.50", "2.50", False, False),  # exact match, not numeric
        ("no idea", "#### 7", "[invalid]", "[invalid]", False, False),
        ("7 apples and 1234", "#### 1234", "[invalid]", "1234", False, True),
        ("####1234", "#### 1234", "[invalid]", "1234", False, True),  # the space is required
        # the reference is normalised too: everything up to its last "#### " goes
        ("#### 5", "a #### 3\n#### 5", "5", "5", True, True),
    ],
)
def test_extraction_and_exact_match_case_by_case(
    completion: str, answer: str, strict: str, flexible: str, strict_ok: bool, flexible_ok: bool
) -> None:
    s = gsm8k.score(gsm8k.Problem(question="q", answer=answer), completion)
    assert s.extracted == {"strict-match": strict, "flexible-extract": flexible}
    assert (s.ok("strict-match"), s.ok("flexible-extract")) == (strict_ok, flexible_ok)


def test_reasoning_content_is_the_fallback_only_when_content_is_empty() -> None:
    assert gsm8k.answer_text({"content": "", "reasoning_content": "#### 4"}) == "#### 4"
    assert gsm8k.answer_text({"content": None, "reasoning_content": "#### 4"}) == "#### 4"
    assert gsm8k.answer_text({"content": "#### 3", "reasoning_content": "#### 4"}) == "#### 3"
    assert gsm8k.answer_text({"content": None}) == ""
    with pytest.raises(EngineError, match="not a string"):
        gsm8k.answer_text({"content": 5})


def test_prompt_is_one_user_turn_of_n_shots_and_the_question() -> None:
    shot = gsm8k.Problem(question="1+1?", answer="1+1=2\n#### 2")
    line = "End your response with the answer on the last line, formatted as: #### [number]"
    assert gsm8k.user_message(P, [shot]) == (
        f"Question: 1+1?\n{line}\nAnswer: 1+1=2\n#### 2\n\nQuestion: q\n{line}\nAnswer:"
    )
    body = gsm8k.request_body("m", "hi", 12288)
    assert body == {
        "messages": [{"role": "user", "content": "hi"}],
        "model": "m",
        "max_tokens": 12288,
        "temperature": 0,
        "stop": ["</s>", "<|im_end|>"],
        "seed": 1234,
        "top_p": 1,
    }


def test_max_tokens_rule_is_benchmark_libs(inferencex_tree: Path) -> None:
    lib = (inferencex_tree / "benchmarks/benchmark_lib.sh").read_text()
    rule = re.search(r"local (max_output_tokens=.*?\n.*?\n.*?\n.*?fi)", lib, re.S)
    assert rule, "run_lm_eval's max_output_tokens rule moved"
    for context in (2, 1000, 4096, 4097, 16384, 20481, 32768, 131072):
        script = f"eval_context_len={context}\n{rule.group(1)}\necho $max_output_tokens"
        theirs = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
        assert gsm8k.max_output_tokens(context) == int(theirs.stdout), context
    assert gsm8k.max_output_tokens(gsm8k.DEFAULT_CONTEXT) == 12288


def _report(strict: int, flexible: int, n: int) -> gsm8k.Report:
    rows = [
        gsm8k.Scored(
            problem=P,
            completion="",
            extracted={
                "strict-match": "1234" if i < strict else "0",
                "flexible-extract": "1234" if i < flexible else "0",
            },
        )
        for i in range(n)
    ]
    return gsm8k.Report(scored=tuple(rows), errors=())


@pytest.mark.parametrize(("strict", "flexible"), [(3, 2), (2, 3), (3, 3), (5, 4), (4, 5)])
def test_pass_rule_agrees_with_inferencex_validate_scores(
    tmp_path: Path, strict: int, flexible: int
) -> None:
    report = _report(strict, flexible, 5)
    results = {
        "results": {
            "gsm8k": {f"exact_match,{m}": report.accuracy(m).value for m in gsm8k.METRICS}
            | {f"exact_match_stderr,{m}": 0.1 for m in gsm8k.METRICS}
        }
    }
    (tmp_path / "results_gsm8k.json").write_text(json.dumps(results))
    (tmp_path / "t.json").write_text(json.dumps({"default": {"gsm8k": 0.6}}))
    theirs = corpus.run_oracle(
        "evals/validate_scores.py",
        "--thresholds",
        str(tmp_path / "t.json"),
        "--meta-env",
        str(tmp_path / "none.json"),
        "--results-glob",
        str(tmp_path / "results*.json"),
    )
    status, _ = gsm8k.verdict(report, 0.6, "default")
    assert (theirs.returncode == 0) == (status == "pass"), theirs.stdout + theirs.stderr


def test_fewshot_is_sampled_as_lm_eval_does() -> None:
    pool = [gsm8k.Problem(question=str(i), answer=f"#### {i}") for i in range(20)]
    train = gsm8k.fewshot_sampler(pool, 5, same_split=False)
    # one Random(1234), advanced per evaluated doc: Random(1234).sample(pool, 5) twice
    assert [s.question for s in train(P)] == ["14", "3", "0", "2", "1"]
    assert [s.question for s in train(P)] == ["2", "3", "11", "7", "0"]
    same = gsm8k.fewshot_sampler(pool, 5, same_split=True)
    # same split: 6 drawn ([14, 3, 0, 2, 1, 10]), the evaluated doc itself dropped
    assert [s.question for s in same(pool[3])] == ["14", "0", "2", "1", "10"]
    with pytest.raises(EngineError, match="5-shot needs 6 few-shot docs, found 5"):
        gsm8k.fewshot_sampler(pool[:5], 5, same_split=True)


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
    assert t.lookup("gsm8k", "glm5.1") == (0.93, "models.glm5.1.gsm8k")
    assert t.lookup("gsm8k", "glm5") == (0.94, "models.glm5.gsm8k")
    # InferenceX matches the model-prefix exactly: glm5.2 is not glm5 (0.94), it is the default
    assert t.lookup("gsm8k", "glm5.2") == (0.90, "default.gsm8k")
    assert t.lookup("gsm8k", "glm5.1-fp8-mi355x-atom") == (0.90, "default.gsm8k")
    assert t.lookup("gsm8k", "llama70b") == (0.90, "default.gsm8k")
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
    table = thresholds.load(str(path))
    assert table.lookup("gsm8k", "relpipe") == (0.25, "models.relpipe.gsm8k")
    assert table.lookup("gsm8k", "relpipe-tiny") == (0.5, "default.gsm8k")


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


def test_gsm8k_end_to_end_against_the_engine_server(cli, tmp_path: Path, server: str) -> None:  # type: ignore[no-untyped-def]
    # The random-weight tiny model answers bytes, never a number: both metrics score 0, which
    # exercises the whole path (chat requests, stop strings, extraction, the pass rule).
    data = tmp_path / "gsm8k.jsonl"
    rows = [{"question": f"What is {i} plus {i}?", "answer": f"#### {2 * i}"} for i in range(2)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["eval", "--suite", "gsm8k", "--base-url", server, "--dataset", str(data)]
    args += ["--n-shot", "0", "--max-tokens", "4", "--concurrency", "2"]
    r = cli(*args, "--threshold", "0")
    assert r.code == 0, r.doc
    assert r.doc["max_tokens"] == 4 and r.doc["error_count"] == 0
    assert [r.doc["scores"][m]["n"] for m in gsm8k.METRICS] == [2, 2]
    assert all(s["completion"] for s in r.doc["samples"])
    # every exact_match metric must meet the threshold, each named in the reason
    failed = cli(*args, "--threshold", "0.5")
    assert failed.code == 1
    assert failed.doc["reason"] == (
        "exact_match,strict-match = 0.0000; exact_match,flexible-extract = 0.0000"
        " (< 0.5 from --threshold)"
    )


def test_recorded_completions_are_rescored_offline(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rows = [
        # lm-eval's own samples format (--log_samples)
        {"doc": {"question": "a", "answer": "x\n#### 4"}, "resps": [["so #### 4"]], "target": "x"},
        {"question": "b", "answer": "#### 1,000", "completion": "It is $1,000.\n#### 1000"},
        # an answer only in reasoning_content
        {
            "question": "c",
            "answer": "#### -3",
            "message": {"content": "", "reasoning_content": "#### -3"},
        },
        {"question": "d", "answer": "#### 7", "completion": "#### 7\n#### 8"},
    ]
    path = tmp_path / "rec.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = cli("eval", "--suite", "gsm8k", "--completions", str(path), "--threshold", "0.75")
    assert r.code == 0, r.doc
    assert r.doc["scores"]["strict-match"]["correct"] == 3
    assert r.doc["scores"]["flexible-extract"]["correct"] == 3
    low = cli("eval", "--suite", "gsm8k", "--completions", str(path), "--threshold", "0.8")
    assert low.code == 1 and low.doc["reason"].startswith("exact_match,strict-match = 0.7500")
    path.write_text('{"question": "a", "answer": "#### 1"}\n')
    bad = cli("eval", "--suite", "gsm8k", "--completions", str(path), "--threshold", "0")
    assert bad.code == 2 and bad.doc["reason"].endswith(
        "rec.jsonl:1: needs 'completion' (text) or 'message' (chat message)"
    )


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
    assert r.code == 1 and r.doc["reason"].startswith("zero scored samples (chat request:")


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
