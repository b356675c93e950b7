"""Markdown safety for untrusted strings (commit subjects, labels, config values) in release notes.

Commit subjects come from upstream repositories: they may carry Markdown that would reshape the PR
body, `#123` that GitHub would autolink to the wrong repository, `@name` that would ping people,
raw HTML, control or bidi-override characters, newlines, or be huge. `escape` makes such a string
one inert line of text; `code` puts a value in a code span that no content can break out of.
Both clean the text with `core.sanitize`, the one place that knows what is unsafe.
"""

from __future__ import annotations

from relpipe.core import sanitize

MAX_TEXT = 300


def _clean(text: str, limit: int | None) -> str:
    return sanitize.clean(text, limit=limit)


def plain(text: str, limit: int | None = MAX_TEXT) -> str:
    """One clean line of text for places that are not Markdown (titles, changelog descriptions);
    also the first step of every escaper here and of `validate.precision`'s table cells.
    `limit=None` keeps the whole line."""
    return _clean(text, limit)


def escape(text: str, limit: int | None = MAX_TEXT) -> str:
    """One inert line of Markdown text showing `text` literally (`core.sanitize.markdown`)."""
    return sanitize.markdown(text, limit)


def code(text: str, limit: int | None = MAX_TEXT) -> str:
    """A code span containing `text` verbatim (the fence is longer than any backtick run inside)."""
    return sanitize.markdown_code(text, limit)
