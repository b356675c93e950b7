"""Suite `gsm8k` by InferenceX's rules: its task file, its lm-eval invocation, its score check.

The task is InferenceX's `utils/evals/gsm8k.yaml` (lm-eval's gsm8k with a changed prompt):
`Question: {question}\\nEnd your response with the answer on the last line, formatted as: ####
[number]\\nAnswer:`; targets are the whole `answer`; stop strings `</s>` and `<|im_end|>` only;
filters `strict-match` (`#### (\\-?[0-9\\.\\,]+)`) and `flexible-extract`
(`(-?[$0-9.,]{2,})|(-?[0-9]+)`), both `group_select: -1` (the LAST match, first non-empty group)
then `take_first`; `exact_match` after removing `,`, `$`, `(?s).*#### ` and a final `.` from
prediction and reference, case-insensitively. tests/engine/test_gsm8k_rules.py reads the corpus
YAML and checks these constants against it.

The requests are those of `benchmark_lib.sh: run_lm_eval` (lm-eval `local-chat-completions
--apply_chat_template`): one user message holding the n-shot examples and the question, greedy
(`temperature 0`, `top_p 1`, `seed 1234`), `max_tokens` by InferenceX's rule (context - 4096
above 4096, else half of it, at most 16384). Few-shot examples are drawn as lm-eval draws them:
one `random.Random(1234)` sampling `n` docs of the few-shot split per evaluated doc, in order
(`n + 1`, minus the doc itself, when the few-shot and test splits are the same file). The
answer is `message.content`, or `reasoning_content` when content is empty (InferenceX's
lm-eval patch). A point passes only if every exact_match metric meets the threshold
(`validate_scores.py`); zero scored samples or any failed request is a FAIL.
"""

from __future__ import annotations

import json
import random
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..errors import EngineError
from .stats import Accuracy

DOC_TO_TEXT = (
    "Question: {question}\n"
    "End your response with the answer on the last line, formatted as: #### [number]\n"
    "Answer:"
)
TARGET_DELIMITER = " "  # lm-eval's defaults for a generate_until task
FEWSHOT_DELIMITER = "\n\n"
STOP = ("</s>", "<|im_end|>")
FEWSHOT_SEED = 1234  # lm-eval's fewshot_random_seed default, also its request seed
N_SHOT = 5
INVALID = "[invalid]"
IGNORE = (",", "\\$", "(?s).*#### ", "\\.$")
IGNORE_CASE = True


@dataclass(frozen=True, kw_only=True)
class Filter:
    """One lm-eval filter chain: regex (with group_select) then take_first."""

    name: str
    pattern: str
    group_select: int = -1

    def extract(self, text: str) -> str:
        matches = re.findall(self.pattern, text)
        if not matches:
            return INVALID
        match = matches[self.group_select]
        if isinstance(match, tuple):
            groups = [m for m in match if m]
            match = groups[0] if groups else INVALID
        return str(match).strip()


FILTERS = (
    Filter(name="strict-match", pattern="#### (\\-?[0-9\\.\\,]+)"),
    Filter(name="flexible-extract", pattern="(-?[$0-9.,]{2,})|(-?[0-9]+)"),
)
METRICS = tuple(f.name for f in FILTERS)
MAX_DATASET_BYTES = 64 << 20
MAX_LINE_BYTES = 1 << 20
MAX_RESPONSE_BYTES = 1 << 20
DEFAULT_CONTEXT = 16384  # EVAL_MAX_MODEL_LEN's default in run_lm_eval


@dataclass(frozen=True, kw_only=True)
class Problem:
    question: str
    answer: str  # full solution text ending in "#### N": the reference exact_match sees


@dataclass(frozen=True, kw_only=True)
class Scored:
    problem: Problem
    completion: str
    extracted: dict[str, str]  # filter name -> extracted answer

    def ok(self, metric: str) -> bool:
        return exact_match(self.extracted[metric], self.problem.answer)


