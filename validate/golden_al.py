"""Golden acceptance-length (AL) check: every synthetic/forced speculative-decoding acceptance
setting in configs, recipes and scripts must equal the golden AL for its model, thinking mode and
draft length (InferenceX `golden_al_distribution/*.yaml`: model -> thinking_on/off -> K -> AL).

Two entry points. `check(repo, keys)` here (C9, `relpipe review --check golden-al`) is scoped to
config keys and reads what InferenceX runs for them (master block, CONFIG_FILE recipes,
single-node launch scripts, read by `validate.golden_launch`: see its section "scoped to config
keys"). `validate.golden_files.evaluate(paths, golden_dir)` scans given files on their own (the
rules below); it cannot know a key's draft length when the file does not state it.

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
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..changelog.configs.load import MasterConfigs, load_masters
from ..changelog.errors import ChangelogError
from ..changelog.repository import launch as keyfiles
from ..changelog.repository.checkout import Checkout, open_checkout
from ..changelog.repository.era import HARNESS, MASTER_SUFFIX, Era
from ..core.status import FAIL, NA, PASS, WARN, Status
from .errors import ValidateError
from .golden_files import GoldenFile, load_golden
from .golden_launch import (
    _INJECTED,
    _NUMBER,
    _SRT_RECIPE,
    _SYNTHETIC_ON,
    _TOLERANCE,
    KEY_SPELLINGS,
    KeySetting,
    _choose,
    _drafts,
    _engine_of,
    _key_block,
    _nearest_k,
    _read_repo_file,
    _scan,
    _spec_items,
    _Text,
    _thinking,
    _uncomment,
    _values,
)

# The reason of an agentic spec-decode key whose launch path sets no synthetic acceptance
# target (the checklist requires one: `relpipe review` FAILs it).
NO_TARGET = "no forced acceptance length"


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
    configured = _configured(value, kind, kval)
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
    return row(
        FAIL,
        f"AL {configured} differs from golden {v} ({g.name}, {mode}, K={kval}; {why}); "
        f"set {_written_as(v, kind, kval)}",
        configured,
        (g, v),
    )


def _configured(value: Decimal, kind: str, kval: int) -> Decimal:
    """The AL a written value sets: a rate per draft token, accepted drafts, or the AL itself."""
    if kind == "rate":
        return (1 + value * kval).quantize(Decimal("0.01"))
    return value + (1 if kind == "drafts" else 0)


def _written_as(v: Decimal, kind: str, kval: int) -> str:
    """The value to write for the golden AL `v`, in the spelling's own kind."""
    return f"{v - 1}" if kind == "drafts" else f"{(v - 1) / kval:.4f}" if kind == "rate" else f"{v}"


def check(
    repo: str | Path, keys: Iterable[str], masters: MasterConfigs | None = None
) -> list[KeySetting]:
    """Every agentic spec-decode acceptance setting of the given config keys, judged (see above).

    Unknown keys raise ValidateError; unreadable or missing sources become WARN rows. `masters`:
    the repository's masters already loaded strictly (`relpipe review` has them; a 376 KB master
    takes ~0.3 s to parse again); read from `repo` when not given.
    """
    return _run(Path(repo), list(keys), masters)[0]


def inputs_digest(repo: str | Path, keys: Iterable[str]) -> str:
    """SHA-256 over everything `check(repo, keys)` reads (golden files, masters, the keys'
    recipes and scripts): a cache key that changes whenever the verdict could."""
    found = open_checkout(repo)
    root = found.root
    _, read = _run(root, list(keys))
    h = hashlib.sha256()
    golden_dir = root / found.era.golden
    paths = found.masters()
    paths += sorted(golden_dir.glob("*.yaml")) if golden_dir.is_dir() else []
    for path in paths:
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for rel, text in sorted(read.items()):
        body = "\n".join(text.raw).encode() if text else b"(absent)"
        h.update(rel.encode() + b"\0" + body + b"\0")
    return h.hexdigest()


def _run(
    root: Path, keys: list[str], loaded: MasterConfigs | None = None
) -> tuple[list[KeySetting], dict[str, _Text | None]]:
    try:
        found = open_checkout(root)
        root = found.root
        masters = loaded if loaded is not None else load_masters(found.masters())
    except ChangelogError as exc:
        raise ValidateError(str(exc)) from None
    golden_dir = root / found.era.golden
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
                f"config key {key!r} is not in {found.era.masters}/*{MASTER_SUFFIX} under {root}"
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


@dataclass(kw_only=True)
class _Sources:
    """The files a key's settings live in: recipes (with the master line naming each), the
    single-node launch script, the master block itself; and what was named but not read."""

    recipes: list[tuple[int, _Text]]
    script: _Text | None
    texts: list[_Text]
    missing: list[str]
    srt: bool = False  # srt-slurm rows: the harness runs the recipe (and may inject the AL)


def _check_key(
    key: str,
    masters: MasterConfigs,
    bench: Checkout,
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
        path=master.relative_to(bench.root).as_posix(),
        raw=tuple(lines[start - 1 : end]),
        code=tuple(_uncomment(line, "")[0] for line in lines[start - 1 : end]),
        first=start,
    )
    this = _Key(
        key=key,
        block=block,
        prefix=str(cfg.get("model-prefix", "")),
        framework=str(cfg.get("framework", "")),
        golden=golden,
    )
    found = _sources(this, cfg, items, bench.era, scanned)
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
        injects = HARNESS in bench.era.acceptance and found.srt
        out.append(_unforced(this, found.texts, bench.era.harness_golden if injects else None))
    for rel in missing:
        out.append(this.row(WARN, f"cannot check: source not found or unreadable: {rel}"))
    return out


