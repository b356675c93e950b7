"""Commit subject parsing (validate.precision.subjects): PR numbers, type and scope spellings."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relpipe.validate.precision.subjects import Subject, parse_subject


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("fix(layernorm): accumulate in fp32 (#2479)", Subject("fix", "layernorm", 2479)),
        ("feat!: drop python 3.9 (#12)", Subject("feat", None, 12)),
        ("Fix(moe)!: routing (#7)", Subject("fix", "moe", 7)),
        ("[Perf] default kv_cache_dtype to fp8 (#2483)", Subject("perf", None, 2483)),
        ("[feat](docker): slimmer image (#2401)", Subject("feat", "docker", 2401)),
        ("[ROCm][BugFix] pad rows for gfx950 (#2452)", Subject("fix", "ROCm", 2452)),
        ("[MTP] faster drafts (#3)", Subject("other", "MTP", 3)),
        ("Merge pull request #18 from someone/feature", Subject("merge", None, 18)),
        ("Merge branch 'main' into release", Subject("merge", None, None)),
        ('Revert "feat: x (#5)" (#6)', Subject("revert", None, 6)),
        ("cherry-pick of (#10) into release (#11)", Subject("other", None, 11)),
        ("update README", Subject("other", None, None)),
        ("docs: see https://x/(#1)", Subject("docs", None, 1)),
        ("WIP", Subject("other", None, None)),
        ("", Subject("other", None, None)),
    ],
)
def test_parse_subject(subject: str, expected: Subject) -> None:
    assert parse_subject(subject) == expected


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=120))
def test_parse_subject_never_fails_and_types_are_normalised(subject: str) -> None:
    parsed = parse_subject(subject)
    assert parsed.type in {
        "fix",
        "feat",
        "perf",
        "refactor",
        "docs",
        "test",
        "ci",
        "build",
        "chore",
        "style",
        "revert",
        "wip",
        "merge",
        "other",
    }
    assert parsed.pr is None or parsed.pr >= 0
