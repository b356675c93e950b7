"""Nightly tag patterns and newest-nightly selection.

A pattern is a tag template with strftime-style fields (`%Y %m %d %H %M %S`) and an optional
`<ver>` field (a dotted version such as `0.10.1`); everything else is literal. Floating tags
(`latest`, `nightly`, overwritten date-only variants that do not fit the pattern) never match,
so they are never picked. Ties (same timestamp) break on the version, then on the tag text, so
the answer never depends on the registry's listing order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from relpipe.images.errors import ImageError

DEFAULT_PATTERN = "nightly_%Y%m%d%H%M"
# Named families seen on ROCm's Docker Hub repositories.
NAMED_PATTERNS = {
    "atom": DEFAULT_PATTERN,
    "vllm": "vllm-v<ver>-nightly_%Y%m%d",
    "sglang": "sglang-v<ver>-nightly_%Y%m%d",
}

_FIELDS = {
    "%Y": r"(?P<Y>\d{4})",
    "%m": r"(?P<m>\d{2})",
    "%d": r"(?P<d>\d{2})",
    "%H": r"(?P<H>\d{2})",
    "%M": r"(?P<M>\d{2})",
    "%S": r"(?P<S>\d{2})",
    "<ver>": r"(?P<ver>\d+(?:\.\d+){0,3})",
}
_TOKEN = re.compile(r"%[YmdHMS]|<ver>|%.")


class PatternError(ImageError):
    """A tag pattern is malformed (usage error)."""

    exit_code = 2


@dataclass(frozen=True, order=True)
class NightlyTag:
    """A tag that matched a pattern; ordering is the selection order (newest last)."""

    timestamp: datetime
    version: tuple[int, ...]
    tag: str


@dataclass(frozen=True)
class TagPattern:
    text: str
    regex: re.Pattern[str]

    def match(self, tag: str) -> NightlyTag | None:
        m = self.regex.fullmatch(tag)
        if not m:
            return None
        g = m.groupdict()
        try:
            when = datetime(
                int(g["Y"]),
                int(g.get("m") or 1),
                int(g.get("d") or 1),
                int(g.get("H") or 0),
                int(g.get("M") or 0),
                int(g.get("S") or 0),
            )
        except ValueError:  # e.g. month 13: looks like a nightly, is not one
            return None
        version = tuple(int(x) for x in g["ver"].split(".")) if g.get("ver") else ()
        return NightlyTag(when, version, tag)


def compile_pattern(text: str) -> TagPattern:
    """Compile a pattern (or one of the names in `NAMED_PATTERNS`)."""
    text = NAMED_PATTERNS.get(text, text)
    out, pos, seen = [], 0, set()
    for tok in _TOKEN.finditer(text):
        out.append(re.escape(text[pos : tok.start()]))
        field = tok.group(0)
        if field not in _FIELDS:
            raise PatternError(
                f"tag pattern {text!r}: unsupported field {field!r} (use %Y %m %d %H %M %S <ver>)"
            )
        if field in seen:
            raise PatternError(f"tag pattern {text!r}: field {field!r} appears twice")
        seen.add(field)
        out.append(_FIELDS[field])
        pos = tok.end()
    out.append(re.escape(text[pos:]))
    if "%Y" not in seen:
        raise PatternError(f"tag pattern {text!r} needs at least %Y to order nightlies by date")
    return TagPattern(text, re.compile("".join(out)))


def matching(tags: Iterable[str], pattern: str = DEFAULT_PATTERN) -> list[NightlyTag]:
    """Tags that match `pattern`, oldest first."""
    compiled = compile_pattern(pattern)
    found = (compiled.match(t) for t in tags)
    return sorted(t for t in found if t is not None)


def newest(tags: Iterable[str], pattern: str = DEFAULT_PATTERN) -> NightlyTag | None:
    """The newest nightly among `tags`, or None when no tag matches."""
    found = matching(tags, pattern)
    return found[-1] if found else None
