"""Verdict checks C1..C10: each status from recorded outputs, fail closed, one-line reasons."""

from __future__ import annotations

from typing import Any

from relpipe.core.status import FAIL, NA, PASS, WARN
from relpipe.pipeline.verdict import evaluate


def _check(outcome: Any, cid: str) -> Any:
    return next(c for c in evaluate(outcome).checks if c.id == cid)


def test_overall_is_worst_check_and_strict_fails_warn(make_outcome: Any, outcome_json: Any) -> None:
    verdict = evaluate(make_outcome())
    assert [c.id for c in verdict.checks] == [f"C{i}" for i in range(1, 13)]
    assert verdict.overall == WARN  # the norm change warns C5
    assert verdict.exit_code == 0
    assert evaluate(make_outcome(), strict=True).exit_code == 1
    clean = make_outcome(precision={**outcome_json()["precision"], "files": []})
    assert evaluate(clean).overall == PASS


def test_precision_change_warns_naming_the_commit(make_outcome: Any) -> None:
    c5 = _check(make_outcome(), "C5")
    assert c5.status == WARN
    assert "874acf188 fix(layernorm)" in c5.reason and "(norm)" in c5.reason
    assert "linear" not in c5.reason  # cosmetic edits are evidence, not findings
    assert _check(make_outcome(baseline=None, precision=None), "C5").status == NA


def test_digest_not_rehashed_fails(make_outcome: Any, outcome_json: Any) -> None:
    image = {**outcome_json()["image"], "verified": False}
    assert _check(make_outcome(image=image), "C1").status == FAIL
    short = {**outcome_json()["image"], "digest": "sha256:abc"}
    assert _check(make_outcome(image=short), "C1").status == FAIL


def test_smoke_that_decoded_nothing_or_hung_fails(make_outcome: Any) -> None:
    assert _check(make_outcome(smoke={"status": "pass", "tokens": 0}), "C3").status == FAIL
    hung = _check(
        make_outcome(smoke={"status": "fail", "reason": "killed after 60s (timeout)"}), "C3"
    )
    assert hung.status == FAIL and "timeout" in hung.reason
    assert _check(make_outcome(smoke=None), "C3").status == FAIL


def test_eval_zero_samples_low_score_or_missing_threshold_fail(
    make_outcome: Any, outcome_json: Any
) -> None:
    good = outcome_json()["evals"][0]
    cases = {
        "zero samples scored": {**good, "samples": 0},
        "token_agreement 0.5 < 0.99": {**good, "score": 0.5},
        "no score or threshold": {**good, "threshold": None},
    }
    for reason, ev in cases.items():
        c4 = _check(make_outcome(evals=(ev,)), "C4")
        assert c4.status == FAIL and reason in c4.reason
    assert _check(make_outcome(evals=()), "C4").status == FAIL


def test_missing_required_fact_fails_and_optional_warns(
    make_outcome: Any, outcome_json: Any
) -> None:
    facts = dict(outcome_json()["probe"]["facts"])
    facts["engine"] = {"name": "atom", "version": None, "commit": "x"}
    c2 = _check(make_outcome(probe={"status": "ok", "facts": facts}), "C2")
    assert c2.status == FAIL and "engine.version" in c2.reason
    facts = {**outcome_json()["probe"]["facts"], "lmcache": None}
    assert _check(make_outcome(probe={"status": "ok", "facts": facts}), "C2").status == WARN


def test_upstream_watch_list(make_outcome: Any, outcome_json: Any) -> None:
    prec = outcome_json()["precision"]
    missing = {
        **prec,
        "upstream": [{"kind": "must-contain", "ref": "#2452", "found": False, "ok": False}],
    }
    assert _check(make_outcome(precision=missing), "C6").status == WARN
    bad = {
        **prec,
        "upstream": [{"kind": "must-not-contain", "ref": "#2530", "found": True, "ok": False}],
    }
    c6 = _check(make_outcome(precision=bad), "C6")
    assert c6.status == FAIL and "#2530" in c6.reason
    assert _check(make_outcome(), "C6").status == NA


def test_release_checks_are_na_in_qualify_and_fail_on_problems(make_outcome: Any) -> None:
    assert _check(make_outcome(), "C7").status == NA
    entry = {"status": "ok", "problems": ["perf-changelog.yaml:12: pr-link is not canonical"]}
    c7 = _check(make_outcome(changelog=entry), "C7")
    assert c7.status == FAIL and "perf-changelog.yaml:12" in c7.reason
    assert _check(make_outcome(notes={"status": "ok", "problems": []}), "C8").status == PASS


def test_config_scope(make_outcome: Any, outcome_json: Any) -> None:
    assert _check(make_outcome(), "C10").status == PASS
    cfg = {**outcome_json()["config"], "framework": "vllm"}
    assert _check(make_outcome(config=cfg), "C10").status == FAIL
    assert _check(make_outcome(config={**cfg, "points": []}), "C10").status == FAIL
    assert _check(make_outcome(config=None), "C10").status == NA
