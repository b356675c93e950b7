"""Release notes from facts: PR title, PR body (English, Simplified Chinese, or both) and the
perf-changelog description lines.

Both languages are rendered from ONE language-neutral outline (`outline(facts)`: headings and
bullets with typed arguments) through the phrase catalog, so the halves have the same bullets, the
same identifiers and the same numbers by construction; `validate.notes_check` verifies that on the
text. Rendering is a pure function of the facts (byte-identical on every run).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ...core import sanitize
from ...core.commit import Commit
from ...core.reference import tag_or_ref
from ..configs.semdiff import (
    Change,
    ConcurrencyChange,
    EnvChange,
    FieldChange,
    ImageChange,
    KeyChange,
    VersionChange,
)
from ..errors import ChangelogError
from .facts import Image, PointChange, ReleaseFacts
from .glossary import catalog

LANG_CHOICES = ("en", "zh", "both")
ZH_HEADING = "## 中文"


@dataclass(frozen=True)
class Code:
    """An identifier shown verbatim (code span in Markdown)."""

    value: str


@dataclass(frozen=True)
class Text:
    """Untrusted free text (escaped in Markdown)."""

    value: str


@dataclass(frozen=True)
class Codes:
    values: tuple[str, ...]


@dataclass(frozen=True)
class Numbers:
    values: tuple[int, ...]


@dataclass(frozen=True)
class _CheckName:
    """A verdict check's name, looked up per language."""

    check_id: str


@dataclass(frozen=True)
class _Bilingual:
    """Free text given by the facts in both languages (risk notes)."""

    en: str
    zh: str


@dataclass(frozen=True)
class _Phrase:
    """A catalog phrase used as a value (a verdict word in the history table)."""

    phrase_id: str


Arg = (
    Code | Text | Codes | Numbers | _CheckName | _Bilingual | _Phrase | str | int
)  # str/int: computed by relpipe
TABLE_HEAD = -2  # a Markdown table's header row (the separator row follows)
TABLE_ROW = -3


@dataclass(frozen=True)
class Line:
    """One outline line: a heading (depth -1) or a bullet at `depth`, with its phrase arguments."""

    depth: int
    phrase: str
    args: tuple[tuple[str, Arg], ...] = ()


def _fmt(arg: Arg, lang: str, md: bool) -> str:
    sep = catalog().phrase("list_sep", lang)
    if isinstance(arg, Code):
        return sanitize.markdown_code(arg.value) if md else sanitize.clean(arg.value)
    if isinstance(arg, Text):
        return sanitize.markdown(arg.value) if md else sanitize.clean(arg.value)
    if isinstance(arg, Codes):
        return sep.join(_fmt(Code(v), lang, md) for v in arg.values)
    if isinstance(arg, Numbers):
        return sep.join(str(v) for v in arg.values)
    if isinstance(arg, (_CheckName, _Bilingual, _Phrase)):
        raise ChangelogError("internal: language-dependent argument not resolved")
    return str(arg)


def _phrase(line: Line, lang: str, md: bool) -> str:
    template = catalog().phrase(line.phrase, lang)
    return template.format(**{name: _fmt(arg, lang, md) for name, arg in line.args})


def _num(value: float) -> str:
    # repr is the shortest string that round-trips, so 0.93 stays "0.93" on every platform.
    return str(int(value)) if value.is_integer() else repr(value)


def _ref(repo: str | None, pr: int) -> str:
    # A bare #N would autolink to the benchmark repository, not the upstream one.
    return f"{repo}#{pr}" if repo else f"PR {pr}"


def _engine_name(image: Image) -> str:
    return catalog().display(image.engine.name) if image.engine else "engine"


def _arm(change: ConcurrencyChange | EnvChange | VersionChange) -> Code:
    return Code(f"{change.scenario}; {change.arm}")