def _sources(
    this: _Key,
    cfg: Mapping[str, object],
    items: list[Mapping[str, object]],
    era: Era,
    scanned: Callable[[str], _Text | None],
) -> _Sources:
    block = this.block
    found = _Sources(recipes=[], script=None, texts=[], missing=[])
    srt = False  # srt-slurm rows (2026-10) run their recipe, not a single-node launch script
    for n, line in enumerate(block.code, block.first):
        refs = [p for p, _, _ in keyfiles.config_file_recipes(era, [line])]
        srt = srt or bool(_SRT_RECIPE.search(line))
        for ref in _SRT_RECIPE.findall(line):
            refs.append(keyfiles.srt_recipe(era, cfg, ref.strip("'\""))[0])
        for rel in dict.fromkeys(refs):
            recipe = None if keyfiles.outside(rel) else scanned(rel)
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
        hw = keyfiles.runner_hardware(str(cfg.get("runner", "")))
        for spec in sorted({str(i.get("spec-decoding")) for i in items}):
            candidates = keyfiles.script_candidates(era, cfg, "agentic-coding", spec, hw)
            found.script = next((s for s in map(scanned, candidates) if s is not None), None)
            if found.script is None and not in_block:
                found.missing.append(" or ".join(candidates))
    for _, recipe in found.recipes:
        if recipe not in found.texts:
            found.texts.append(recipe)
    if found.script is not None:
        found.texts.append(found.script)
    found.srt = srt
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


def _unforced(this: _Key, texts: list[_Text], harness: str | None = None) -> KeySetting:
    """The key's row when its sources write no acceptance length.

    Where the era's harness injects the golden value itself (`harness`: 2026-10's srt-slurm,
    `Era.acceptance`), the key runs at the golden AL of its model, thinking mode and K: PASS
    with that value. Where InferenceX resolves it at run time (`SYNTHETIC_ACCEPTANCE=true`):
    N/A. Otherwise the checklist's item 11 is not met: FAIL (no synthetic target), or WARN
    when a synthetic setting is written but its value is not resolved (a printf format)."""
    named = ", ".join(t.path for t in texts)
    auto = any(_SYNTHETIC_ON.search(line) for line in this.block.code)
    if auto:
        return this.row(
            NA,
            "SYNTHETIC_ACCEPTANCE=true without a length: InferenceX resolves it from the golden "
            "files at run time",
        )
    curve = _real_curve(texts, this.prefix, this.golden)
    if harness is not None:
        if curve is None:
            return this.row(
                WARN,
                f"cannot check: the harness ({harness}) injects the golden AL, but the key's "
                f"model, thinking mode or K select no one golden value in {named}",
            )
        gold, (k_path, k_val, k_line), golden_al, mode = curve
        return replace(
            this.row(
                PASS,
                f"AL {golden_al} injected by the harness ({harness}): golden {golden_al} "
                f"({gold.name}, {mode}, K={k_val}); no recipe sets it",
            ),
            k=k_val,
            k_source=f"{k_path}:{k_line}",
            configured=golden_al,
            golden=golden_al,
            golden_file=gold.name,
            thinking=mode,
        )
    unresolved = any(_SYNTHETIC.search(line) for t in texts for line in t.code)
    status, why = (
        (WARN, "a synthetic setting is written but its value is not resolved")
        if unresolved
        else (FAIL, "no synthetic target")
    )
    row = this.row(status, f"{NO_TARGET} in {named}: drafts are accepted as they are ({why})")
    if curve is None:
        return row
    gold, (k_path, k_val, k_line), golden_al, mode = curve
    return replace(
        row,
        k=k_val,
        k_source=f"{k_path}:{k_line}",
        golden=golden_al,
        golden_file=gold.name,
        thinking=mode,
        reason=f"{row.reason}; their golden curve: {gold.name} {mode} K={k_val} AL {golden_al}",
    )


# A synthetic-acceptance setting of any engine, written whatever its value (linear-time).
_SYNTHETIC = re.compile(
    r"(?i)synthetic[-_]accept|SIMULATE_ACC_LEN|FORCE_NUM_ACCEPTED|SYNTHETIC_ACCEPT"
)


@dataclass(frozen=True)
class Verdict:
    """Golden AL for a set of keys: one status (FAIL over WARN over PASS over N/A), its
    reason, and every row. `relpipe review --check golden-al` and the release's C9 both
    report this (one question, one answer)."""

    status: Status
    reason: str
    rows: tuple[KeySetting, ...]


def verdict(repo: str | Path, keys: Iterable[str], masters: MasterConfigs | None = None) -> Verdict:
    """`check` for the keys, judged as one: see `Verdict`."""
    rows = check(repo, keys, masters)
    counts = {status: [r for r in rows if r.verdict == status] for status in (FAIL, WARN, PASS)}
    if counts[FAIL]:
        first = counts[FAIL][0]
        more = f" (+{len(counts[FAIL]) - 1} more)" if len(counts[FAIL]) > 1 else ""
        reason = f"acceptance length differs from the golden value at {first.path}:{first.line}"
        return Verdict(FAIL, reason + more, tuple(rows))
    if counts[WARN]:
        n = len(counts[WARN])
        return Verdict(WARN, f"{n} setting{'s' if n != 1 else ''} cannot be checked", tuple(rows))
    if counts[PASS]:
        n = len(counts[PASS])
        return Verdict(PASS, f"{n} setting{'s' if n != 1 else ''} equal the golden AL", tuple(rows))
    why = rows[0].reason if rows else "no agentic spec-decode setting"
    return Verdict(NA, why, tuple(rows))


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
