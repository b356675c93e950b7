"""Notes check: EN/ZH parity and consistency with the facts, on notes rendered from real facts."""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from pathlib import Path

import pytest

from relpipe.changelog.notes import ReleaseFacts, load_facts, render, render_title
from relpipe.core.findings import Finding
from relpipe.validate.notes_check import TRADITIONAL, check

EXAMPLE = Path(str(resources.files("relpipe.changelog.notes").joinpath("example.json")))
PINNED_TAG, WRONG_TAG = "nightly_202610070333", "nightly_202610061452"


@pytest.fixture(scope="module")
def facts() -> ReleaseFacts:
    return load_facts(EXAMPLE)


@pytest.fixture(scope="module")
def notes(facts: ReleaseFacts) -> str:
    return f"# {render_title(facts)}\n\n{render(facts, 'both')}"


def _halves(text: str) -> tuple[str, str]:
    en, zh = text.split("\n## 中文\n")
    return en, zh


def _zh(text: str, old: str, new: str) -> str:
    en, zh = _halves(text)
    assert old in zh
    return f"{en}\n## 中文\n{zh.replace(old, new, 1)}"


# The claim findings (`validate.notes_claims`) that any changed rendered line adds; the tests
# below are about the parity and token checks beside them.
CLAIMS = {"facts-missing", "facts-extra"}


def _claims(findings: list[Finding]) -> set[str]:
    return {f.code for f in findings if f.code in CLAIMS}


def _without_claims(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.code not in CLAIMS]


def _line_of(text: str, needle: str, start: int = 0) -> int:
    lines = text.split("\n")
    return next(i for i, line in enumerate(lines, 1) if i > start and needle in line)


def test_rendered_sample_passes(notes: str, facts: ReleaseFacts) -> None:
    assert check(notes, facts) == []


def test_swapped_image_names_both_tags(notes: str, facts: ReleaseFacts) -> None:
    bad = notes.replace(PINNED_TAG, WRONG_TAG)
    findings = check(bad, facts)
    image = [f for f in findings if f.code == "facts-image"]
    assert image and all(WRONG_TAG in f.message and PINNED_TAG in f.message for f in image)
    assert {f.line for f in image} >= {_line_of(bad, "- Image: "), _line_of(bad, "- 镜像：")}
    assert {f.message for f in findings if f.code == "facts-pinned"} == {
        f"the {half} half never names the pinned image rocm/atom-dev:{PINNED_TAG}"
        for half in ("English", "Chinese")
    }


def test_only_the_title_naming_another_tag_fails(notes: str, facts: ReleaseFacts) -> None:
    title, rest = notes.split("\n", 1)
    findings = check(title.replace(PINNED_TAG, WRONG_TAG) + "\n" + rest, facts)
    assert [(f.line, f.code) for f in findings] == [(1, "facts-image")]
    assert WRONG_TAG in findings[0].message and PINNED_TAG in findings[0].message


def test_a_number_dropped_from_the_chinese_half_fails_parity(
    notes: str, facts: ReleaseFacts
) -> None:
    bad = _zh(notes, "0.93（", "（")
    assert _claims(check(bad, facts)) == {"facts-missing", "facts-extra"}
    assert _without_claims(check(bad, facts)) == [
        Finding(
            path="NOTES.md",
            line=_line_of(bad, "Evaluation `gsm8k`"),
            code="parity-number",
            message="number 0.93 appears 1 time(s) in the English half but 0 in the Chinese half; "
            "first difference: "
            f"English line {_line_of(bad, 'Evaluation `gsm8k`')} has 1, "
            f"Chinese line {_line_of(bad, '评测 `gsm8k`')} has 0",
        )
    ]


def test_a_pr_reference_dropped_from_the_chinese_half_fails_parity(
    notes: str, facts: ReleaseFacts
) -> None:
    bad = _zh(notes, "ROCm/ATOM#2483：", "上游：")
    assert _claims(check(bad, facts)) == {"facts-missing", "facts-extra"}
    findings = _without_claims(check(bad, facts))
    assert [(f.code, f.line) for f in findings] == [
        ("parity-pr", _line_of(bad, "- ROCm/ATOM#2483: "))
    ]
    assert (
        "PR reference ROCm/ATOM#2483 appears 1 time(s) in the English half but 0"
        in findings[0].message
    )