def _change_line(change: Change) -> Line:
    key = ("key", Code(change.key))
    if isinstance(change, ImageChange):
        return Line(0, "change_image", (key, ("old", Code(change.old)), ("new", Code(change.new))))
    if isinstance(change, KeyChange):
        return Line(0, f"change_key_{change.change}", (key,))
    if isinstance(change, FieldChange):
        return Line(
            0,
            "change_field",
            (
                key,
                ("path", Code(change.path or "value")),
                ("old", Code(change.old or "-")),
                ("new", Code(change.new or "-")),
            ),
        )
    if isinstance(change, ConcurrencyChange):
        # One change may add and remove; emitted as two lines by `_change_lines`.
        raise ChangelogError("internal: concurrency changes are rendered by _change_lines")
    if isinstance(change, EnvChange):
        concs = ("concs", Numbers(change.concurrency))
        if change.new is None:
            return Line(
                0,
                "change_env_removed",
                (
                    key,
                    ("arm", _arm(change)),
                    concs,
                    ("setting", Code(f"{change.name}={change.old}")),
                ),
            )
        if change.old is None:
            return Line(
                0,
                "change_env_added",
                (
                    key,
                    ("arm", _arm(change)),
                    concs,
                    ("setting", Code(f"{change.name}={change.new}")),
                ),
            )
        return Line(
            0,
            "change_env_changed",
            (
                key,
                ("arm", _arm(change)),
                concs,
                ("old", Code(f"{change.name}={change.old}")),
                ("new", Code(f"{change.name}={change.new}")),
            ),
        )
    return Line(
        0,
        "change_version",
        (
            key,
            ("arm", _arm(change)),
            ("name", catalog().display(change.name)),
            ("old", Code(change.old or "-")),
            ("new", Code(change.new or "-")),
        ),
    )


def _change_lines(changes: Sequence[Change]) -> Iterator[Line]:
    for change in changes:
        if isinstance(change, ConcurrencyChange):
            for kind, concs in (("added", change.added), ("removed", change.removed)):
                if concs:
                    yield Line(
                        0,
                        f"change_conc_{kind}",
                        (
                            ("key", Code(change.key)),
                            ("arm", _arm(change)),
                            ("concs", Numbers(concs)),
                        ),
                    )
        else:
            yield _change_line(change)


def _notable(commits: Sequence[Commit]) -> list[Commit]:
    return [c for c in commits if c.pr is not None]


def outline(facts: ReleaseFacts) -> tuple[Line, ...]:
    """The language-neutral body: headings (depth -1) and bullets, in order."""
    out: list[Line] = []
    for section in _SECTIONS:
        out += section(facts)
    return tuple(out)


def _summary_lines(facts: ReleaseFacts) -> list[Line]:
    new, old = facts.new_image, facts.old_image
    out = [Line(-1, "h_summary"), Line(0, "config_keys", (("keys", Codes(facts.config_keys)),))]
    if old is not None:
        out.append(Line(0, "image_bump", (("old", Code(old.ref)), ("new", Code(new.ref)))))
    else:
        out.append(Line(0, "image_new", (("new", Code(new.ref)),)))
    if new.digest:
        out.append(Line(1, "digest", (("digest", Code(new.digest)),)))
    if new.engine:
        count = (
            facts.commit_count if facts.commit_count is not None else (len(facts.commits) or None)
        )
        engine = ("engine", _engine_name(new))
        if old is not None and old.engine and old.engine.version != new.engine.version:
            pair = (engine, ("old", Code(old.engine.version)), ("new", Code(new.engine.version)))
            out.append(
                Line(1, "engine_bump_count", (*pair, ("count", count)))
                if count
                else Line(1, "engine_bump", pair)
            )
        else:
            out.append(Line(1, "engine_new", (engine, ("new", Code(new.engine.version)))))
    if new.rocm:
        if old is not None and old.rocm and old.rocm != new.rocm:
            out.append(Line(1, "rocm_bump", (("old", Code(old.rocm)), ("new", Code(new.rocm)))))
        else:
            out.append(Line(1, "rocm_new", (("new", Code(new.rocm)),)))
    return out


def _upstream_lines(facts: ReleaseFacts) -> list[Line]:
    notable = _notable(facts.commits)
    if not notable:
        return []
    return [Line(-1, "h_upstream")] + [
        Line(0, "upstream_pr", (("ref", _ref(c.repo, c.pr or 0)), ("subject", Text(c.subject))))
        for c in notable
    ]


