"""Golden acceptance lengths, scoped to config keys: reading what a key runs (its master-config
block, its srt-slurm recipes and launch scripts) into settings, shell variables resolved and draft
lengths found. The judging and the entry point `check` are in `validate.golden_al`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from ..core import engines
from ..core.files import read_capped
from ..core.findings import Finding
from ..core.status import NA
from .errors import ValidateError
from .golden_files import (
    _GOLDEN_REF,
    _SEP,
    _THINK_OFF,
    _THINK_ON,
    _TOP_KEY,
    ACCEPTANCE,
    MAX_FILE,
    GoldenFile,
)

# ---------------------------------------------------------------- scoped to config keys
#
# `check(repo, keys)` is C9 and `relpipe review --check golden-al`: only the files the given
# keys run are read, so other keys never change a release's verdict. For each key with an
# agentic-coding search-space item whose spec-decoding is not none:
#   * its master-config block (`SYNTHETIC_ACCEPTANCE_LENGTH=X`, which InferenceX's injector puts
#     into the recipe; `CONFIG_FILE=...` names the recipe);
#   * the srt-slurm recipes named by `CONFIG_FILE` (`recipes/X[:selector]` is
#     `benchmarks/multi_node/srt-slurm-recipes/X`; the selector is dropped: every block counts);
#   * the single-node launch script the runners pick (`benchmarks/single_node/agentic/
#     <prefix>_<precision>_<hw>_<framework><_mtp>.sh`, else `..._<hw><_trt><_mtp>.sh`).
# In those files comments are ignored, shell variables are resolved (`X=3`, `${X:-3}`; every
# assignment of a variable that feeds a setting is its own setting, reported at its line) and the
# draft length K is the stated one nearest to the setting (vLLM `num_speculative_tokens`, SGLang
# `speculative-num-steps`, ATOM `--num-speculative-tokens`, TensorRT-LLM `max_draft_len`).

_TOLERANCE = Decimal("0.005")  # golden values have two decimals
# A value as written: a number, or a shell variable (`$X`, `${X}`, `${X:-default}`).
_V = r"""[\\"']*(\$\{[A-Za-z_]\w*(?::?-[^}]*)?\}|\$[A-Za-z_]\w*|[0-9]+(?:\.[0-9]+)?)"""
# The scoped scanner also resolves shell variables (`$X`, `${X:-2}`) as values.
KEY_SPELLINGS: tuple[tuple[str, re.Pattern[str], str], ...] = tuple(
    (engine, re.compile(name + _V), kind) for engine, name, kind in ACCEPTANCE if kind != "injected"
)
_INJECTED = next(re.compile(name + _V) for _, name, kind in ACCEPTANCE if kind == "injected")
_SRT_RECIPE = re.compile(r"(?<![\w-])srt-recipe\s*:\s*([^\s,}#]+)")
# K as each declared engine states it (`draft-tokens` of its declaration: ATOM's
# --num-speculative-tokens, vLLM's num_speculative_tokens, SGLang's --speculative-num-steps),
# and TensorRT-LLM's max_draft_len.
_K_SPELLINGS = (
    *(re.compile(s.regex() + _V) for e in engines.declarations() for s in e.draft_tokens),
    re.compile(r"max_draft_len" + _SEP + _V),
)
_ASSIGN = re.compile(
    r"^\s*(?:export\s+|local\s+|readonly\s+|declare\s+(?:-\w+\s+)*)?([A-Za-z_]\w*)=(\S*)"
)
_VAR = re.compile(r"^\$\{?([A-Za-z_]\w*)(?::?-([^}]*))?\}?$")
_SYNTHETIC_ON = re.compile(r"SYNTHETIC_ACCEPTANCE=true\b")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")


@dataclass(frozen=True, kw_only=True)
class KeySetting:
    """One agentic spec-decode acceptance setting of a config key and its verdict.

    `verdict`: PASS (equals the golden AL), FAIL (differs), WARN (cannot be checked: K, model or
    golden value unknown), N/A (no forced acceptance: real drafting, or InferenceX resolves the
    value from the golden files at run time).
    """

    key: str
    path: str  # repository-relative
    line: int  # 1-based; 0 for the whole file
    engine: str
    k: int | None
    k_source: str | None  # path:line where K is stated
    written: str | None  # the value as configured
    configured: Decimal | None  # the AL it means (TensorRT-LLM: +1; ATOM rate: 1 + rate * K)
    golden: Decimal | None
    golden_file: str | None
    thinking: str
    verdict: str
    reason: str

    def to_json(self) -> dict[str, object]:
        return {
            "key": self.key,
            "source": f"{self.path}:{self.line}" if self.line else self.path,
            "engine": self.engine,
            "k": self.k,
            "k_source": self.k_source,
            "written": self.written,
            "configured_al": None if self.configured is None else str(self.configured),
            "golden_al": None if self.golden is None else str(self.golden),
            "golden_file": self.golden_file,
            "thinking": self.thinking,
            "verdict": self.verdict,
            "reason": self.reason,
        }

    def finding(self) -> Finding:
        """As a `Finding` (code golden-pass / golden-fail / golden-warn / golden-na)."""
        code = "golden-na" if self.verdict == NA else f"golden-{self.verdict.lower()}"
        return Finding(
            path=self.path, line=self.line, code=code, message=f"{self.key}: {self.reason}"
        )


@dataclass(frozen=True, kw_only=True)
class _Text:
    """A scanned file: raw lines (comments kept, for golden-file hints) and code lines."""

    path: str
    raw: tuple[str, ...]
    code: tuple[str, ...]  # comments blanked, same numbering
    first: int = 1  # line number of raw[0] (a master block starts mid-file)

    def assignments(self, name: str) -> list[tuple[int, str]]:
        out = []
        for n, line in enumerate(self.code, self.first):
            m = _ASSIGN.match(line)
            if m and m.group(1) == name:
                out.append((n, m.group(2).strip("'\"")))
        return out


def _uncomment(line: str, quote: str) -> tuple[str, str]:
    """The line without its `#` comment (one that starts a word outside quotes)."""
    prev = " "
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 2
                prev = "x"
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and prev in " \t;(":
            return line[:i], ""
        prev = ch
        i += 1
    return line, quote if quote == '"' else ""  # YAML single quotes never span lines here


def _scan(path: str, text: str) -> _Text:
    raw = tuple(text.split("\n"))
    code, quote = [], ""
    for line in raw:
        kept, quote = _uncomment(line, quote)
        code.append(kept)
    return _Text(path=path, raw=raw, code=tuple(code))


def _values(token: str, text: _Text, at: int, depth: int = 0) -> list[tuple[int, str]]:
    """(line, value) pairs a written token stands for: itself, or each assignment of its
    variable."""
    token = token.strip("\\\"'")
    m = _VAR.match(token)
    if m is None:
        return [(at, token)]
    if depth > 4:
        return []
    name, default = m.group(1), m.group(2)
    out = []
    for line, value in text.assignments(name):
        inner = _VAR.match(value.strip("\\\"'"))
        if inner and inner.group(1) == name:  # X="${X:-2}": the default is the value here
            if inner.group(2):
                out.append((line, inner.group(2).strip("\\\"'")))
            continue
        out += _values(value, text, line, depth + 1)
    if not out and default:
        out.append((at, default.strip("\\\"'")))
    return out


def _drafts(text: _Text) -> list[tuple[int, int]]:
    """Every stated draft length of a file as (line, K)."""
    out = []
    for n, line in enumerate(text.code, text.first):
        for pattern in _K_SPELLINGS:
            for m in pattern.finditer(line):
                out += [(at, int(v)) for at, v in _values(m.group(1), text, n) if v.isdigit()]
    return sorted(set(out))


_YAML_KEY = re.compile(r"^(\s*)(?:-\s+)?([A-Za-z_][\w.-]*)\s*:")


def _roles(text: _Text) -> list[str]:
    """Per line (0-based), "prefill" or "decode" when an enclosing YAML key names that worker
    (`prefill_environment:`, `decode:` ...), else ""."""
    stack: list[tuple[int, str]] = []
    out = []
    for line in text.code:
        m = _YAML_KEY.match(line)
        if m:
            indent = len(m.group(1))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append((indent, m.group(2).lower()))
        role = ""
        for _, name in stack:
            if "prefill" in name or "decode" in name:
                role = "prefill" if "prefill" in name else "decode"
        out.append(role)
    return out


def _nearest_k(text: _Text, drafts: list[tuple[int, int]], at: int) -> tuple[int, int] | None:
    """The stated K nearest to line `at`, from the same worker role. A setting in a prefill
    worker's block takes the decode worker's K: acceptance happens where tokens are decoded."""
    roles = {n: r for n, r in enumerate(_roles(text), text.first)}
    role = roles.get(at, "")
    decode = any(roles.get(d[0]) == "decode" for d in drafts)
    want = "decode" if role == "prefill" and decode else role
    pool = [d for d in drafts if roles.get(d[0]) == want] or drafts
    return min(pool, key=lambda d: (abs(d[0] - at), d[0]), default=None)


def _thinking(code: str) -> tuple[str, bool]:
    off, on = _THINK_OFF.search(code), _THINK_ON.search(code)
    if off and not on:
        return "thinking_off", False
    return "thinking_on", on is None


def _satisfied(req: tuple[str, str], code: str) -> bool:
    """The sources state the curve's measured setting. A forced acceptance replaces the
    rejection sampler (vLLM's `rejection_sample_method: synthetic`, which InferenceX's injector
    sets for `SYNTHETIC_ACCEPTANCE_LENGTH`), so a curve's rejection method only rules a source
    out when the source names another real method; the draft's sample method must be stated.
    (The Kimi-K3 recipes run `draft_sample_method: probabilistic`: their curve is
    kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method.yaml.)"""
    name, value = req
    said = re.compile(re.escape(name) + r"""[\\"'\s:=]*([A-Za-z_]\w*)""")
    stated = {m.group(1) for m in said.finditer(code)}
    if name.endswith("rejection_sample_method"):
        return not (stated - {value, "synthetic"})
    return value in stated


def _choose(
    golden: tuple[GoldenFile, ...], prefix: str, texts: list[_Text]
) -> tuple[list[GoldenFile], str]:
    """The golden files for a setting and why: a file named in its sources, else the model's
    files whose measured speculative-config the sources state, best by method words."""
    raw = "\n".join(line for t in texts for line in t.raw)
    code = "\n".join(line for t in texts for line in t.code)
    named = {m.group(1) for m in _GOLDEN_REF.finditer(raw)}
    hinted = [g for g in golden if g.name in named]
    if hinted:
        return hinted, "named in the source"
    mine = [g for g in golden if g.name.startswith((f"{prefix}_", f"{prefix}-"))]
    fitting = [g for g in mine if all(_satisfied(r, code) for r in g.requires)]
    # The most specific curve whose settings the recipe states wins over the generic one.
    most = max((len(g.requires) for g in fitting), default=0)
    fitting = [g for g in fitting if len(g.requires) == most]
    lower = code.lower()
    scores = {
        g.name: sum(
            w in lower for w in re.split(r"[_-]", g.name[len(prefix) + 1 :]) if w and w.isalpha()
        )
        for g in fitting
    }
    best = max(scores.values(), default=0)
    return [g for g in fitting if scores[g.name] == best], f"model prefix {prefix}"


def _read_repo_file(repo: Path, rel: str) -> str | None:
    """A text file inside the repository, or None (absent, outside, not a regular file)."""
    root = repo.resolve()
    path = (repo / rel).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        return None
    try:
        data = read_capped(path, MAX_FILE, "file", error=ValidateError)
        return data.decode("utf-8")
    except (ValidateError, UnicodeDecodeError):
        return None


def _engine_of(framework: str) -> str:
    """The engine title a master's `framework:` names: a declared engine's (by its framework
    words), TensorRT-LLM for `trt`, else the framework itself."""
    declared = engines.of_framework(framework)
    if declared is not None:
        return declared.title
    return "TensorRT-LLM" if "trt" in framework else framework or "unknown"


def _spec_items(cfg: Mapping[str, object]) -> list[Mapping[str, object]]:
    scenarios = cfg.get("scenarios")
    entries = scenarios.get("agentic-coding") if isinstance(scenarios, dict) else None
    items: list[Mapping[str, object]] = []
    for entry in entries if isinstance(entries, list) else []:
        space = entry.get("search-space") if isinstance(entry, dict) else None
        items += [
            i
            for i in (space if isinstance(space, list) else [])
            if isinstance(i, dict) and i.get("spec-decoding", "none") != "none"
        ]
    return items


def _key_block(lines: list[str], key: str) -> tuple[int, int]:
    """1-based first and last line of a top-level key's block in a master file."""
    heads = [n for n, line in enumerate(lines, 1) if _TOP_KEY.match(line)]
    names = (f"{key}:", f'"{key}":', f"'{key}':")
    start = next((n for n in heads if lines[n - 1].split("#")[0].rstrip() in names), 1)
    later = [n for n in heads if n > start]
    end = later[0] - 1 if later else len(lines)
    while start > 1 and lines[start - 2].startswith("#"):  # the comments that introduce the key
        start -= 1
    return start, end