def test_a_traditional_substitution_fails(notes: str, facts: ReleaseFacts) -> None:
    bad = _zh(notes, "在并发", "在並發")
    line = _line_of(bad, "在並發")
    assert [(f.line, f.code, f.message) for f in _without_claims(check(bad, facts))] == [
        (line, "traditional", "Traditional character '並'; write the Simplified '并'"),
        (line, "traditional", "Traditional character '發'; write the Simplified '发'"),
    ]
    assert {
        "鏡": "镜",
        "評": "评",
        "測": "测",
        "這": "这",
        "與": "与",
        "為": "为",
        "變": "变",
        "參": "参",
        "數": "数",
    }.items() <= TRADITIONAL.items()


def test_bullet_structure_must_match(notes: str, facts: ReleaseFacts) -> None:
    bad = _zh(notes, "  - ROCm：", "- ROCm：")
    assert [f.code for f in _without_claims(check(bad, facts))] == ["parity-structure"]
    assert _claims(check(bad, facts)) == {"facts-missing", "facts-extra"}


def test_glossary_terms_must_be_translated(notes: str, facts: ReleaseFacts) -> None:
    en, zh = _halves(notes)
    bad = f"{en}\n## 中文\n{zh.replace('吞吐', '处理')}"
    findings = _without_claims(check(bad, facts))
    assert [(f.code, f.line) for f in findings] == [
        ("glossary", _line_of(bad, "throughput points"))
    ]
    assert "'throughput'" in findings[0].message and "'吞吐'" in findings[0].message


def test_a_version_pr_or_digest_not_in_the_facts_fails(notes: str, facts: ReleaseFacts) -> None:
    bad = notes.replace("`7.2.4`", "`7.2.5`").replace("ROCm/ATOM#2452", "ROCm/ATOM#2453")
    bad = bad.replace(
        "sha256:2f605a3e8b459a0385f784edb0335c11892277fee650fe42044e4af39e36dd01",
        "sha256:" + "0" * 64,
    )
    codes = sorted({f.code for f in _without_claims(check(bad, facts))})
    assert codes == ["facts-digest", "facts-pr", "facts-version"]
    messages = {f.message for f in check(bad, facts)}
    assert "version 7.2.5 is not in the facts" in messages
    assert "PR reference ROCm/ATOM#2453 is not in the facts" in messages


def test_a_tag_named_on_its_own_carries_its_version(facts: ReleaseFacts) -> None:
    """SGLang's and vLLM's release tags start with the version (`v0.5.17-rocm720-mi35x-...`):
    the title names the bare tag, whose version is the image's, not an unsupported claim."""
    assert facts.new_image is not None
    image = "lmsysorg/sglang-rocm:v0.5.17-rocm720-mi35x-20260821"
    sglang = dataclasses.replace(facts, new_image=dataclasses.replace(facts.new_image, ref=image))
    text = f"# {render_title(sglang)}\n\n{render(sglang, 'both')}"
    assert "v0.5.17-rocm720-mi35x-20260821 for" in text
    assert check(text, sglang) == []
    bad = text.replace("v0.5.17-rocm720-mi35x-20260821 for", "v0.5.18 for", 1)
    assert "version v0.5.18 is not in the facts" in {f.message for f in check(bad, sglang)}


def test_notes_without_a_chinese_half_fail(facts: ReleaseFacts) -> None:
    findings = check(render(facts, "en"), facts)
    assert [f.code for f in findings] == ["no-chinese-half"]


def test_an_unknown_config_key_fails(notes: str, facts: ReleaseFacts) -> None:
    bad = notes.replace(
        "minimaxm3-fp4-mi355x-atom-agentic-mtp", "minimaxm3-fp8-mi355x-atom-agentic-mtp"
    )
    assert {f.message for f in check(bad, facts) if f.code == "facts-key"} == {
        "config key minimaxm3-fp8-mi355x-atom-agentic-mtp is not in the facts"
    }


def test_glossary_words_inside_quoted_subjects_are_not_prose() -> None:
    data = json.loads(EXAMPLE.read_text())
    data["commits"][0]["subject"] = "improve decode throughput under high concurrency"
    data["points_plan"] = []
    facts = ReleaseFacts.from_json(data)
    assert "吞吐" not in render(facts, "zh")
    assert check(render(facts, "both"), facts) == []


def test_a_title_naming_the_nightly_by_day_must_name_the_pinned_day(
    notes: str, facts: ReleaseFacts
) -> None:
    title, rest = notes.split("\n", 1)
    good = title.replace(PINNED_TAG, "1007 nightly")
    assert check(good + "\n" + rest, facts) == []
    # The real PR's title still said "1006 nightly" after the body moved to 1007.
    bad = title.replace(PINNED_TAG, "1006 nightly")
    [finding] = check(bad + "\n" + rest, facts)
    assert (finding.line, finding.code) == (1, "facts-image")
    assert finding.message.startswith("'1006 nightly' names a nightly of 10-06")
    assert PINNED_TAG in finding.message