def _config_lines(facts: ReleaseFacts) -> list[Line]:
    if not (facts.config_changes or facts.points_plan):
        return []
    out = [Line(-1, "h_config")]
    out += _change_lines(facts.config_changes)
    out += [
        Line(
            0,
            "points_plan",
            (
                ("key", Code(p.key)),
                ("old", "-" if p.old is None else p.old),
                ("new", "-" if p.new is None else p.new),
            ),
        )
        for p in facts.points_plan
    ]
    return out


def _package_lines(facts: ReleaseFacts) -> list[Line]:
    if not facts.new_image.packages:
        return []
    return [Line(-1, "h_packages")] + [
        Line(0, "package", (("name", catalog().display(n)), ("version", Code(v))))
        for n, v in facts.new_image.packages
    ]


def _precision_lines(facts: ReleaseFacts) -> list[Line]:
    p = facts.precision
    if p.empty:
        return []
    out = [Line(-1, "h_precision")]
    if p.unchanged:
        out.append(Line(0, "precision_unchanged", (("paths", Codes(p.unchanged)),)))
    if p.changed_not_relevant:
        out.append(Line(0, "precision_not_relevant", (("paths", Codes(p.changed_not_relevant)),)))
    for r in p.relevant:
        args: tuple[tuple[str, Arg], ...] = (
            ("path", Code(r.path)),
            ("category", Code(r.category)),
        )
        out.append(
            Line(0, "precision_relevant_pr", (*args, ("ref", _ref(None, r.pr))))
            if r.pr is not None
            else Line(0, "precision_relevant", args)
        )
    if not p.relevant:
        out.append(Line(0, "precision_none"))
    return out


def _validation_lines(facts: ReleaseFacts) -> list[Line]:
    v = facts.validation
    if not (v.checks or v.evals):
        return []
    out = [Line(-1, "h_validation")]
    out += [
        Line(0, "check", (("id", c.id), ("name", _CheckName(c.id)), ("status", c.status)))
        for c in v.checks
    ]
    for e in v.evals:
        base: tuple[tuple[str, Arg], ...] = (("suite", Code(e.suite)), ("score", _num(e.score)))
        if e.threshold is not None and e.samples is not None:
            out.append(
                Line(
                    0,
                    "eval_full",
                    (*base, ("threshold", _num(e.threshold)), ("samples", e.samples)),
                )
            )
        elif e.threshold is not None:
            out.append(Line(0, "eval_threshold", (*base, ("threshold", _num(e.threshold)))))
        else:
            out.append(Line(0, "eval", base))
    return out


def _history_lines(facts: ReleaseFacts) -> list[Line]:
    if not facts.history:
        return []
    return [
        Line(-1, "h_history"),
        Line(TABLE_HEAD, "history_head"),
        *(Line(TABLE_ROW, "history_row", _history_args(h)) for h in facts.history),
    ]


def _risk_lines(facts: ReleaseFacts) -> list[Line]:
    if not facts.risks:
        return []
    out = [Line(-1, "h_risks")]
    for risk in facts.risks:
        if risk.kind == "missing-fix":
            out.append(Line(0, "risk_missing_fix", (("ref", _ref(risk.repo, risk.pr or 0)),)))
        else:
            out.append(
                Line(0, "risk_note", (("text", _Bilingual(risk.text or "", risk.text_zh or "")),))
            )
    return out


# The body's sections, in order; each is empty when the release has nothing for it.
_SECTIONS: tuple[Callable[[ReleaseFacts], list[Line]], ...] = (
    _summary_lines,
    _upstream_lines,
    _config_lines,
    _package_lines,
    _precision_lines,
    _validation_lines,
    _history_lines,
    _risk_lines,
)


def _history_args(h: PointChange) -> tuple[tuple[str, Arg], ...]:
    def num(value: float | None) -> str:
        return "-" if value is None else f"{value:.4g}"

    return (
        ("key", Code(h.key)),
        ("point", Code(h.point)),
        ("metric", Code(h.metric)),
        ("old", num(h.old)),
        ("new", num(h.new)),
        ("change", "-" if h.change is None else f"{h.change * 100:+.1f}%"),
        ("band", "-" if h.band is None else f"±{h.band * 100:.1f}%"),
        ("verdict", _Phrase(f"verdict_{h.verdict}")),
    )


