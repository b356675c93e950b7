"""The changelog entry's field table (relpipe.changelog.entry): every rule violation, generated
per field from the table, gets the same finding (code, rule, line) from the fast path (the
whole-entry grammars of a file >= 32 KiB) and from the full parse (a small file, line by line)."""

from __future__ import annotations

import pytest
from relpipe.changelog.entries import scan

LINK = "https://github.com/SemiAnalysisAI/InferenceX/pull/"


@pytest.mark.parametrize(
    ("extra", "line", "fragment"),
    [
        ("  rm-rf: yes\n", 7, "unknown key `rm-rf`"),
        ("  evals-only: 7\n", 7, "evals-only must be a boolean"),
        ("  eval-min-prefill-ep: -5\n", 7, "eval-min-prefill-ep must be an integer >= 1"),
    ],
)
def test_a_continued_description_item_keeps_the_schema_check(
    extra: str, line: int, fragment: str
) -> None:
    """The hole an attack run found: a description item continued on the next line sent the
    entry to PyYAML's event parser, whose `continuation` finding switched the schema off."""
    text = (
        "- config-keys:\n    - k\n  description:\n"
        '    - "first line\n      continued"\n'
        f"  pr-link: {LINK}1\n{extra}"
    )
    changelog = scan(text.encode())
    (block,) = changelog.blocks
    assert block.entry is None
    schema = [f for f in changelog.findings if f.code == "schema"]
    assert [(f.line, fragment in f.message) for f in schema] == [(line, True)]
    assert {f.code for f in changelog.findings} == {"continuation", "schema"}
