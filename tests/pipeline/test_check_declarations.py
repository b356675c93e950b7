"""Adding a check is one declaration: a test-only review check and a test-only verdict check,
each declared here (no product file touched), appear in every output with their own title."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

import pytest

from relpipe.core.check import Evidence, Judgement, judged
from relpipe.core.status import FAIL, PASS, WARN
from relpipe.pipeline import verdict
from relpipe.pipeline.cli import main as cli
from relpipe.pipeline.report import ReportData, render_html, render_json, render_markdown
from relpipe.validate.review import run as review_run
from relpipe.validate.review.context import Review

KEY = "dsr1-fp4-mi355x-sglang"


def _scoped(review: Review) -> Judgement:
    """Test-only review check: one evidence row per key in scope, at its master's line."""
    rows = [Evidence.at(s.master, s.line, f"key {s.key}") for s in review.scopes]
    return judged(WARN if rows else PASS, f"{len(rows)} key(s) looked at, one `| odd` reason", rows)


@pytest.fixture
def review_check() -> Iterator[str]:
    check = review_run.CHECKS.add(
        review_run.declare("test-only", "a check declared by a test <b>", _scoped, fast=True)
    )
    try:
        yield check.id
    finally:
        review_run.CHECKS.remove(check.id)


def _review(*args: str) -> tuple[int, str]:
    out = StringIO()
    with redirect_stdout(out):
        code = cli(["review", *args])
    return code, out.getvalue()


def test_a_review_check_declared_in_a_test_runs_and_renders(
    review_check: str, inferencex_tree: Path
) -> None:
    where = ["--repo", str(inferencex_tree), "--config-key", KEY]
    code, text = _review(*where, "--check", review_check, "--json")
    doc = json.loads(text)
    (check,) = doc["checks"]
    assert code == 0 and doc["overall"] == "WARN"
    assert check["id"] == "test-only" and check["title"] == "a check declared by a test <b>"
    assert check["status"] == "WARN" and check["evidence"][0][1] == f"key {KEY}"
    assert check["evidence"][0][0].startswith("configs/amd-master.yaml:")
    code, md = _review(*where, "--check", review_check, "--strict")
    assert code == 1
    assert "| 0 | `test-only` a check declared by a test \\<b\\> | ⚠️ WARN |" in md
    assert "one \\`\\| odd\\` reason" in md  # its reason is escaped like every other
    assert "<details><summary>test-only: 1 evidence row(s)</summary>" in md
    code, html = _review(*where, "--check", review_check, "--html")
    assert code == 0 and html.startswith("<!DOCTYPE html>") and html.endswith("</body></html>\n")
    assert "<td>test-only</td><td>a check declared by a test &lt;b&gt;</td>" in html
    assert f"<td>key {KEY}</td>" in html and "<b>" not in html
    # declared fast: the commit hook's `--fast` runs it with the others
    assert review_check in review_run.CHECKS.ids() and review_run.CHECKS[review_check].fast


def test_a_check_id_cannot_be_declared_twice() -> None:
    with pytest.raises(ValueError, match="'owners' is declared twice"):
        review_run.CHECKS.add(review_run.declare("owners", "again", _scoped))
    assert [c.title for c in review_run.CHECKS if c.id == "owners"] == [
        "code owners of the changed files"
    ]


def _c13(o: verdict.Outcome) -> Judgement:
    smoke = o.smoke.tokens if o.smoke else 0
    return judged(FAIL, "test-only: always fails", [("tokens", str(smoke))])


@pytest.fixture
def c13() -> Iterator[str]:
    check = verdict.CHECKS.declare("C13", "a verdict check declared by a test")(_c13)
    try:
        yield check.id
    finally:
        verdict.CHECKS.remove(check.id)


def test_a_verdict_check_declared_in_a_test_is_in_the_verdict_and_every_report(
    c13: str, make_outcome: Any
) -> None:
    outcome = make_outcome()
    v = verdict.evaluate(outcome)
    assert [c.id for c in v.checks][-2:] == ["C12", "C13"]
    assert v.overall == FAIL and v.exit_code == 1
    data = ReportData(run_id="r" * 20, title="t", inputs={}, outcome=outcome, verdict=v)
    md = render_markdown(data).decode()
    assert "| C13 | a verdict check declared by a test | ❌ FAIL | test-only: always fails |" in md
    assert "<details><summary>C13 a verdict check declared by a test: FAIL</summary>" in md
    doc = json.loads(render_json(data))
    assert doc["verdict"]["checks"][-1] == {
        "id": "C13",
        "title": "a verdict check declared by a test",
        "status": "FAIL",
        "reason": "test-only: always fails",
        "evidence": [["tokens", "64"]],
    }
    html = render_html(data).decode()
    assert "<td>C13</td><td>a verdict check declared by a test</td>" in html


def test_every_declared_check_has_a_title_and_a_unique_id() -> None:
    for checklist in (verdict.CHECKS, review_run.CHECKS):
        ids = checklist.ids()
        assert len(set(ids)) == len(ids) == len(checklist)
        assert all(c.title and c.title == c.title.strip() for c in checklist)
    assert verdict.CHECKS.ids() == tuple(f"C{i}" for i in range(1, 13))
