"""Tag families and newest-build selection.

A family (declared by its engine: `families` of engine/declarations/<engine>.json, read through
`relpipe.core.engines`; documented in docs/images.md) is a set of tag patterns, the keys
that order the tags matching them, and the fields that split them into groups (ROCm line, GPU).
A pattern is literal text with strftime-style date fields (`%Y %m %d %H %M %S`) and typed fields
`<name:kind>` (`ver`, `semver`, `pep440`, `hex`, `num`, `gpu`, `gpuname`, `word`; the bare
`<ver>` is `<ver:ver>`). A tag that fits no pattern (floating `latest`, branch builds, malformed
dates) is never chosen; `classify` says which family a tag belongs to, or which of its engine's
`never` classes (floating, branch, variant, platform, custom) keeps it from being chosen. Families
whose tags carry no order (vLLM's `nightly-<commit>`) are ordered by the image's own evidence,
the config's `created`, which the caller supplies (`images.evidence` fetches it, cached by
digest). Ties break on the tag text, so the answer never depends on the registry's listing order.

A selector is a family name, optionally narrowed to one group (`sglang:rocm=720,gpu=mi35x`), or
a pattern of the caller's own (ordered by its date, then its version fields, else by `created`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cache
from typing import Any

from ..core import engines, instant
from .errors import ImageError

DEFAULT_PATTERN = "atom"
DATE_FIELDS = ("Y", "m", "d", "H", "M", "S")
_KINDS = {
    "ver": r"\d+(?:\.\d+){1,3}",
    "semver": r"\d+\.\d+\.\d+",
    "pep440": r"\d+(?:\.\d+){1,3}(?:rc\d+|\.post\d*)?",
    "hex": r"[0-9a-f]{7,40}",
    "num": r"\d+",
    "gpu": r"mi\d{2,3}x",
    "gpuname": r"[Mm][Ii]\d{3}[Xx]?",  # as ATOM's release tags spell it: MI300x, MI350x, mi350
    "word": r"[A-Za-z0-9][A-Za-z0-9._-]*",  # OCI tags are at most 128 characters
}
_VERSIONS = ("ver", "semver", "pep440")
_TOKEN = re.compile(r"%[YmdHMS]|<ver>|<([a-z_]+):([a-z0-9]+)>|%.|<[^>]*>")
_PEP440 = re.compile(r"(?P<rel>\d+(?:\.\d+)*)(?:rc(?P<rc>\d+)|\.post(?P<post>\d*))?")
Evidence = Callable[[list[str]], Mapping[str, str | None]]


class PatternError(ImageError):
    """A tag pattern, family or group selector is malformed (usage error)."""

    exit_code = 2


@dataclass(frozen=True, kw_only=True)
class NightlyTag:
    """A tag that matched a family; `key` is the selection order (newest last)."""

    tag: str
    key: tuple[Any, ...]
    timestamp: datetime | None
    version: tuple[int, ...]
    fields: tuple[tuple[str, str], ...]
    created: str | None = None

    def group(self, names: Iterable[str]) -> tuple[tuple[str, str], ...]:
        values = dict(self.fields)
        return tuple((n, values.get(n, "")) for n in names)


@dataclass(frozen=True, kw_only=True)
class TagPattern:
    text: str
    regex: re.Pattern[str]
    kinds: tuple[tuple[str, str], ...]  # (field, kind), in order of appearance

    def match(self, tag: str) -> dict[str, str] | None:
        m = self.regex.fullmatch(tag)
        return {k: v for k, v in m.groupdict().items() if v is not None} if m else None


@dataclass(frozen=True, kw_only=True)
class Family:
    name: str
    patterns: tuple[TagPattern, ...]
    order: tuple[str, ...]
    group: tuple[str, ...] = ()
    repositories: tuple[str, ...] = ()
    engine: str = "atom"
    about: str = ""
    where: tuple[tuple[str, str], ...] = field(default=())

    @property
    def needs_evidence(self) -> bool:
        return "created" in self.order


def compile_pattern(text: str) -> TagPattern:
    """Compile one tag pattern (see the module docstring)."""
    out, pos, seen, kinds = [], 0, set(), []
    for tok in _TOKEN.finditer(text):
        out.append(re.escape(text[pos : tok.start()]))
        token = tok.group(0)
        if token.startswith("%") and token[1:] in DATE_FIELDS:
            name, regex = token[1], r"\d{4}" if token == "%Y" else r"\d{2}"
        elif token == "<ver>" or (tok.group(2) in _KINDS):
            name, kind = ("ver", "ver") if token == "<ver>" else (tok.group(1), tok.group(2))
            regex = _KINDS[kind]
            kinds.append((name, kind))
        else:
            raise PatternError(
                f"tag pattern {text!r}: unsupported field {token!r} (use %Y %m %d %H %M %S "
                f"or <name:kind> with kind one of {', '.join(_KINDS)})"
            )
        if name in seen:
            raise PatternError(f"tag pattern {text!r}: field {token!r} appears twice")
        seen.add(name)
        out.append(f"(?P<{name}>{regex})")
        pos = tok.end()
    out.append(re.escape(text[pos:]))
    if seen & set(DATE_FIELDS[1:]) and "Y" not in seen:
        raise PatternError(
            f"tag pattern {text!r} needs at least %Y to order nightlies by date "
            "(a month and day without a year do not order across a year boundary)"
        )
    return TagPattern(text=text, regex=re.compile("".join(out)), kinds=tuple(kinds))


def _custom_family(text: str) -> Family:
    pattern = compile_pattern(text)
    names = pattern.regex.groupindex
    order = (["date"] if "Y" in names else []) + [
        n for n, kind in pattern.kinds if kind in _VERSIONS
    ]
    if not order and any(kind == "hex" for _, kind in pattern.kinds):
        order = ["created"]
    if not order:
        raise PatternError(
            f"tag pattern {text!r} has nothing to order by: give %Y, a version field "
            "(<ver>, <name:pep440>) or a commit field (<name:hex>, ordered by the image's created)"
        )
    return Family(name=text, patterns=(pattern,), order=tuple(order))


@cache
def _families(where: tuple[engines.Engine, ...]) -> dict[str, Family]:
    out: dict[str, Family] = {}
    for spec in (f for e in where for f in e.families):
        patterns = tuple(compile_pattern(p) for p in spec.patterns)
        fields = {n for p in patterns for n in p.regex.groupindex}
        for key in [*spec.order, *spec.group]:
            if key not in fields | {"date", "created"}:
                raise PatternError(
                    f"{_where(spec.engine)}: {spec.name}: unknown order/group {key!r}"
                )
        if spec.name in out:
            raise PatternError(f"{_where(spec.engine)}: family {spec.name!r} is declared twice")
        out[spec.name] = Family(
            name=spec.name,
            patterns=patterns,
            order=spec.order,
            group=spec.group,
            repositories=spec.repositories,
            engine=spec.engine,
            about=spec.about,
        )
    return out


def _where(engine: str) -> str:
    return str(engines.engine(engine).path)


def families() -> dict[str, Family]:
    """Every declared engine's families, in declaration order (ATOM's, SGLang's, vLLM's)."""
    return _families(engines.declarations())


def family(selector: str) -> Family:
    """A family by name (`sglang`, `sglang:rocm=720,gpu=mi35x`) or a pattern of one's own."""
    name, _, where_text = selector.partition(":") if ":" in selector else (selector, "", "")
    known = families()
    if name not in known:
        if where_text:
            raise PatternError(f"{selector!r}: unknown family {name!r} (known: {', '.join(known)})")
        return _custom_family(selector)
    fam = known[name]
    where = []
    for item in filter(None, where_text.split(",")):
        key, eq, value = item.partition("=")
        if not eq or key not in fam.group:
            raise PatternError(
                f"{selector!r}: {item!r} is not a group of {name} "
                f"(groups: {', '.join(fam.group) or 'none'}; write field=value)"
            )
        where.append((key, value))
    return replace(fam, where=tuple(where))


