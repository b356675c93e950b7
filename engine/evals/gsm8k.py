"""Suite `gsm8k`: grade-school math accuracy of an OpenAI-compatible server, scored as lm-eval does.

Data: GSM8K-format JSONL (`{"question": ..., "answer": "... #### 42"}` per line) from a path.
Prompt: n-shot "Question: ...\\nAnswer: ...\\n\\n" examples (from `--fewshot FILE`, else the first
n rows of the dataset, which are then not scored) followed by the question; greedy completion
with lm-eval's stop strings. Scoring: `strict-match` takes the first `#### N`, `flexible-extract`
the last number-like span; both are normalised by lm-eval's ignore-regexes before exact match.
The client is urllib (no dependencies) with bounded concurrency; zero scored samples is a FAIL,
and so is any request that did not get an answer (an accuracy over a subset would flatter).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from relpipe.engine.errors import EngineError
from relpipe.engine.evals.stats import Accuracy

STOP = ("Question:", "</s>", "<|im_end|>")
STRICT = re.compile(r"#### (\-?[0-9\.\,]+)")
FLEXIBLE = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")
IGNORE = (re.compile(","), re.compile(r"\$"), re.compile(r"(?s).*#### "), re.compile(r"\.$"))
INVALID = "[invalid]"
MAX_DATASET_BYTES = 64 << 20
MAX_LINE_BYTES = 1 << 20
MAX_RESPONSE_BYTES = 1 << 20


@dataclass(frozen=True)
class Problem:
    question: str
    answer: str  # full solution text ending in "#### N"

    @property
    def target(self) -> str:
        return self.answer.split("####")[-1].strip()


@dataclass(frozen=True)
class Scored:
    problem: Problem
    completion: str
    strict: str
    flexible: str

    @property
    def strict_ok(self) -> bool:
        return exact_match(self.strict, self.problem.target)

    @property
    def flexible_ok(self) -> bool:
        return exact_match(self.flexible, self.problem.target)


def read_jsonl(path: str) -> list[Problem]:
    """GSM8K JSONL rows; EngineError naming file:line for any malformed row."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise EngineError(f"dataset {path}: cannot read it ({exc.strerror})") from exc
    problems = []
    total = 0
    with fh:
        for number, raw in enumerate(iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""), start=1):
            total += len(raw)
            if len(raw) > MAX_LINE_BYTES or total > MAX_DATASET_BYTES:
                raise EngineError(f"dataset {path}:{number}: line or file over the size cap")
            if not raw.strip():
                continue
            try:
                row = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise EngineError(f"dataset {path}:{number}: not a JSON object ({exc})") from exc
            if not (
                isinstance(row, dict)
                and isinstance(row.get("question"), str)
                and isinstance(row.get("answer"), str)
                and "####" in row["answer"]
            ):
                raise EngineError(
                    f"dataset {path}:{number}: needs string 'question' and 'answer' with '#### N'"
                )
            problems.append(Problem(row["question"], row["answer"]))
    return problems


def prompt(problem: Problem, shots: Sequence[Problem]) -> str:
    """lm-eval's gsm8k prompt: n-shot examples then the question."""
    head = "".join(f"Question: {s.question}\nAnswer: {s.answer}\n\n" for s in shots)
    return f"{head}Question: {problem.question}\nAnswer:"


def strict_extract(text: str) -> str:
    m = STRICT.search(text)
    return m.group(1) if m else INVALID


def flexible_extract(text: str) -> str:
    matches = FLEXIBLE.findall(text)
    if not matches:
        return INVALID
    last = matches[-1]
    return next(g for g in last if g) if isinstance(last, tuple) else last


def normalise(text: str) -> str:
    for pattern in IGNORE:
        text = pattern.sub("", text)
    return text.strip().lower()


def exact_match(prediction: str, target: str) -> bool:
    return prediction != INVALID and normalise(prediction) == normalise(target)


def score(problem: Problem, completion: str) -> Scored:
    return Scored(problem, completion, strict_extract(completion), flexible_extract(completion))


def complete(base_url: str, model: str, text: str, max_tokens: int, timeout: float) -> str:
    """One greedy /v1/completions call; EngineError for any transport or protocol problem."""
    body = json.dumps(
        {
            "model": model,
            "prompt": text,
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "stop": list(STOP),
        }
    ).encode()
    req = urllib.request.Request(
        base_url.rstrip("/") + "/v1/completions",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read(MAX_RESPONSE_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise EngineError(f"completion request: HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise EngineError(f"completion request: {exc}") from exc
    if len(raw) > MAX_RESPONSE_BYTES:
        raise EngineError("completion response larger than the cap")
    try:
        data = json.loads(raw)
        text_out = data["choices"][0]["text"]
    except (json.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
        raise EngineError(
            f"completion response is not an OpenAI completion ({type(exc).__name__})"
        ) from exc
    if not isinstance(text_out, str):
        raise EngineError("completion response text is not a string")
    return text_out


@dataclass(frozen=True)
class Report:
    scored: tuple[Scored, ...]
    errors: tuple[str, ...]

    @property
    def strict(self) -> Accuracy:
        return Accuracy(sum(s.strict_ok for s in self.scored), len(self.scored))

    @property
    def flexible(self) -> Accuracy:
        return Accuracy(sum(s.flexible_ok for s in self.scored), len(self.scored))


def run(
    base_url: str,
    model: str,
    problems: Sequence[Problem],
    shots: Sequence[Problem],
    max_tokens: int = 256,
    concurrency: int = 8,
    timeout: float = 300.0,
) -> Report:
    """Ask the server every problem (at most `concurrency` in flight) and score the answers."""

    def one(problem: Problem) -> Scored | str:
        try:
            return score(
                problem, complete(base_url, model, prompt(problem, shots), max_tokens, timeout)
            )
        except EngineError as exc:
            return str(exc)

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        outcomes = list(pool.map(one, problems))
    return Report(
        scored=tuple(o for o in outcomes if isinstance(o, Scored)),
        errors=tuple(o for o in outcomes if isinstance(o, str)),
    )
