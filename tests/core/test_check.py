"""The check record and its renderer (`core.check`, `core.checkrender`): every format."""

from __future__ import annotations

import json

from relpipe.core import checkrender
from relpipe.core.check import Check, Checklist, Evidence, Judgement, judged
from relpipe.core.status import FAIL, NA, PASS, WARN


def _check(**over: object) -> Check:
    fields: dict = {"id": "x", "title": "a title", "status": WARN, "reason": "why", "evidence": ()}
    return Check(**{**fields, **over})


def test_judged_keeps_every_row_once_in_first_seen_order() -> None:
    rows = [("b", "2"), Evidence("a", "1"), Evidence("b", "2"), Evidence.at("f.sh", 3, "x")]
    j = judged(FAIL, "r", rows)
    assert j.evidence == (Evidence("b", "2"), Evidence("a", "1"), Evidence("f.sh:3", "x"))
    assert Evidence.at("f.sh", 0, "whole file").where == "f.sh"
    where, what = j.evidence[0]  # a row unpacks like the (where, what) pairs it replaced
    assert (where, what) == ("b", "2")


def test_a_declared_check_carries_its_title_into_its_record() -> None:
    checks = Checklist[int]()

    @checks.declare("even", "the number is even")
    def even(n: int) -> Judgement:
        return judged(PASS if n % 2 == 0 else FAIL, f"{n}")

    assert checks.run(3) == (
        Check(id="even", title="the number is even", status=FAIL, reason="3", evidence=()),
    )
    assert even(4).title == "the number is even" and even(4).status == PASS


def test_json_document_overall_first_then_context_then_checks() -> None:
    checks = [_check(status=NA), _check(id="y", evidence=(Evidence("p:1", "q"),))]
    doc = checkrender.document(checks, scope="s")
    assert list(doc) == ["overall", "scope", "checks"] and doc["overall"] == "WARN"
    assert doc["checks"][1] == {
        "id": "y",
        "title": "a title",
        "status": "WARN",
        "reason": "why",
        "evidence": [["p:1", "q"]],
    }
    assert json.loads(json.dumps(doc)) == doc
    assert checkrender.document([_check(status=NA)])["overall"] == "PASS"  # N/A counts as nothing


def test_terminal_line_strips_escape_sequences_from_the_reason() -> None:
    line = checkrender.text_line(_check(id="C3", status=FAIL, reason="bad \x1b[31mred\x1b[0m"))
    assert line.startswith("C3   FAIL  a title: bad ") and "\x1b" not in line


def test_review_markdown_caps_evidence_and_says_how_many_more() -> None:
    rows = tuple(Evidence.at("a/b.sh", n, f"row {n}") for n in range(1, 46))
    lines = checkrender.markdown_evidence(_check(evidence=rows), checkrender.REVIEW)
    assert lines[0] == "<details><summary>x: 45 evidence row(s)</summary>"
    assert lines[4] == "| `a/b.sh:1` | row 1 |"  # file:line as code
    assert sum(line.startswith("| `a/b.sh:") for line in lines) == 40
    assert "| ... | 5 more row(s) not shown here; `--json` lists them all |" in lines
    report = checkrender.markdown_evidence(_check(evidence=rows), checkrender.REPORT)
    assert report[0] == "<details><summary>x a title: WARN</summary>"
    assert "| a/b.sh:45 | row 45 |" in report  # the report shows every row, as text


def test_markdown_escapes_titles_reasons_and_evidence_from_outside() -> None:
    check = _check(title="t|<b>", reason="@someone fixed #12 | `x`", evidence=(Evidence("k", "|"),))
    (row,) = checkrender.markdown_table([check], checkrender.REPORT)[2:]
    assert row == "| x | t\\|\\<b\\> | ⚠️ WARN | `@someone` fixed `#12` \\| \\`x\\` |"
    assert "| k | \\| |" in checkrender.markdown_evidence(check, checkrender.REPORT)