def default_family(repository: str) -> str:
    """The first declared family that lists `repository` (its nightly line:
    `vllm` for vllm/vllm-openai-rocm), else `DEFAULT_PATTERN`."""
    found = (name for name, f in families().items() if repository in f.repositories)
    return next(found, DEFAULT_PATTERN)


def engine_of(repository: str) -> str:
    """The engine the images of `repository` (`vllm/vllm-openai-rocm`) serve, by the families
    that list it; the default engine (ATOM) for a repository no family names (fixtures, mirrors)."""
    found = (f.engine for f in families().values() if repository in f.repositories)
    return next(found, engines.DEFAULT_ENGINE)


@dataclass(frozen=True, kw_only=True)
class TagClass:
    """What a tag of a repository is: a build of `family`, or a `never` class and why."""

    kind: str  # "family", a never class (floating, branch, variant, platform, custom), "unknown"
    engine: str | None
    family: str | None = None
    why: str = ""
    # the build line a user selects it by: the family and its group (`sgl-dev:rocm=720,gpu=mi35x`);
    # every key whose image has the same selector is on the same line (one bump for all of them)
    selector: str | None = None


@cache
def _never(where: tuple[engines.Engine, ...]) -> tuple[tuple[engines.NeverSpec, TagPattern], ...]:
    return tuple((n, compile_pattern(p)) for e in where for n in e.never for p in n.patterns)


