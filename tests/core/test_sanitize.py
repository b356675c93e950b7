"""core.sanitize: hostile text from commits, images and configs, made safe for each sink.

The payloads are the attack run's: a commit subject that clears the screen, recolours the
terminal and hides an OSC-8 hyperlink; @mentions, bare #N, bidi overrides and a 5,000-character
line in text pasted into a pull request. The Markdown is rendered by a real CommonMark renderer
(markdown-it-py, which ships with rich) to check what a reader would get.
"""

from __future__ import annotations

import pytest

from relpipe.core import sanitize

CLEAR = "\x1b[2J\x1b[H"
RED = "\x1b[31mred\x1b[0m"
OSC8 = "\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\"
BIDI = "if admin \u202e } \u2066 {"
C1_CSI = "\x9b2J"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (f"{CLEAR}fix norm", "fix norm"),
        (f"paint {RED}", "paint red"),
        (f"see {OSC8}", "see click here"),
        (f"8-bit {C1_CSI}csi", "8-bit csi"),
        ("title \x1b]0;pwned\x07 set", "title set"),
        ("bell\x07 nul\x00 del\x7f", "bell\ufffd nul\ufffd del\ufffd"),
        (BIDI, "if admin \ufffd } \ufffd {"),
        ("zero\u200bwidth", "zero\ufffdwidth"),
        ("two\nlines\r\n  here", "two lines here"),
    ],
)
def test_terminal_text_has_no_escape_sequence_and_no_invisible_character(
    raw: str, expected: str
) -> None:
    out = sanitize.terminal(raw)
    assert out == expected
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in out)


def test_long_lines_are_capped_with_an_ellipsis() -> None:
    out = sanitize.terminal("x" * 5000)
    assert len(out) == sanitize.LINE_LIMIT and out.endswith("\u2026")
    multi = sanitize.clean("a" * 400 + "\nb", one_line=False, limit=10)
    assert multi == "a" * 9 + "\u2026\nb"


def _render(md: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").render(md)


def test_markdown_neutralises_mentions_bare_issue_refs_and_markup() -> None:
    raw = "Fix @octocat and @org/team, see #2452 and ROCm/ATOM#2479 [x](javascript:alert(1)) <b>"
    out = sanitize.markdown(raw)
    assert "`@octocat`" in out and "`@org/team`" in out and "`#2452`" in out
    assert "ROCm/ATOM\\#2479" in out  # a qualified reference names its repository: kept
    html = _render(out)
    # Mentions and bare refs are code (GitHub links neither inside code), nothing is a link or tag.
    assert "<code>@octocat</code>" in html and "<code>#2452</code>" in html
    assert "<a " not in html and "<b>" not in html


def test_markdown_cell_cannot_break_out_of_its_table_row() -> None:
    cell = sanitize.markdown("a | b\n| c | d |\x1b[2J" + "y" * 5000)
    row = f"| x | {cell} |"
    table = _render(f"| h1 | h2 |\n|---|---|\n{row}\n")
    assert table.count("<tr>") == 2 and table.count("<td>") == 2
    assert len(cell) < sanitize.LINE_LIMIT + 20 and "\x1b" not in cell


def test_plain_text_is_unchanged_in_every_sink() -> None:
    text = "ATOM 0.1.7.dev60+g7fc0926c6 on ROCm 7.2.4"
    assert sanitize.terminal(text) == text == sanitize.html_text(text)
    assert sanitize.markdown("relevant: linear.py changed") == "relevant: linear.py changed"
