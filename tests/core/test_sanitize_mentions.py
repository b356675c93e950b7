"""No @mention survives Markdown escaping outside a code span (issue 27.8: `@@mention` did).

Text drawn from `@` runs, names, zero-width and bidi characters, backticks, backslashes and
punctuation goes through `core.sanitize.markdown` (what release notes, reports and PR bodies use)
and a real CommonMark renderer (markdown-it-py); in the rendered text outside `<code>`, no `@`
that is not part of a word may be followed (after more `@`s or hidden characters) by a name.
"""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from relpipe.core import sanitize

PIECES = st.sampled_from(
    ["@", "@@", "@@@", "\u200b", "\u2060", "\u202e", "\ufeff", "octocat", "org/team", "x", "-"]
    + [" ", "`", "\\", "a", ".", "/", "_", "#12", "*", "[", "]", "(", ")", "<", ">", "\n"]
)
_CODE = re.compile(r"<code>.*?</code>", re.S)
_TAG = re.compile(r"<[^>]*>")
# What GitHub would link as a mention: an `@` not preceded by a word character or `/`, then
# (conservatively) more `@`s or hidden characters, then a name.
_MENTION = re.compile(r"(?<![A-Za-z0-9_/`])@[@\ufffd\u200b-\u200f\u2060-\u206f\ufeff]*[A-Za-z0-9]")


def _outside_code(markdown: str) -> str:
    rendered = MarkdownIt("commonmark").render(markdown)
    return html.unescape(_TAG.sub(" ", _CODE.sub(" ", rendered)))


@pytest.mark.parametrize("raw", ["@@mention", "@@@x", "@\u200bx", "hi @@octocat!", "@\u2060@x"])
def test_the_issues_mentions_become_code_spans(raw: str) -> None:
    out = sanitize.markdown(raw)
    assert _MENTION.search(_outside_code(out)) is None, out
    assert "<code>@" in MarkdownIt("commonmark").render(out)


@settings(max_examples=300, deadline=None)
@example(parts=["@@", "octocat"])
@example(parts=["a", "@", "@", "x"])
@given(parts=st.lists(PIECES, max_size=10))
def test_no_mention_outside_a_code_span(parts: list[str]) -> None:
    out = sanitize.markdown("".join(parts))
    assert _MENTION.search(_outside_code(out)) is None, (out, _outside_code(out))