def classify(repository: str, tag: str) -> TagClass:
    """The family whose patterns `tag` fits among those listing `repository` (first declared
    first), else the first `never` class of an engine that names the repository, else unknown.
    Selection never looks past the families: a classified tag is reported, never chosen."""
    for fam in families().values():
        found = _parse(fam, tag) if repository in fam.repositories else None
        if found is not None:
            where = ",".join(f"{k}={v}" for k, v in found.group(fam.group))
            return TagClass(
                kind="family",
                engine=fam.engine,
                family=fam.name,
                why=fam.about,
                selector=f"{fam.name}:{where}" if where else fam.name,
            )
    for spec, pattern in _never(engines.declarations()):
        if repository in spec.repositories and pattern.match(tag) is not None:
            return TagClass(kind=spec.kind, engine=spec.engine, why=spec.why)
    return TagClass(kind="unknown", engine=None, why="no declared engine names this tag")


def _version_key(text: str | None, kind: str) -> tuple[Any, ...]:
    if text is None:
        return (0,)
    if kind == "pep440":
        m = _PEP440.fullmatch(text)
        assert m is not None  # the pattern matched it
        phase = (0, int(m["rc"])) if m["rc"] is not None else (2, int(m["post"] or 0))
        if m["rc"] is None and m["post"] is None:
            phase = (1, 0)
        return (1, tuple(int(x) for x in m["rel"].split(".")), phase)
    return (1, tuple(int(x) for x in text.split(".")))


def _parse(fam: Family, tag: str) -> NightlyTag | None:
    for pattern in fam.patterns:
        values = pattern.match(tag)
        if values is not None:
            break
    else:
        return None
    if any(values.get(k) != v for k, v in fam.where):
        return None
    when = None
    if "Y" in values:
        try:
            y, mo, d, h, mi, sec = (int(values.get(f) or (f in "md")) for f in DATE_FIELDS)
            when = datetime(y, mo, d, h, mi, sec)
        except ValueError:  # e.g. month 13: looks like a nightly, is not one
            return None
    kinds = dict(pattern.kinds)
    key: list[Any] = []
    for name in fam.order:
        if name == "date":
            key.append((0,) if when is None else (1, when))
        elif name != "created":
            key.append(_version_key(values.get(name), kinds.get(name, "ver")))
    version = next((n for n, k in pattern.kinds if k in _VERSIONS), None)
    rel = re.match(r"\d+(?:\.\d+)*", values[version]) if version else None
    return NightlyTag(
        tag=tag,
        key=tuple(key),
        timestamp=when,
        version=tuple(int(x) for x in rel.group(0).split(".")) if rel else (),
        fields=tuple(sorted(values.items())),
    )


def matching(
    tags: Iterable[str], pattern: str = DEFAULT_PATTERN, evidence: Evidence | None = None
) -> list[NightlyTag]:
    """Tags of the family `pattern` selects, oldest first.

    A family ordered by `created` calls `evidence(tags)` once with the matching tags; a tag whose
    evidence is missing sorts first (never newest on no evidence).
    """
    fam = family(pattern)
    found = [t for t in (_parse(fam, tag) for tag in tags) if t is not None]
    if fam.needs_evidence:
        if evidence is None:
            raise PatternError(
                f"{fam.name}: tags of this family are ordered by the image's created time; "
                "select them through a registry (relpipe images latest)"
            )
        created = evidence([t.tag for t in found])
        found = [
            NightlyTag(
                tag=t.tag,
                key=_created_key(fam, t, created.get(t.tag)),
                timestamp=t.timestamp,
                version=t.version,
                fields=t.fields,
                created=created.get(t.tag),
            )
            for t in found
        ]
    return sorted(found, key=lambda t: (t.key, t.tag))


def _created_key(fam: Family, t: NightlyTag, created: str | None) -> tuple[Any, ...]:
    when = instant.parse_or_none(created)  # compared as instants, never as text
    evidence = (0,) if when is None else (1, when)
    rest = iter(t.key)
    return tuple(evidence if name == "created" else next(rest) for name in fam.order)


def groups(found: Iterable[NightlyTag], fam: Family) -> list[tuple[tuple[str, str], ...]]:
    """The distinct groups (e.g. ROCm line and GPU) among `found`, sorted."""
    return sorted({t.group(fam.group) for t in found})


def newest_of(found: list[NightlyTag], pattern: str) -> NightlyTag | None:
    """The last of `found` (as `matching` returned it), or None when empty.

    When the tags span several groups (ROCm 7.0 and 7.2 builds, MI300X and MI355X) there is no
    single newest: that is a usage error naming the groups to choose from.
    """
    fam = family(pattern)
    spread = groups(found, fam)
    if len(spread) > 1:
        names = ", ".join(f"{fam.name}:" + ",".join(f"{k}={v}" for k, v in g) for g in spread)
        raise PatternError(
            f"{pattern!r}: tags of {len(spread)} builds match; choose one of: {names}"
        )
    return found[-1] if found else None


def newest(
    tags: Iterable[str], pattern: str = DEFAULT_PATTERN, evidence: Evidence | None = None
) -> NightlyTag | None:
    """The newest build among `tags`, or None when no tag matches (see `newest_of`)."""
    return newest_of(matching(tags, pattern, evidence), pattern)