def _render_lines(lines: Sequence[Line], lang: str) -> list[str]:
    out: list[str] = []
    for line in lines:
        resolved = tuple((name, _resolve(arg, lang)) for name, arg in line.args)
        text = _phrase(Line(line.depth, line.phrase, resolved), lang, md=True)
        if line.depth == TABLE_HEAD:
            columns = text.count("|") - 1
            out += [text, "|" + "---|" * columns]
        elif line.depth == TABLE_ROW:
            out.append(text)
        elif line.depth < 0:
            out += ([""] if out else []) + [f"### {text}", ""]
        else:
            out.append(f"{'  ' * line.depth}- {text}")
    return out


def _resolve(arg: Arg, lang: str) -> Arg:
    # Arguments that differ by language are resolved before formatting.
    if isinstance(arg, _CheckName):
        return catalog().check_name(arg.check_id, lang)
    if isinstance(arg, _Bilingual):
        return Text(arg.en if lang == "en" else arg.zh)
    if isinstance(arg, _Phrase):
        return catalog().phrase(arg.phrase_id, lang)
    return arg


def render(facts: ReleaseFacts, lang: str = "both") -> str:
    """The PR body in English, Chinese, or both (English, then a `## 中文` section)."""
    if lang not in LANG_CHOICES:
        raise ChangelogError(
            f"unknown notes language {lang!r}; use one of {', '.join(LANG_CHOICES)}"
        )
    lines = outline(facts)
    if lang != "both":
        return "\n".join(_render_lines(lines, lang)) + "\n"
    return (
        "\n".join([*_render_lines(lines, "en"), "", ZH_HEADING, "", *_render_lines(lines, "zh")])
        + "\n"
    )


def render_title(facts: ReleaseFacts) -> str:
    """`<English> / <中文>`, naming the pinned tag (never a date guessed from elsewhere)."""
    keys = facts.config_keys
    parts = []
    for lang in ("en", "zh"):
        scope = (
            keys[0]
            if len(keys) == 1
            else catalog().phrase("title_scope_many", lang).format(count=len(keys))
        )
        parts.append(
            catalog()
            .phrase("title", lang)
            .format(
                engine=_engine_name(facts.new_image),
                tag=sanitize.clean(tag_or_ref(facts.new_image.ref)),
                scope=scope,
            )
        )
    return " / ".join(parts)


def description_lines(facts: ReleaseFacts) -> tuple[str, ...]:
    """perf-changelog `description` lines: plain English in the corpus's house phrasing."""
    new, old = facts.new_image, facts.old_image
    engine = _engine_name(new)
    lines: list[Line] = []
    if old is not None and old.ref != new.ref:
        lines.append(
            Line(
                0,
                "desc_image",
                (("engine", engine), ("old", Code(old.ref)), ("new", Code(new.ref))),
            )
        )
    else:
        lines.append(Line(0, "desc_image_new", (("engine", engine), ("new", Code(new.ref)))))
    if old is not None and old.engine and new.engine and old.engine.version != new.engine.version:
        lines.append(
            Line(
                0,
                "desc_engine",
                (
                    ("engine", engine),
                    ("old", Code(old.engine.version)),
                    ("new", Code(new.engine.version)),
                    ("rocm", Code(new.rocm or "unknown")),
                ),
            )
        )
    if new.digest:
        lines.append(Line(0, "desc_digest", (("new", Code(new.ref)), ("digest", Code(new.digest)))))
    pinned = {(old.ref if old else None, new.ref)}
    lines += [
        line
        for line in _change_lines(facts.config_changes)
        if not (line.phrase == "change_image" and (_arg(line, "old"), _arg(line, "new")) in pinned)
    ]
    notable = _notable(facts.commits)
    if notable:
        lines.append(
            Line(
                0, "desc_upstream", (("refs", ", ".join(_ref(c.repo, c.pr or 0) for c in notable)),)
            )
        )
    if new.packages:
        lines.append(
            Line(
                0,
                "desc_packages",
                (
                    (
                        "packages",
                        ", ".join(
                            f"{catalog().display(n)} {sanitize.clean(v)}" for n, v in new.packages
                        ),
                    ),
                ),
            )
        )
    return tuple(_phrase(line, "en", md=False) for line in lines)


def _arg(line: Line, name: str) -> str | None:
    value = dict(line.args).get(name)
    return value.value if isinstance(value, Code) else None
