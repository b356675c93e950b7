"""Golden acceptance-length (AL) check: every synthetic/forced speculative-decoding acceptance
setting in configs, recipes and scripts must equal the golden AL for its model, thinking mode and
draft length (InferenceX `golden_al_distribution/*.yaml`: model -> thinking_on/off -> K -> AL).

Two entry points. `check(repo, keys)` (C9, `relpipe review --check golden-al`) is scoped to config
keys and reads what InferenceX runs for them (master block, CONFIG_FILE recipes, single-node
launch scripts; see the section "scoped to config keys" below). `evaluate(paths, golden_dir)`
scans given files on their own (the rules below); it cannot know a key's draft length when the
file does not state it.

Engine spellings (value -> AL):
  ATOM          `--spec-decode-acceptance-length X`, `spec-decode-acceptance-length: X`   AL = X
  vLLM          `synthetic_acceptance_length: X` (speculative-config JSON)                   AL = X
  SGLang        `SGLANG_SIMULATE_ACC_LEN=X`                                                   AL = X
  TensorRT-LLM  `TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=X` (accepted drafts)          AL = X + 1
  InferenceX    `SYNTHETIC_ACCEPTANCE_LENGTH=X` (master-config additional-settings)           AL = X

Context for each setting is the nearest statement in the same scope: the master-config key block
(with the comments just above it) for master configs, the whole file otherwise. The golden file is
the one the context names (`golden_al_distribution/<file>.yaml`), else the files whose name starts
with the model prefix (`model-prefix:` or the script name), narrowed by method words the context
mentions (e.g. `gqa`); a setting matching none of the remaining candidates is reported. A setting
whose model or draft length cannot be determined is reported too (fail closed). Thinking mode
defaults to thinking_on (agentic coding) when the context does not say, and findings say so.
Names are not read as draft lengths: in the real masters `-mtp2` keys/recipes (e.g.
dsv4-fp4-gb200-dynamo-vllm-agentic-mtp2-agg) run three draft tokens, so `mtpN` would lie.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from relpipe.changelog import repo as benchrepo
from relpipe.changelog.configs.load import MasterConfigs, load_masters, load_yaml
from relpipe.changelog.errors import ChangelogError
from relpipe.core.files import read_capped
from relpipe.core.findings import Finding
from relpipe.core.status import FAIL, NA, PASS, WARN
from relpipe.validate.errors import ValidateError

MAX_FILE = 16 * 1024 * 1024
_NUM = r"\"?'?([0-9]+(?:\.[0-9]+)?)"
_SEP = r"""[\\"']*\s*[:=]\s*"""
# Every engine's spelling of a forced acceptance, declared once: (engine, name and separator,
# kind). Kind "al" is the AL itself, "rate" ATOM's (AL - 1) / K, "drafts" the accepted drafts
# TensorRT-LLM forces (AL - 1), "injected" InferenceX's SYNTHETIC_ACCEPTANCE_LENGTH (master
# additional-settings; the injector writes it into the recipe). Both scanners compile from it.
ACCEPTANCE: tuple[tuple[str, str, str], ...] = (
    ("ATOM", r"--spec-decode-acceptance-length(?:=|\s+)", "al"),
    ("ATOM", r"(?<![\w-])spec-decode-acceptance-length\s*:\s*", "al"),
    ("ATOM", r"--spec-decode-acceptance-rate(?:=|\s+)", "rate"),
    ("ATOM", r"(?<![\w])SIMULATE_ACC_LEN" + _SEP, "al"),
    ("SGLang", r"SGLANG_SIMULATE_ACC_LEN" + _SEP, "al"),
    ("vLLM", r"synthetic_acceptance_length" + _SEP, "al"),
    ("TensorRT-LLM", r"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS" + _SEP, "drafts"),
    ("InferenceX", r"SYNTHETIC_ACCEPTANCE_LENGTH" + _SEP, "injected"),
)
# (engine, pattern, accepted-drafts offset): AL = value + offset. The file scanner (`evaluate`)
# reads numbers only and does not know K, so ATOM's rate is not among them.
SPELLINGS: tuple[tuple[str, re.Pattern[str], int], ...] = tuple(
    (engine, re.compile(name + _NUM), 1 if kind == "drafts" else 0)
    for engine, name, kind in ACCEPTANCE
    if kind != "rate"
)
_DRAFT = re.compile(
    r"num_speculative_tokens\"?'?\s*[:=]\s*(\d+)|--num-speculative-tokens(?:=|\s+)(\d+)"
    r"|num-speculative-tokens\s*:\s*(\d+)|--speculative-num-steps(?:=|\s+)(\d+)"
    r"|SPECULATIVE_NUM_STEPS\s*[:=]\s*(\d+)|DECODE_MTP_SIZE\s*[:=]\s*(\d+)"
    r"|max_draft_len\"?'?\s*[:=]\s*(\d+)|\b(\d+|one|two|three|four|five|six|seven|eight)"
    r" (?:draft|speculative) tokens\b|\bK\s*=\s*(\d+)\b"
)
_THINK_OFF = re.compile(
    r"thinking_off|thinking-off|enable_thinking\"?'?\s*[:=]\s*\"?'?(?:false|False)"
    r"|thinking_mode\"?'?\s*[:=]\s*\"?'?disabled|\"thinking\"\s*:\s*false"
)
_THINK_ON = re.compile(
    r"thinking_on|thinking-on|enable_thinking\"?'?\s*[:=]\s*\"?'?(?:true|True)"
    r"|thinking_mode\"?'?\s*[:=]\s*\"?'?enabled|\"thinking\"\s*:\s*true"
)
_GOLDEN_REF = re.compile(r"golden_al_distribution/\s*([A-Za-z0-9_.-]+?)\.yaml")
_PREFIX = re.compile(
    r"model-prefix\s*:\s*\"?([A-Za-z0-9_.-]+)|MODEL_PREFIX\s*=\s*\"?([A-Za-z0-9_.-]+)"
)
_TOP_KEY = re.compile(r"^[^\s#-][^:]*:")


# The reason of an agentic spec-decode key whose launch path sets no synthetic acceptance
# target (the checklist requires one: `relpipe review` FAILs it).
NO_TARGET = "no forced acceptance length"


@dataclass(frozen=True)
class GoldenFile:
    name: str  # file stem, e.g. minimaxm3_eagle3_gqa
    model: str  # the model key inside, e.g. minimax-m3
    values: Mapping[tuple[str, int], Decimal]  # (thinking_on|thinking_off, draft length) -> AL
    # speculative-config settings the curve was measured with (its `# speculative-config:`
    # header, e.g. draft_sample_method=probabilistic | rejection_sample_method=block)
    requires: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Setting:
    path: str
    line: int
    engine: str
    raw: Decimal
    al: Decimal
    draft: int | None
    thinking: str
    thinking_assumed: bool
    prefix: str | None
    golden_hint: str | None
    context: str  # lower-cased context text, for method words


@dataclass(frozen=True)
class Result:
    setting: Setting
    ok: bool
    code: str
    message: str


def load_golden(golden_dir: str | Path) -> tuple[GoldenFile, ...]:
    """All golden files of a directory (untrusted YAML; malformed files are errors)."""
    folder = Path(golden_dir)
    files = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    if not files:
        raise ValidateError(
            f"no golden AL files (*.yaml) in {folder}; point --golden at golden_al_distribution/"
        )
    out = []
    for path in files:
        try:
            doc = load_yaml(path.read_text(encoding="utf-8"), str(path))
        except (OSError, UnicodeDecodeError) as exc:
            raise ValidateError(f"cannot read golden file {path}: {exc}") from None
        except ChangelogError as exc:
            raise ValidateError(str(exc)) from None
        if isinstance(doc, dict):  # 2026-10 files carry `_metadata: {draft-model: ...}` too
            doc = {k: v for k, v in doc.items() if not str(k).startswith("_")}
        if not isinstance(doc, dict) or len(doc) != 1:
            raise ValidateError(f"golden file {path} must map exactly one model to thinking modes")
        ((model, modes),) = doc.items()
        values: dict[tuple[str, int], Decimal] = {}
        if not isinstance(modes, dict):
            raise ValidateError(
                f"golden file {path}: {model} must map thinking_on/thinking_off to tables"
            )
        for mode, table in modes.items():
            if mode not in ("thinking_on", "thinking_off") or not isinstance(table, dict):
                raise ValidateError(
                    f"golden file {path}: {mode!r} must be thinking_on or thinking_off with a table"
                )
            for draft, al in table.items():
                if (
                    not isinstance(draft, int)
                    or isinstance(al, bool)
                    or not isinstance(al, (int, float))
                ):
                    raise ValidateError(
                        f"golden file {path}: {mode}.{draft} must map an integer draft "
                        "length to a number"
                    )
                values[(mode, draft)] = Decimal(str(al))
        out.append(GoldenFile(path.stem, str(model), values, _requirements(path)))
    return tuple(out)


_REQUIRES = re.compile(r"^#\s*speculative-config:\s*(.+)$", re.MULTILINE)


def _requirements(path: Path) -> tuple[tuple[str, str], ...]:
    """`name=value` pairs of a golden file's `# speculative-config:` header line."""
    m = _REQUIRES.search(path.read_text(encoding="utf-8"))
    if m is None:
        return ()
    pairs = (part.strip().partition("=") for part in m.group(1).split("|"))
    return tuple((k.strip(), v.strip()) for k, sep, v in pairs if sep and k.strip() and v.strip())


def _blocks(lines: list[str], is_master: bool) -> list[tuple[int, int]]:
    """Scopes as (first, last) 0-based line ranges: master-config keys with their comments."""
    if not is_master:
        return [(0, len(lines) - 1)]
    starts = [i for i, line in enumerate(lines) if _TOP_KEY.match(line)]
    out = []
    for n, start in enumerate(starts):
        first = start
        while first > 0 and lines[first - 1].startswith("#"):
            first -= 1
        last = (starts[n + 1] - 1) if n + 1 < len(starts) else len(lines) - 1
        out.append((first, last))
    return out


def _nearest(
    lines: list[str], block: tuple[int, int], at: int, pattern: re.Pattern[str]
) -> tuple[int, re.Match[str]] | None:
    best: tuple[int, int, re.Match[str]] | None = None
    for i in range(block[0], block[1] + 1):
        for m in pattern.finditer(lines[i]):
            distance = abs(i - at)
            if best is None or distance < best[0]:
                best = (distance, i, m)
    return None if best is None else (best[1], best[2])


_WORDS = {
    w: str(i)
    for i, w in enumerate(("one", "two", "three", "four", "five", "six", "seven", "eight"), 1)
}


def _group(m: re.Match[str]) -> str:
    value = next(g for g in m.groups() if g is not None)
    return _WORDS.get(value, value)


def find_settings(path: str, text: str) -> list[Setting]:
    """Every acceptance-length setting of one file, with the context that decides its golden."""
    lines = text.split("\n")
    is_master = path.endswith((".yaml", ".yml")) and any(
        line.startswith("  scenarios:") for line in lines
    )
    blocks = _blocks(lines, is_master)
    out = []
    for number, line in enumerate(lines):
        for engine, pattern, offset in SPELLINGS:
            for m in pattern.finditer(line):
                block = next(((a, b) for a, b in blocks if a <= number <= b), (0, len(lines) - 1))
                try:
                    raw = Decimal(m.group(1))
                except InvalidOperation:
                    continue
                draft = _nearest(lines, block, number, _DRAFT)
                off, on = (
                    _nearest(lines, block, number, _THINK_OFF),
                    _nearest(lines, block, number, _THINK_ON),
                )
                if off and (not on or abs(off[0] - number) < abs(on[0] - number)):
                    thinking, assumed = "thinking_off", False
                else:
                    thinking, assumed = "thinking_on", on is None
                prefix = _nearest(lines, block, number, _PREFIX)
                hint = _nearest(lines, block, number, _GOLDEN_REF)
                stem = Path(path).name.split("_", 1)[0] if "_" in Path(path).name else None
                context = "\n".join(lines[block[0] : block[1] + 1]).lower()
                out.append(
                    Setting(
                        path,
                        number + 1,
                        engine,
                        raw,
                        raw + offset,
                        int(_group(draft[1])) if draft else None,
                        thinking,
                        assumed,
                        _group(prefix[1]) if prefix else stem,
                        hint[1].group(1) if hint else None,
                        context,
                    )
                )
    return out


def _candidates(s: Setting, golden: tuple[GoldenFile, ...]) -> list[GoldenFile]:
    if s.golden_hint is not None:
        return [g for g in golden if g.name == s.golden_hint]
    if s.prefix is None:
        return []
    found = [g for g in golden if g.name.startswith(f"{s.prefix}_")]
    # Prefer the variants whose method words (eagle3, gqa, dspark, mtp) the context mentions most.
    scores = {
        g.name: sum(word in s.context for word in g.name[len(s.prefix) + 1 :].split("_"))
        for g in found
    }
    best = max(scores.values(), default=0)
    return [g for g in found if scores[g.name] == best]


def _spelled(s: Setting, al: Decimal) -> str:
    return f"{al - 1}" if s.engine == "TensorRT-LLM" else f"{al}"


def evaluate(paths: Iterable[str | Path], golden_dir: str | Path) -> list[Result]:
    """One result per acceptance-length setting found in the files."""
    golden = load_golden(golden_dir)
    results = []
    for path in paths:
        p = Path(path)
        try:
            if p.stat().st_size > MAX_FILE:
                raise ValidateError(f"{p} is larger than {MAX_FILE} bytes; refusing to scan it")
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValidateError(f"cannot read {p}: {exc.strerror}; check the path") from None
        except UnicodeDecodeError:
            raise ValidateError(
                f"{p} is not UTF-8 text; pass configs, recipes and scripts only"
            ) from None
        results += [_judge(s, golden) for s in find_settings(str(p), text)]
    return results


def _judge(s: Setting, golden: tuple[GoldenFile, ...]) -> Result:
    what = f"{s.engine} acceptance setting {s.raw}" + (f" (AL {s.al})" if s.al != s.raw else "")
    if s.draft is None:
        return Result(
            s,
            False,
            "golden-no-draft",
            f"{what}: no draft length (num_speculative_tokens, "
            "--num-speculative-tokens, ...) found near it; cannot check",
        )
    candidates = _candidates(s, golden)
    if not candidates:
        named = s.golden_hint or s.prefix or "unknown model"
        return Result(
            s,
            False,
            "golden-no-model",
            f"{what}: no golden file for {named}; name it "
            "(golden_al_distribution/<file>.yaml) or set model-prefix",
        )
    mode = s.thinking + (" (assumed: the context does not say)" if s.thinking_assumed else "")
    goldens = [(g, g.values.get((s.thinking, s.draft))) for g in candidates]
    known = [(g, v) for g, v in goldens if v is not None]
    if not known:
        return Result(
            s,
            False,
            "golden-no-value",
            f"{what}: golden {', '.join(g.name for g in candidates)} "
            f"has no {s.thinking} value for {s.draft} draft tokens",
        )
    for g, value in known:
        if value == s.al:
            return Result(
                s,
                True,
                "golden-ok",
                f"{what} matches golden {value} ({g.name} {g.model} "
                f"{mode}, {s.draft} draft tokens)",
            )
    expected = "; ".join(f"{v} in {g.name} ({g.model})" for g, v in known)
    fix = (
        ""
        if s.engine != "TensorRT-LLM"
        else f"; TensorRT-LLM counts accepted drafts, so set {_spelled(s, known[0][1])}"
    )
    if s.golden_hint is None:
        fix += (
            "; if another golden file applies, name it "
            "(golden_al_distribution/<file>.yaml) near the setting"
        )
    return Result(
        s,
        False,
        "golden-mismatch",
        f"{what} does not match the golden AL {expected} for {mode}, {s.draft} draft tokens{fix}",
    )


def check_paths(paths: Iterable[str | Path], golden_dir: str | Path) -> list[Finding]:
    """Findings for every setting that does not match its golden AL (or cannot be checked)."""
    return [
        Finding(path=r.setting.path, line=r.setting.line, code=r.code, message=r.message)
        for r in evaluate(paths, golden_dir)
        if not r.ok
    ]


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
_K_SPELLINGS = (
    re.compile(r"num_speculative_tokens" + _SEP + _V),
    re.compile(r"--num-speculative-tokens(?:=|\s+)" + _V),
    re.compile(r"(?<![\w-])num-speculative-tokens\s*:\s*" + _V),
    re.compile(r"--speculative-num-steps(?:=|\s+)" + _V),
    re.compile(r"(?<![\w-])speculative-num-steps\s*:\s*" + _V),
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


@dataclass(frozen=True)
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
    return _Text(path, raw, tuple(code))


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
    for word, engine in (("atom", "ATOM"), ("sglang", "SGLang"), ("trt", "TensorRT-LLM")):
        if word in framework:
            return engine
    return "vLLM" if "vllm" in framework else framework or "unknown"


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


def _judge_key(
    *,
    key: str,
    text: _Text,
    line: int,
    engine: str,
    written: str,
    kind: str,
    k: tuple[str, int, int] | None,  # (path, line, K)
    prefix: str,
    context: list[_Text],
    golden: tuple[GoldenFile, ...],
) -> KeySetting:
    thinking, assumed = _thinking("\n".join(c for t in context for c in t.code))
    kval = k[2] if k else None

    def row(
        verdict: str,
        reason: str,
        configured: Decimal | None = None,
        found: tuple[GoldenFile, Decimal] | None = None,
    ) -> KeySetting:
        return KeySetting(
            key=key,
            path=text.path,
            line=line,
            engine=engine,
            k=kval,
            k_source=f"{k[0]}:{k[1]}" if k else None,
            written=written,
            configured=configured,
            golden=found[1] if found else None,
            golden_file=found[0].name if found else None,
            thinking=thinking,
            verdict=verdict,
            reason=reason,
        )

    if _NUMBER.fullmatch(written) is None:
        return row(WARN, f"{engine} acceptance value {written!r} is not a number; cannot check")
    value = Decimal(written)
    if kval is None:
        return row(
            WARN,
            f"{engine} acceptance {written}: no draft length (num_speculative_tokens, "
            "speculative-num-steps, --num-speculative-tokens) stated near it; cannot check",
        )
    if kind == "rate":
        configured = (1 + value * kval).quantize(Decimal("0.01"))
    else:
        configured = value + (1 if kind == "drafts" else 0)
    chosen, why = _choose(golden, prefix, context)
    mode = thinking + (" (assumed: the sources do not say)" if assumed else "")
    known = [(g, g.values[(thinking, kval)]) for g in chosen if (thinking, kval) in g.values]
    if not known:
        names = ", ".join(g.name for g in chosen) or f"none for model prefix {prefix}"
        return row(
            WARN,
            f"AL {configured}: no golden value for {mode}, K={kval} (golden files: {names})",
            configured,
        )
    for g, v in known:
        if abs(v - configured) <= _TOLERANCE:
            return row(
                PASS,
                f"AL {configured} equals golden {v} ({g.name}, {mode}, K={kval}; {why})",
                configured,
                (g, v),
            )
    g, v = known[0]
    spelled = (
        f"{v - 1}" if kind == "drafts" else f"{(v - 1) / kval:.4f}" if kind == "rate" else f"{v}"
    )
    return row(
        FAIL,
        f"AL {configured} differs from golden {v} ({g.name}, {mode}, K={kval}; {why}); "
        f"set {spelled}",
        configured,
        (g, v),
    )


def check(repo: str | Path, keys: Iterable[str]) -> list[KeySetting]:
    """Every agentic spec-decode acceptance setting of the given config keys, judged (see above).

    Unknown keys raise ValidateError; unreadable or missing sources become WARN rows.
    """
    return _run(Path(repo), list(keys))[0]


def inputs_digest(repo: str | Path, keys: Iterable[str]) -> str:
    """SHA-256 over everything `check(repo, keys)` reads (golden files, masters, the keys'
    recipes and scripts): a cache key that changes whenever the verdict could."""
    found = benchrepo.open_repo(repo)
    root = found.root
    _, read = _run(root, list(keys))
    h = hashlib.sha256()
    golden_dir = root / found.layout.golden
    paths = found.masters()
    paths += sorted(golden_dir.glob("*.yaml")) if golden_dir.is_dir() else []
    for path in paths:
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for rel, text in sorted(read.items()):
        body = "\n".join(text.raw).encode() if text else b"(absent)"
        h.update(rel.encode() + b"\0" + body + b"\0")
    return h.hexdigest()


def _run(root: Path, keys: list[str]) -> tuple[list[KeySetting], dict[str, _Text | None]]:
    try:
        found = benchrepo.open_repo(root)
        root = found.root
        masters = load_masters(found.masters())
    except ChangelogError as exc:
        raise ValidateError(str(exc)) from None
    golden_dir = root / found.layout.golden
    golden = load_golden(golden_dir) if golden_dir.is_dir() else ()
    out: list[KeySetting] = []
    texts: dict[str, _Text | None] = {}

    def scanned(rel: str) -> _Text | None:
        if rel not in texts:
            body = _read_repo_file(root, rel)
            texts[rel] = None if body is None else _scan(rel, body)
        return texts[rel]

    for key in keys:
        if key not in masters.configs:
            raise ValidateError(
                f"config key {key!r} is not in {found.layout.masters}/*-master.yaml under {root}"
            )
        out += _check_key(key, masters, found, scanned, golden)
    return out, texts


@dataclass(frozen=True, kw_only=True)
class _Key:
    """One key being checked: its master block and what every row of it shares."""

    key: str
    block: _Text
    prefix: str
    framework: str
    golden: tuple[GoldenFile, ...]

    def judge(self, **what: Any) -> KeySetting:
        """`_judge_key` for this key (the setting's own fields in `what`)."""
        return _judge_key(key=self.key, prefix=self.prefix, golden=self.golden, **what)

    def row(self, verdict: str, reason: str) -> KeySetting:
        return _unchecked(
            self.key, self.block.path, self.block.first, self.framework, verdict, reason
        )


@dataclass
class _Sources:
    """The files a key's settings live in: recipes (with the master line naming each), the
    single-node launch script, the master block itself; and what was named but not read."""

    recipes: list[tuple[int, _Text]]
    script: _Text | None
    texts: list[_Text]
    missing: list[str]


def _check_key(
    key: str,
    masters: MasterConfigs,
    bench: benchrepo.Repo,
    scanned: Callable[[str], _Text | None],
    golden: tuple[GoldenFile, ...],
) -> list[KeySetting]:
    cfg = masters.configs[key]
    items = _spec_items(cfg)
    if not items:
        return []
    master = masters.origin[key]
    lines = master.read_text(encoding="utf-8").split("\n")
    start, end = _key_block(lines, key)
    block = _Text(
        master.relative_to(bench.root).as_posix(),
        tuple(lines[start - 1 : end]),
        tuple(_uncomment(line, "")[0] for line in lines[start - 1 : end]),
        start,
    )
    this = _Key(
        key=key,
        block=block,
        prefix=str(cfg.get("model-prefix", "")),
        framework=str(cfg.get("framework", "")),
        golden=golden,
    )
    found = _sources(this, cfg, items, bench.layout, scanned)
    out = _injected(this, found)
    for text in found.texts:
        out += _written(this, text)
    missing = found.missing
    if not out and not found.texts:
        # e.g. AMD's multinode wrappers, which derive the AL from K in shell `case` tables
        missing = missing or [
            "no CONFIG_FILE recipe or single-node launch script for this key (a multinode "
            "wrapper's settings are not resolved)"
        ]
    elif not out:
        out.append(_unforced(this, found.texts))
    for rel in missing:
        out.append(this.row(WARN, f"cannot check: source not found or unreadable: {rel}"))
    return out


def _sources(
    this: _Key,
    cfg: Mapping[str, object],
    items: list[Mapping[str, object]],
    layout: benchrepo.Layout,
    scanned: Callable[[str], _Text | None],
) -> _Sources:
    block = this.block
    found = _Sources(recipes=[], script=None, texts=[], missing=[])
    srt = False  # srt-slurm rows (2026-10) run their recipe, not a single-node launch script
    for n, line in enumerate(block.code, block.first):
        refs = [p for p, _, _ in benchrepo.config_file_recipes(layout, [line])]
        srt = srt or bool(_SRT_RECIPE.search(line))
        for ref in _SRT_RECIPE.findall(line):
            refs.append(benchrepo.srt_recipe(layout, cfg, ref.strip("'\""))[0])
        for rel in dict.fromkeys(refs):
            recipe = None if benchrepo.outside(rel) else scanned(rel)
            if recipe is None:
                found.missing.append(f"{rel} (named at {block.path}:{n})")
            elif all(recipe is not r for _, r in found.recipes):
                found.recipes.append((n, recipe))
    # A master block may state the setting itself (relpipe's own example repository does:
    # `num-speculative-tokens: 3, spec-decode-acceptance-length: 2.80` in the arm).
    in_block = any(p.search(line) for _, p, _ in KEY_SPELLINGS for line in block.code)
    if in_block:
        found.texts.append(block)
    if cfg.get("multinode") is not True and not srt:
        hw = benchrepo.runner_hardware(str(cfg.get("runner", "")))
        for spec in sorted({str(i.get("spec-decoding")) for i in items}):
            candidates = benchrepo.script_candidates(layout, cfg, "agentic-coding", spec, hw)
            found.script = next((s for s in map(scanned, candidates) if s is not None), None)
            if found.script is None and not in_block:
                found.missing.append(" or ".join(candidates))
    for _, recipe in found.recipes:
        if recipe not in found.texts:
            found.texts.append(recipe)
    if found.script is not None:
        found.texts.append(found.script)
    return found


def _injected(this: _Key, found: _Sources) -> list[KeySetting]:
    """InferenceX's injected value in the master block; K from the item's recipe or script."""
    out = []
    for n, line in enumerate(this.block.code, this.block.first):
        for m in _INJECTED.finditer(line):
            item = min(found.recipes, key=lambda r: (abs(r[0] - n), r[0]), default=None)
            k_text = item[1] if item else found.script
            drafts = _drafts(k_text) if k_text else []
            distinct = {d[1] for d in drafts}
            k = (k_text.path, drafts[0][0], drafts[0][1]) if k_text and len(distinct) == 1 else None
            out.append(
                this.judge(
                    text=this.block,
                    line=n,
                    engine=_engine_of(this.framework),
                    written=m.group(1).strip("\\\"'"),
                    kind="al",
                    k=k,
                    context=[this.block] + ([k_text] if k_text else []),
                )
            )
    return out


def _written(this: _Key, text: _Text) -> list[KeySetting]:
    """The settings written in one recipe, launch script or master block."""
    drafts = _drafts(text)
    seen: set[tuple[int, str]] = set()
    unresolved: list[tuple[int, str, str]] = []
    out = []
    for n, line in enumerate(text.code, text.first):
        for engine, pattern, kind in KEY_SPELLINGS:
            for m in pattern.finditer(line):
                values = _values(m.group(1), text, n)
                if not values or not all(_NUMBER.fullmatch(v) for _, v in values):
                    unresolved.append((n, engine, m.group(1)))
                    continue
                for at, value in values:
                    if (at, kind) in seen:
                        continue
                    seen.add((at, kind))
                    near = _nearest_k(text, drafts, at)
                    out.append(
                        this.judge(
                            text=text,
                            line=at,
                            engine=engine,
                            written=value,
                            kind=kind,
                            k=(text.path, near[0], near[1]) if near else None,
                            context=[text, this.block],
                        )
                    )
    if not out:
        for n, engine, token in unresolved[:1]:  # a derived value (e.g. awk) alone
            out.append(
                this.judge(
                    text=text,
                    line=n,
                    engine=engine,
                    written=token,
                    kind="al",
                    k=None,
                    context=[text, this.block],
                )
            )
    return out


def _unforced(this: _Key, texts: list[_Text]) -> KeySetting:
    """The key's row when its sources force no acceptance: N/A, or PASS with the curve that
    real drafting runs on as evidence."""
    named = ", ".join(t.path for t in texts)
    auto = any(_SYNTHETIC_ON.search(line) for line in this.block.code)
    reason = (
        "SYNTHETIC_ACCEPTANCE=true without a length: InferenceX resolves it from the golden "
        "files at run time"
        if auto
        else f"{NO_TARGET} in {named}: drafts are accepted as they are"
    )
    curve = None if auto else _real_curve(texts, this.prefix, this.golden)
    if curve is None:
        return this.row(NA, reason)
    gold, (k_path, k_val, k_line), golden_al, mode = curve
    return replace(
        this.row(PASS, reason),
        k=k_val,
        k_source=f"{k_path}:{k_line}",
        golden=golden_al,
        golden_file=gold.name,
        thinking=mode,
        reason=f"{reason}; their golden curve: {gold.name} {mode} K={k_val} AL {golden_al}",
    )


def _real_curve(
    sources: list[_Text], prefix: str, golden: tuple[GoldenFile, ...]
) -> tuple[GoldenFile, tuple[str, int, int], Decimal, str] | None:
    """For real drafting (nothing forced): the one golden value the sources' K, thinking mode
    and draft method select, as evidence that the key runs a measured configuration."""
    drafts = {(t.path, k, line) for t in sources for line, k in _drafts(t)}
    if len({k for _, k, _ in drafts}) != 1:
        return None
    k = min(drafts)
    thinking, _ = _thinking("\n".join(c for t in sources for c in t.code))
    chosen, _ = _choose(golden, prefix, sources)
    known = [(g, g.values[(thinking, k[1])]) for g in chosen if (thinking, k[1]) in g.values]
    if len(known) != 1:
        return None
    return known[0][0], k, known[0][1], thinking


def _unchecked(
    key: str, path: str, line: int, framework: str, verdict: str, reason: str
) -> KeySetting:
    """A key's row when no setting can be compared (N/A, or WARN for a source that is missing)."""
    return KeySetting(
        key=key,
        path=path,
        line=line,
        engine=_engine_of(framework),
        k=None,
        k_source=None,
        written=None,
        configured=None,
        golden=None,
        golden_file=None,
        thinking="thinking_on",
        verdict=verdict,
        reason=reason,
    )
