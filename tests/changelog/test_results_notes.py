"""The release notes' history table: every point of the key (no selection), the change and whether
it is inside the noise band, in both languages, and the notes checker holds the halves equal."""

from __future__ import annotations

import json
from importlib import resources

from relpipe.changelog.notes import ReleaseFacts, render
from relpipe.validate import notes_check


def _facts() -> ReleaseFacts:
    data = json.loads(
        resources.files("relpipe.changelog.notes").joinpath("example.json").read_text()
    )
    key = data["config_keys"][0]
    rows = [
        ("1024/1024 c=4", "throughput", 1000.0, 1012.0, 0.012, 0.08, "within-noise"),
        ("1024/1024 c=64", "throughput", 5000.0, 4400.0, -0.12, 0.08, "regression"),
        ("1024/1024 c=128", "ttft", 310.0, 250.0, -0.1935, 0.1, "improvement"),
        ("gsm8k", "accuracy", 0.95, 0.948, -0.0021, 0.0244, "within-noise"),
        ("mtp", "accept_length", 3.0, None, None, None, "failed"),
    ]
    data["history"] = [
        {
            "key": key,
            "point": p,
            "metric": m,
            "old": o,
            "new": n,
            "change": c,
            "band": b,
            "verdict": v,
        }
        for p, m, o, n, c, b, v in rows
    ]
    return ReleaseFacts.from_json(data)


def test_every_point_is_a_row_in_both_halves_and_the_checker_passes() -> None:
    facts = _facts()
    assert ReleaseFacts.from_json(facts.to_json()) == facts
    text = render(facts, "both")
    en, zh = text.split("## 中文")
    for half in (en, zh):
        rows = [line for line in half.splitlines() if line.startswith("| `")]
        assert len(rows) == 5
    assert "| -12.0% | ±8.0% | regression (outside the band) |" in en
    assert "| -12.0% | ±8.0% | 回退（超出噪声带） |" in zh
    assert "| +1.2% | ±8.0% | within the noise band |" in en
    assert notes_check.check(text, facts) == []


def test_a_number_changed_in_one_half_of_the_table_is_found() -> None:
    facts = _facts()
    text = render(facts, "both")
    head, zh = text.split("## 中文")
    tampered = head + "## 中文" + zh.replace("| 4400 |", "| 4500 |")
    findings = notes_check.check(tampered, facts)
    assert findings and any("4400" in f.message or "4500" in f.message for f in findings)
