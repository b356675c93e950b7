"""Release-notes checks: the English and Chinese halves say the same things, and everything they say
matches the release facts.

Parity (English half = text before the `## 中文` heading, Chinese half = from it on; a leading
`# EN / ZH` title line is split between the halves): the same multiset of image references,
digests, versions, PR references, URLs, config keys, numbers, backticked identifiers and verbatim
names; the same bullet/heading structure; every glossary term the English half uses present in
Chinese; Simplified, not Traditional, characters.

Facts (whole text): every image reference, bare nightly tag, digest, version, PR number and config
key mentioned is one the facts contain, and each half names the pinned (new) image. Free text in the
facts (commit subjects) counts as facts, so quoting a subject is never a false finding.

Claims (`validate.notes_claims`): every line the renderer writes for the facts is in each half,
verbatim; no other bullet or heading; no HTML, link, mention, status, foreign number or invisible
character in the rest.

One token extractor serves the notes and the facts. Each finding names the line and the mismatch.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ..changelog.notes import ReleaseFacts, catalog
from ..core import sanitize
from ..core.findings import Finding
from ..core.reference import familiar, split, tag_or_ref
from .notes_claims import check_claims

# Traditional-only characters seen in Chinese tech writing, each followed by its Simplified form.
# Compact on purpose: it catches a Traditional half or a Traditional word pasted into a
# Simplified one.
_PAIRS = (
    "鏡镜 評评 測测 並并 發发 這这 與与 為为 變变 參参 數数 體体 號号 個个 們们 來来 "
    "時时 會会 對对 於于 從从 後后 過过 還还 進进 實实 現现 點点 當当 經经 說说 將将 "
    "無无 問问 題题 應应 開开 關关 間间 長长 門门 東东 車车 書书 見见 認认 論论 記记 "
    "錄录 試试 驗验 證证 確确 釋释 譯译 優优 據据 構构 較较 載载 運运 達达 選选 週周 "
    "標标 準准 節节 範范 結结 統统 編编 線线 網网 緩缓 層层 壓压 歸归 舊旧 隨随 離离 "
    "風风 險险 檢检 視视 計计 訊讯 設设 許许 請请 讀读 質质 費费 資资 轉转 輸输 連连 "
    "處处 區区 單单 嚴严 雙双 靜静 頁页 項项 預预 領领 類类 顯显 驅驱 鍵键 鏈链 錯错 "
    "鎖锁 閾阈 內内 庫库 態态 擬拟 條条 權权 樣样 機机 氣气 沒没 濾滤 狀状 獨独 環环 "
    "產产 畫画 異异 盡尽 稱称 穩稳 積积 簡简 純纯 紀纪 級级 組组 細细 終终 維维 總总 "
    "績绩 續续 縮缩 齊齐 歷历 報报 雜杂 啟启 動动 圍围 輕轻 廣广 擴扩 導导 戶户 攜携 "
    "夠够 決决 傳传 "
)
TRADITIONAL: dict[str, str] = {pair[0]: pair[1] for pair in _PAIRS.split()}

_ZH_HEADING = re.compile(r"^#{1,6}\s*中文\s*$")
_TITLE = re.compile(r"^#\s+(.*\S)\s*$")
_BULLET = re.compile(r"^( *)[-*+] ")
_HEADING = re.compile(r"^(#{1,6})\s")
_CODE = re.compile(r"(`+)(.+?)\1")
_URL = re.compile(r"https?://[^\s<>`'\"]+")
_PULL_URL = re.compile(r"https://github\.com/([\w.-]+/[\w.-]+)/pull/(\d+)")
_IMAGE = re.compile(
    r"(?<![\w./@-])(?:[a-z0-9][a-z0-9.-]*(?::[0-9]+)?/)?[a-z0-9][a-z0-9._-]*(?:/[a-z0-9][a-z0-9._-]*)+"
    r":[A-Za-z0-9_][A-Za-z0-9_.-]*(?:@sha256:[0-9a-f]{64})?",
    re.ASCII,
)
_DIGEST = re.compile(r"sha256:[0-9a-f]{12,64}")
_PR = re.compile(r"(?<![\w/\\])([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)?#(\d+)\b|\bPR (\d+)\b", re.ASCII)
_KEY = re.compile(
    r"(?<![\w.-])[a-z0-9][a-z0-9.]*-(?:fp4|fp8|fp16|bf16|int4|int8|mxfp4|nvfp4)-[a-z0-9.-]*[a-z0-9]",
    re.ASCII,
)
_VERSION = re.compile(
    r"(?<![\w.+-])v?\d+\.\d+(?:(?:\.\d+)+(?:\.?(?:dev|post|rc|a|b)\d+)*|(?:\.?(?:dev|post|rc)\d+)+)"
    r"(?:\+[0-9A-Za-z.]*[0-9A-Za-z])?(?![\w+])|(?<![\w.+-])\d+\.\d+\+[0-9A-Za-z.]*[0-9A-Za-z]",
    re.ASCII,
)
_NIGHTLY = re.compile(r"(?<![\w:])nightly[_-]\d{8,14}\b", re.ASCII)
# "the 1006 nightly" / "nightly 1006": a build named by its month and day (MMDD).
_NIGHTLY_DAY = re.compile(r"(?<![\w.])(\d{4})[ -]nightly\b|\bnightly[ -](\d{4})(?![\w.])", re.ASCII)
_TAG_DAY = re.compile(r"nightly[_-]\d{4}(\d{4})")
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.\-/#:])\d+(?:\.\d+)?(?![A-Za-z0-9_]|\.\d)")

_Add = Callable[[int, str, str], None]  # add(line, code, message)

# Parity categories, in reporting order, with the words findings use.
CATEGORIES = {
    "image": "image reference",
    "digest": "digest",
    "version": "version",
    "pr": "PR reference",
    "url": "URL",
    "key": "config key",
    "code": "backticked identifier",
    "number": "number",
    "name": "name",
}


@dataclass(frozen=True)
class Token:
    category: str
    value: str
    line: int


@dataclass(frozen=True)
class _Half:
    name: str  # "English" / "Chinese"
    lines: tuple[tuple[int, str], ...]  # (line number, text)


def _mask(text: str, spans: Sequence[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def tokens(text: str, line: int = 0, known_keys: frozenset[str] = frozenset()) -> list[Token]:
    """Every checked token of one line of text, by category (more specific categories first)."""
    out: list[Token] = []
    codes = [(m.start(), m.end()) for m in _CODE.finditer(text)]
    out += [Token("code", m.group(2).strip(), line) for m in _CODE.finditer(text)]
    work = text
    for category, pattern in (
        ("url", _URL),
        ("image", _IMAGE),
        ("digest", _DIGEST),
        ("pr", _PR),
        ("key", _KEY),
        ("version", _VERSION),
    ):
        spans = []
        for m in pattern.finditer(work):
            value = m.group(0).rstrip(".,;:)")
            if category == "url":
                pull = _PULL_URL.match(value)
                if pull:
                    out.append(Token("pr", f"{pull.group(1)}#{pull.group(2)}", line))
            written = split(value)
            if category == "image" and written.digest is not None:
                value, digest = written.without_digest, written.digest
                out.append(Token("digest", digest, line))
            out.append(Token(category, value, line))
            spans.append((m.start(), m.start() + len(m.group(0))))
        work = _mask(work, spans)
    for key in known_keys:  # keys that do not follow the precision-infix naming scheme
        for m in re.finditer(rf"(?<![\w.-]){re.escape(key)}(?![\w.-])", work):
            out.append(Token("key", key, line))
            work = _mask(work, [(m.start(), m.end())])
    prose = _mask(work, codes)
    out += [Token("number", m.group(0), line) for m in _NUMBER.finditer(prose)]
    out += [Token("name", m.group(0), line) for m in _names().finditer(prose)]
    return out


@functools.lru_cache(maxsize=1)
def _names() -> re.Pattern[str]:
    # Longest first, so "TensorRT-LLM" is one name, not a prefix match of a shorter one.
    names = sorted(catalog().verbatim, key=len, reverse=True)
    return re.compile(rf"(?<![A-Za-z0-9_/-])(?:{'|'.join(map(re.escape, names))})(?![A-Za-z0-9_-])")


def _pr_number(value: str) -> int:
    return int(re.findall(r"\d+", value)[-1])


# ---------------------------------------------------------------- facts universe


@dataclass(frozen=True, kw_only=True)
class _Universe:
    images: frozenset[str]
    tags: frozenset[str]
    digests: frozenset[str]
    versions: frozenset[str]
    prs: frozenset[int]
    keys: frozenset[str]


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _pr_ints(value: object) -> Iterator[int]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "pr" and isinstance(v, int):
                yield v
            else:
                yield from _pr_ints(v)
    elif isinstance(value, list):
        for item in value:
            yield from _pr_ints(item)


def _universe(facts: ReleaseFacts) -> _Universe:
    data = facts.to_json()
    # Escaped forms too: escaping inserts backslashes that can change what a pattern sees.
    toks = [t for s in _strings(data) for form in (s, sanitize.markdown(s)) for t in tokens(form)]
    images = {familiar(t.value) for t in toks if t.category == "image"}
    images |= {
        familiar(split(i.ref).without_digest) for i in (facts.old_image, facts.new_image) if i
    }
    keys = (
        set(facts.config_keys)
        | {c.key for c in facts.config_changes}
        | {p.key for p in facts.points_plan}
    )
    tags = frozenset(tag_or_ref(i) for i in images)
    return _Universe(
        images=frozenset(images),
        tags=tags,
        digests=frozenset(t.value for t in toks if t.category == "digest"),
        versions=frozenset(t.value for t in toks if t.category == "version")
        | frozenset(s for s in _strings(data) if _VERSION.fullmatch(s))
        # A tag named on its own (`v0.5.17-rocm720-mi35x-20260821`) reads as its version.
        | frozenset(m.group(0) for tag in tags for m in _VERSION.finditer(tag)),
        prs=frozenset(_pr_number(t.value) for t in toks if t.category == "pr")
        | frozenset(_pr_ints(data)),
        keys=frozenset(keys | {t.value for t in toks if t.category == "key"}),
    )


# ---------------------------------------------------------------- check


def check(text: str, facts: ReleaseFacts, path: str = "NOTES.md") -> list[Finding]:
    """All findings for a notes text against its facts (empty list: the notes pass)."""
    findings: list[Finding] = []

    def add(line: int, code: str, message: str) -> None:
        findings.append(Finding(path=path, line=line, code=code, message=message))

    lines = text.split("\n")
    numbered = list(enumerate(lines, start=1))
    zh_at = [n for n, line in numbered if _ZH_HEADING.match(line)]
    en_title: list[tuple[int, str]] = []
    zh_title: list[tuple[int, str]] = []
    body = numbered
    first = next(((n, line) for n, line in numbered if line.strip()), None)
    title = _TITLE.match(first[1]) if first is not None else None
    if first is not None and title is not None:
        en_part, sep, zh_part = title.group(1).partition(" / ")
        if not sep:
            add(first[0], "title", "the title has no ' / ' between its English and Chinese parts")
        en_title, zh_title = [(first[0], en_part)], [(first[0], zh_part)]
        body = [(n, line) for n, line in numbered if n != first[0]]
    if not zh_at:
        add(
            0,
            "no-chinese-half",
            "no `## 中文` heading: the notes have no Chinese half; "
            "render them with `relpipe notes render --lang both`",
        )
        halves = [_Half("English", tuple(en_title + body))]
    else:
        if len(zh_at) > 1:
            add(
                zh_at[1],
                "chinese-heading",
                f"a second `中文` heading (the first is at line {zh_at[0]})",
            )
        split = zh_at[0]
        halves = [
            _Half("English", tuple(en_title + [(n, t) for n, t in body if n < split])),
            _Half("Chinese", tuple(zh_title + [(n, t) for n, t in body if n > split])),
        ]
    known = frozenset(facts.config_keys) | frozenset(c.key for c in facts.config_changes)
    per_half = [[t for n, line in h.lines for t in tokens(line, n, known)] for h in halves]
    if len(halves) == 2:
        _parity(halves, per_half, add)
        _structure(halves, add)
        _glossary(halves, add)
    _traditional(numbered, add)
    _facts(halves, per_half, facts, add)
    title_line = first[0] if first is not None and title is not None else None
    check_claims([(h.name, h.lines) for h in halves], title_line, facts, add)
    return sorted(set(findings), key=lambda f: (f.line, f.code, f.message))


def _parity(halves: Sequence[_Half], toks: Sequence[list[Token]], add: _Add) -> None:
    # Lines align item by item (the structure check guards that), so a count mismatch is reported
    # at the first aligned pair of lines whose counts differ, naming both lines.
    rows = [[n for n, text in h.lines if text.strip()] for h in halves]
    index = [{n: i for i, n in enumerate(r)} for r in rows]
    for category, word in CATEGORIES.items():
        counts = [Counter(t.value for t in ts if t.category == category) for ts in toks]
        for value in sorted(set(counts[0]) | set(counts[1])):
            a, b = counts[0][value], counts[1][value]
            if a == b:
                continue
            per_row = [
                Counter(
                    index[h][t.line] for t in toks[h] if t.category == category and t.value == value
                )
                for h in (0, 1)
            ]
            row = min(
                r for r in set(per_row[0]) | set(per_row[1]) if per_row[0][r] != per_row[1][r]
            )
            lines = [rows[h][row] if row < len(rows[h]) else None for h in (0, 1)]
            line = (
                lines[1] if lines[1] is not None and per_row[1][row] > per_row[0][row] else lines[0]
            )
            add(
                line or lines[1] or 0,
                f"parity-{category}",
                f"{word} {value} appears {a} time(s) in the English half "
                f"but {b} in the Chinese half; "
                f"first difference: English line {lines[0]} has {per_row[0][row]}, "
                f"Chinese line {lines[1]} has {per_row[1][row]}",
            )


def _shape(half: _Half) -> list[tuple[int, str]]:
    out = []
    for n, line in half.lines:
        bullet, heading = _BULLET.match(line), _HEADING.match(line)
        if bullet:
            out.append((n, f"bullet at depth {len(bullet.group(1)) // 2}"))
        elif heading:
            out.append((n, f"level-{len(heading.group(1))} heading"))
    return out


def _structure(halves: Sequence[_Half], add: _Add) -> None:
    en, zh = _shape(halves[0]), _shape(halves[1])
    for i in range(max(len(en), len(zh))):
        a = en[i] if i < len(en) else None
        b = zh[i] if i < len(zh) else None
        if a is None or b is None or a[1] != b[1]:
            line = b[0] if b else a[0] if a else 0
            add(
                line,
                "parity-structure",
                f"structure differs: item {i + 1} is {a[1] if a else 'missing'} in the English half"
                f"{f' (line {a[0]})' if a else ''} "
                f"but {b[1] if b else 'missing'} in the Chinese half"
                f"{f' (line {b[0]})' if b else ''}",
            )
            return


def _glossary(halves: Sequence[_Half], add: _Add) -> None:
    zh_text = "\n".join(t for _, t in halves[1].lines)
    for en_term, zh_term in catalog().glossary:
        pattern = re.compile(rf"\b{re.escape(en_term)}(?:s|es)?\b", re.IGNORECASE | re.ASCII)
        en_hits = [n for n, t in halves[0].lines for _ in pattern.finditer(_CODE.sub(" ", t))]
        zh_hits = [n for n, t in halves[1].lines for _ in pattern.finditer(_CODE.sub(" ", t))]
        # English words the Chinese half also carries are quoted text (commit subjects), not prose.
        if len(en_hits) > len(zh_hits) and zh_term not in zh_text:
            add(
                en_hits[0],
                "glossary",
                f"the English half says {en_term!r} but the Chinese half never uses "
                f"its glossary term {zh_term!r}",
            )


def _traditional(numbered: Sequence[tuple[int, str]], add: _Add) -> None:
    for n, line in numbered:
        for ch in dict.fromkeys(c for c in line if c in TRADITIONAL):
            add(
                n,
                "traditional",
                f"Traditional character {ch!r}; write the Simplified {TRADITIONAL[ch]!r}",
            )


def _facts(
    halves: Sequence[_Half], toks: Sequence[list[Token]], facts: ReleaseFacts, add: _Add
) -> None:
    u = _universe(facts)
    pinned = familiar(split(facts.new_image.ref).without_digest)
    seen: set[tuple[int, str, str]] = set()
    days = {m.group(1) for tag in u.tags for m in [_TAG_DAY.match(tag)] if m}
    for half, ts in zip(halves, toks, strict=True):
        for t in ts:
            if (t.line, t.category, t.value) in seen:
                continue
            seen.add((t.line, t.category, t.value))
            if t.category == "image" and familiar(t.value) not in u.images:
                add(
                    t.line,
                    "facts-image",
                    f"image {t.value} (tag {tag_or_ref(t.value)}) is not in the facts; "
                    f"the pinned image is {pinned} (tag {tag_or_ref(pinned)})",
                )
            elif t.category == "digest" and not any(d.startswith(t.value) for d in u.digests):
                add(t.line, "facts-digest", f"digest {t.value} is not in the facts")
            elif t.category == "version" and t.value not in u.versions:
                add(t.line, "facts-version", f"version {t.value} is not in the facts")
            elif t.category == "pr" and _pr_number(t.value) not in u.prs:
                add(t.line, "facts-pr", f"PR reference {t.value} is not in the facts")
            elif t.category == "key" and t.value not in u.keys:
                add(t.line, "facts-key", f"config key {t.value} is not in the facts")
        for n, line in half.lines:
            for m in _NIGHTLY.finditer(
                _mask(line, [(i.start(), i.end()) for i in _IMAGE.finditer(line)])
            ):
                if m.group(0) not in u.tags:
                    add(
                        n,
                        "facts-image",
                        f"tag {m.group(0)} is not an image in the facts; "
                        f"the pinned image is {pinned} (tag {tag_or_ref(pinned)})",
                    )
            for m in _NIGHTLY_DAY.finditer(line):
                day = m.group(1) or m.group(2)
                if day not in days:
                    add(
                        n,
                        "facts-image",
                        f"'{m.group(0)}' names a nightly of {day[:2]}-{day[2:]}, "
                        "which is not an image "
                        f"in the facts; the pinned image is {pinned} (tag {tag_or_ref(pinned)})",
                    )
        if not any(t.category == "image" and familiar(t.value) == pinned for t in ts):
            add(
                half.lines[0][0] if half.lines else 0,
                "facts-pinned",
                f"the {half.name} half never names the pinned image {pinned}",
            )
