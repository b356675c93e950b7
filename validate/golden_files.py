"""Golden acceptance lengths: the golden curves (`golden_al_distribution/*.yaml`: model ->
thinking_on/off -> K -> AL), the engine spellings of a forced acceptance length, and the check of
given files on their own (`evaluate`, `check_paths`; see `validate.golden_al` for the rules and
the key-scoped check C9).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from ..changelog.configs.load import load_yaml
from ..changelog.errors import ChangelogError
from ..changelog.repository.era import GOLDEN_FOLDER
from ..core import engines
from ..core.findings import Finding
from .errors import ValidateError

MAX_FILE = 16 * 1024 * 1024
_NUM = r"\"?'?([0-9]+(?:\.[0-9]+)?)"
_SEP = engines.SETTING_SEP
# Every spelling of a forced acceptance: (engine, name and separator, kind). Each declared
# engine's come from its declaration (`acceptance` in engine/declarations/<name>.json: ATOM's
# flag, key, rate flag and SIMULATE_ACC_LEN, SGLang's SGLANG_SIMULATE_ACC_LEN, vLLM's
# synthetic_acceptance_length); TensorRT-LLM's and InferenceX's own are written here. Kind "al"
# is the AL itself, "rate" ATOM's (AL - 1) / K, "drafts" the accepted drafts TensorRT-LLM forces
# (AL - 1), "injected" InferenceX's SYNTHETIC_ACCEPTANCE_LENGTH (master additional-settings; the
# injector writes it into the recipe). Both scanners compile from it.
ACCEPTANCE: tuple[tuple[str, str, str], ...] = (
    *((s.engine, s.regex(), s.kind) for e in engines.declarations() for s in e.acceptance),
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
_GOLDEN_REF = re.compile(GOLDEN_FOLDER + r"/\s*([A-Za-z0-9_.-]+?)\.yaml")
_PREFIX = re.compile(
    r"model-prefix\s*:\s*\"?([A-Za-z0-9_.-]+)|MODEL_PREFIX\s*=\s*\"?([A-Za-z0-9_.-]+)"
)
_TOP_KEY = re.compile(r"^[^\s#-][^:]*:")


@dataclass(frozen=True, kw_only=True)
class GoldenFile:
    name: str  # file stem, e.g. minimaxm3_eagle3_gqa
    model: str  # the model key inside, e.g. minimax-m3
    values: Mapping[tuple[str, int], Decimal]  # (thinking_on|thinking_off, draft length) -> AL
    # speculative-config settings the curve was measured with (its `# speculative-config:`
    # header, e.g. draft_sample_method=probabilistic | rejection_sample_method=block)
    requires: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, kw_only=True)
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


@dataclass(frozen=True, kw_only=True)
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
            f"no golden AL files (*.yaml) in {folder}; point --golden at {GOLDEN_FOLDER}/"
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
        out.append(
            GoldenFile(
                name=path.stem, model=str(model), values=values, requires=_requirements(path)
            )
        )
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
                        path=path,
                        line=number + 1,
                        engine=engine,
                        raw=raw,
                        al=raw + offset,
                        draft=int(_group(draft[1])) if draft else None,
                        thinking=thinking,
                        thinking_assumed=assumed,
                        prefix=_group(prefix[1]) if prefix else stem,
                        golden_hint=hint[1].group(1) if hint else None,
                        context=context,
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
            setting=s,
            ok=False,
            code="golden-no-draft",
            message=f"{what}: no draft length (num_speculative_tokens, "
            "--num-speculative-tokens, ...) found near it; cannot check",
        )
    candidates = _candidates(s, golden)
    if not candidates:
        named = s.golden_hint or s.prefix or "unknown model"
        return Result(
            setting=s,
            ok=False,
            code="golden-no-model",
            message=f"{what}: no golden file for {named}; name it "
            f"({GOLDEN_FOLDER}/<file>.yaml) or set model-prefix",
        )
    mode = s.thinking + (" (assumed: the context does not say)" if s.thinking_assumed else "")
    goldens = [(g, g.values.get((s.thinking, s.draft))) for g in candidates]
    known = [(g, v) for g, v in goldens if v is not None]
    if not known:
        return Result(
            setting=s,
            ok=False,
            code="golden-no-value",
            message=f"{what}: golden {', '.join(g.name for g in candidates)} "
            f"has no {s.thinking} value for {s.draft} draft tokens",
        )
    for g, value in known:
        if value == s.al:
            return Result(
                setting=s,
                ok=True,
                code="golden-ok",
                message=f"{what} matches golden {value} ({g.name} {g.model} "
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
            f"({GOLDEN_FOLDER}/<file>.yaml) near the setting"
        )
    return Result(
        setting=s,
        ok=False,
        code="golden-mismatch",
        message=f"{what} does not match the golden AL {expected} for {mode}, "
        f"{s.draft} draft tokens{fix}",
    )


def check_paths(paths: Iterable[str | Path], golden_dir: str | Path) -> list[Finding]:
    """Findings for every setting that does not match its golden AL (or cannot be checked)."""
    return [
        Finding(path=r.setting.path, line=r.setting.line, code=r.code, message=r.message)
        for r in evaluate(paths, golden_dir)
        if not r.ok
    ]
