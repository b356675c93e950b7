"""Markdown safety for untrusted strings (commit subjects, labels, config values) in release notes.

Commit subjects come from upstream repositories: they may carry Markdown that would reshape the PR
body, `#123` that GitHub would autolink to the wrong repository, `@name` that would ping people,
raw HTML, control or bidi-override characters, newlines, or be huge. `escape` makes such a string
one inert line of text; `code` puts a value in a code span that no content can break out of.
"""

from __future__ import annotations

import re
import unicodedata

MAX_TEXT = 300
# Characters that start Markdown/HTML constructs, autolinks (#, @) or table cells (|).
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~#@!{}])")
_SPACE = re.compile(r"\s+")


def _clean(text: str, limit: int | None) -> str:
    # Drop control, format (bidi overrides, zero-width) and unassigned code points; fold whitespace.
    kept = "".join(ch if not unicodedata.category(ch).startswith("C") else " " for ch in text)
    one_line = _SPACE.sub(" ", kept).strip()
    if limit is None or len(one_line) <= limit:
        return one_line
    return one_line[: limit - 1].rstrip() + "…"


def plain(text: str, limit: int | None = MAX_TEXT) -> str:
    """One clean line of text for places that are not Markdown (titles, changelog descriptions);
    also the first step of every escaper here and of `validate.precision`'s table cells.
    `limit=None` keeps the whole line."""
    return _clean(text, limit)


def escape(text: str, limit: int | None = MAX_TEXT) -> str:
    """One inert line of Markdown text showing `text` literally."""
    return _SPECIAL.sub(r"\\\1", _clean(text, limit))


def code(text: str, limit: int | None = MAX_TEXT) -> str:
    """A code span containing `text` verbatim (the fence is longer than any backtick run inside)."""
    body = _clean(text, limit)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    if body.startswith("`") or body.endswith("`"):
        body = f" {body} "
    return f"{fence}{body}{fence}"