def max_output_tokens(context_len: int) -> int:
    """run_lm_eval's cap: leave 4096 tokens of input room above 4096, else half; <= 16384."""
    if context_len < 2:
        raise EngineError(f"context length {context_len} leaves no room for an answer")
    budget = context_len - 4096 if context_len > 4096 else context_len // 2
    return min(budget, 16384)


def _rows(path: str) -> Iterator[tuple[int, dict[str, object]]]:
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise EngineError(f"{path}: cannot read it ({exc.strerror})") from exc
    total = 0
    with fh:
        for number, raw in enumerate(iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""), start=1):
            total += len(raw)
            if len(raw) > MAX_LINE_BYTES or total > MAX_DATASET_BYTES:
                raise EngineError(f"{path}:{number}: line or file over the size cap")
            if not raw.strip():
                continue
            try:
                row = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise EngineError(f"{path}:{number}: not a JSON object ({exc})") from exc
            if not isinstance(row, dict):
                raise EngineError(f"{path}:{number}: not a JSON object")
            yield number, row


def _problem(row: dict[str, object], where: str) -> Problem:
    question, answer = row.get("question"), row.get("answer")
    if not (isinstance(question, str) and isinstance(answer, str) and "####" in answer):
        raise EngineError(f"{where}: needs string 'question' and 'answer' with '#### N'")
    return Problem(question=question, answer=answer)


def read_jsonl(path: str) -> list[Problem]:
    """GSM8K JSONL rows; EngineError naming file:line for any malformed row."""
    return [_problem(row, f"dataset {path}:{n}") for n, row in _rows(path)]


def answer_text(message: object) -> str:
    """The answer of a chat message: content, else reasoning_content (InferenceX's patch)."""
    if not isinstance(message, dict):
        raise EngineError("chat response message is not an object")
    content = message.get("content")
    if content in (None, "", []):
        content = message.get("reasoning_content") or ""
    if not isinstance(content, str):
        raise EngineError("chat response content is not a string")
    return content


def read_completions(path: str) -> list[tuple[Problem, str]]:
    """Recorded completions: lm-eval's samples JSONL (`doc`, `resps`) or rows of `question`,
    `answer` and `completion` (text) or `message` (a chat message, reasoning_content fallback)."""
    out = []
    for number, row in _rows(path):
        where = f"completions {path}:{number}"
        if "doc" in row:
            doc, resps = row.get("doc"), row.get("resps")
            if not isinstance(doc, dict):
                raise EngineError(f"{where}: 'doc' is not an object")
            ok = (
                isinstance(resps, list)
                and resps
                and isinstance(resps[0], list)
                and resps[0]
                and isinstance(resps[0][0], str)
            )
            if not ok:
                raise EngineError(f"{where}: 'resps' must be [[text, ...]] (lm-eval samples)")
            out.append((_problem(doc, where), str(resps[0][0])))  # type: ignore[index]
            continue
        problem = _problem(row, where)
        if isinstance(row.get("completion"), str):
            out.append((problem, str(row["completion"])))
        elif "message" in row:
            try:
                out.append((problem, answer_text(row["message"])))
            except EngineError as exc:
                raise EngineError(f"{where}: {exc}") from None
        else:
            raise EngineError(f"{where}: needs 'completion' (text) or 'message' (chat message)")
    return out


def doc_to_text(problem: Problem) -> str:
    return DOC_TO_TEXT.format(question=problem.question)


def fewshot_sampler(
    pool: Sequence[Problem], n_shot: int, same_split: bool
) -> Callable[[Problem], list[Problem]]:
    """lm-eval's ContextSampler: one Random(1234) advanced once per evaluated doc, in order."""
    rnd = random.Random(FEWSHOT_SEED)
    if n_shot == 0:
        return lambda _problem: []  # lm-eval draws nothing for a zero-shot run
    draw = n_shot + 1 if same_split else n_shot
    if draw > len(pool):
        raise EngineError(f"gsm8k: {n_shot}-shot needs {draw} few-shot docs, found {len(pool)}")

    def shots(problem: Problem) -> list[Problem]:
        return [s for s in rnd.sample(list(pool), draw) if s != problem][:n_shot]

    return shots


