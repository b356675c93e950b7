"""C11/C12: a qualification's results go into the history, and the image is judged against the
previous image of its config key (a real SQLite store; the record keeps what was found)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from relpipe.changelog.results import ingest, store
from relpipe.core.status import FAIL, NA, PASS
from relpipe.pipeline import comparison
from relpipe.pipeline.verdict import evaluate

KEY = "dsr1-fp8-mi355x-atom"


def _report(tag: str, digest_byte: str, created: str, score: float) -> dict[str, Any]:
    digest = "sha256:" + digest_byte * 64
    return {
        "schema": 1,
        "run": f"run-{tag}",
        "image": {"ref": f"rocm/atom-dev:{tag}", "digest": digest, "created": created},
        "facts": {"engine": {"name": "atom", "version": "0.1.7", "commit": "abc"}},
        "config": {"key": KEY},
        "evals": [
            {
                "status": "pass",
                "suite": "gsm8k",
                "metric": "exact_match",
                "score": score,
                "threshold": 0.9,
                "samples": 1319,
                "point": "isl1024-osl1024-c4",
            }
        ],
    }  # fmt: skip - one recorded report


@pytest.fixture(autouse=True)
def _no_env_history(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(store.HISTORY_ENV, raising=False)


def _checks(out: comparison.HistoryOutput, make_outcome: Any) -> dict[str, str]:
    verdict = evaluate(replace(make_outcome(), history=out))
    return {c.id: c.status for c in verdict.checks if c.id in ("C11", "C12")}


def test_first_image_is_na_then_a_drop_beyond_the_standard_errors_fails(
    tmp_path: Path, make_outcome: Any
) -> None:
    first = comparison.compare_run(
        _report("nightly_1", "a", "2026-10-01T00:00:00Z", 0.95), run_id="r1", state=tmp_path
    )
    assert first.status == PASS and _checks(first, make_outcome) == {"C11": NA, "C12": NA}
    same = comparison.compare_run(
        _report("nightly_2", "b", "2026-10-02T00:00:00Z", 0.948), run_id="r2", state=tmp_path
    )
    assert _checks(same, make_outcome) == {"C11": NA, "C12": PASS}
    drop = comparison.compare_run(
        _report("nightly_3", "c", "2026-10-03T00:00:00Z", 0.91), run_id="r3", state=tmp_path
    )
    assert _checks(drop, make_outcome) == {"C11": NA, "C12": FAIL}
    (finding,) = drop.findings
    assert (finding.kind, finding.old_image, finding.old_value, finding.new_value) == (
        "regression", "rocm/atom-dev@sha256:" + "b" * 64, 0.948, 0.91,
    )  # fmt: skip
    # the record keeps what was found; a re-render reads it back
    (tmp_path / "run").mkdir()
    comparison.save(drop, tmp_path / "run")
    assert comparison.load(tmp_path / "run") == drop


def test_requalifying_adds_nothing_and_the_report_json_ingests_the_same(tmp_path: Path) -> None:
    report = _report("nightly_1", "a", "2026-10-01T00:00:00Z", 0.95)
    comparison.compare_run(report, run_id="r1", state=tmp_path)
    comparison.compare_run(report, run_id="r1", state=tmp_path)
    (tmp_path / "report.json").write_text(json.dumps({**report, "run": "r1"}))
    with store.open_store(str(tmp_path / "history.sqlite")) as db:
        assert db.count() == 1
        assert db.add(ingest.ingest([tmp_path / "report.json"]).samples) == 0


def test_no_config_key_is_na(tmp_path: Path, make_outcome: Any) -> None:
    report = {**_report("nightly_1", "a", "2026-10-01T00:00:00Z", 0.95), "config": None}
    out = comparison.compare_run(report, run_id="r", state=tmp_path)
    assert _checks(out, make_outcome) == {"C11": NA, "C12": NA}
    assert not (tmp_path / "history.sqlite").exists()


def test_html_report_charts_the_keys_history(tmp_path: Path, make_outcome: Any) -> None:
    from relpipe.pipeline.report import ReportData, render_html, render_markdown

    for day, (byte, score) in enumerate([("a", 0.95), ("b", 0.948), ("c", 0.91)], start=1):
        out = comparison.compare_run(
            _report(f"nightly_{day}", byte, f"2026-10-0{day}T00:00:00Z", score),
            run_id=f"r{day}",
            state=tmp_path,
        )
    (trend,) = out.trends
    assert (trend.point, trend.metric, trend.values) == (
        "isl1024-osl1024-c4",
        "gsm8k",
        (0.95, 0.948, 0.91),
    )
    assert trend.images[-1] == out.image == "rocm/atom-dev@sha256:" + "c" * 64
    outcome = replace(make_outcome(), history=out)
    data = ReportData(
        run_id="0123456789abcdef0123",
        title="qualify nightly_3",
        inputs={"kind": "qualify"},
        outcome=outcome,
        verdict=evaluate(outcome),
    )
    html = render_html(data).decode()
    figure = html[html.index('<figure id="plot-history">') :]
    figure = figure[: figure.index("</figure>")]
    assert "gsm8k per image (noise band shaded)" in figure and "this image" in figure
    assert figure.count("<svg") == 1
    # the run's report links to the store's dashboard, written beside the store (runs/<id>/..)
    assert 'href="../../history-report.html"' in html
    assert "| C12 |" in render_markdown(data).decode()