def user_message(problem: Problem, shots: Sequence[Problem]) -> str:
    """The single user turn lm-eval sends with --apply_chat_template (fewshot not multiturn)."""
    head = "".join(doc_to_text(s) + TARGET_DELIMITER + s.answer + FEWSHOT_DELIMITER for s in shots)
    return head + doc_to_text(problem)


def request_body(model: str, content: str, max_tokens: int) -> dict[str, object]:
    """lm-eval LocalChatCompletion's payload with InferenceX's gen_kwargs."""
    return {
        "messages": [{"role": "user", "content": content}],
        "model": model,
        "max_tokens": max_tokens,
        "temperature": 0,
        "stop": list(STOP),
        "seed": FEWSHOT_SEED,
        "top_p": 1,
    }


def normalise(text: str) -> str:
    for pattern in IGNORE:
        text = re.sub(pattern, "", text)
    return text.lower() if IGNORE_CASE else text


def exact_match(prediction: str, reference: str) -> bool:
    """lm-eval's exact_match with the task's regexes_to_ignore and ignore_case (no strip)."""
    return normalise(prediction) == normalise(reference)


def score(problem: Problem, completion: str) -> Scored:
    return Scored(
        problem=problem,
        completion=completion,
        extracted={f.name: f.extract(completion) for f in FILTERS},
    )


def chat(base_url: str, body: dict[str, object], timeout: float) -> str:
    """One /v1/chat/completions call; EngineError for any transport or protocol problem."""
    req = urllib.request.Request(
        base_url.rstrip("/") + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read(MAX_RESPONSE_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise EngineError(f"chat request: HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise EngineError(f"chat request: {exc}") from exc
    if len(raw) > MAX_RESPONSE_BYTES:
        raise EngineError("chat response larger than the cap")
    try:
        message = json.loads(raw)["choices"][0]["message"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, IndexError, TypeError) as exc:
        raise EngineError(
            f"chat response is not an OpenAI chat completion ({type(exc).__name__})"
        ) from exc
    return answer_text(message)


@dataclass(frozen=True, kw_only=True)
class Report:
    scored: tuple[Scored, ...]
    errors: tuple[str, ...]

    def accuracy(self, metric: str) -> Accuracy:
        return Accuracy(sum(s.ok(metric) for s in self.scored), len(self.scored))


def run(
    base_url: str,
    model: str,
    problems: Sequence[Problem],
    shots_for: Callable[[Problem], list[Problem]],
    max_tokens: int,
    concurrency: int = 8,
    timeout: float = 300.0,
) -> Report:
    """Ask the server every problem (at most `concurrency` in flight) and score the answers."""
    # Shots are drawn before any request, in document order, as lm-eval builds its requests.
    bodies = [request_body(model, user_message(p, shots_for(p)), max_tokens) for p in problems]

    def one(item: tuple[Problem, dict[str, object]]) -> Scored | str:
        try:
            return score(item[0], chat(base_url, item[1], timeout))
        except EngineError as exc:
            return str(exc)

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        outcomes = list(pool.map(one, zip(problems, bodies, strict=True)))
    return Report(
        scored=tuple(o for o in outcomes if isinstance(o, Scored)),
        errors=tuple(o for o in outcomes if isinstance(o, str)),
    )


def verdict(report: Report, threshold: float, source: str) -> tuple[str, str | None]:
    """validate_scores.py's rule: every exact_match metric >= threshold; plus no lost sample."""
    if not report.scored:
        first = f" ({report.errors[0]})" if report.errors else ""
        return "fail", "zero scored samples" + first
    if report.errors:
        return "fail", f"{len(report.errors)} request(s) failed, first: {report.errors[0]}"
    low = [
        f"exact_match,{m} = {report.accuracy(m).value:.4f}"
        for m in METRICS
        if report.accuracy(m).value < threshold
    ]
    if low:
        return "fail", f"{'; '.join(low)} (< {threshold} from {source})"
    return "pass", None
