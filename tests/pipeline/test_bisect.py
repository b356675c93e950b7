"""`relpipe bisect`'s search: halves, journal, resume; the tag range; commits with categories."""

from __future__ import annotations

from pathlib import Path

import pytest

from relpipe.pipeline.bisect import Journal, between, commits_of, endpoints, plan, search
from relpipe.pipeline.errors import PipelineError

TAGS = [f"nightly_2026100{d}0000" for d in range(1, 10)]  # 9 nightlies, oldest first


def test_search_finds_the_first_bad_nightly_by_halves(tmp_path: Path) -> None:
    probed: list[str] = []

    def judge(tag: str) -> bool:
        probed.append(tag)
        return tag >= "nightly_202610060000"

    lines: list[str] = []
    journal = Journal.open(tmp_path, "k", TAGS[0], TAGS[-1])
    assert search(TAGS, judge, journal, lines.append) == (TAGS[4], TAGS[5])
    assert probed == [TAGS[4], TAGS[6], TAGS[5]]  # 3 probes for 7 candidates
    assert lines[0] == f"bisect: step 1 (~3 left): qualifying {TAGS[4]} ..."
    assert journal.verdicts == {TAGS[4]: False, TAGS[6]: True, TAGS[5]: True}


def test_an_interrupted_bisect_resumes_from_its_journal(tmp_path: Path) -> None:
    def interrupted(tag: str) -> bool:
        if tag == TAGS[6]:
            raise KeyboardInterrupt
        return False

    with pytest.raises(KeyboardInterrupt):
        search(TAGS, interrupted, Journal.open(tmp_path, "k", TAGS[0], TAGS[-1]))
    probed: list[str] = []

    def judge(tag: str) -> bool:
        probed.append(tag)
        return tag >= "nightly_202610070000"

    resumed = Journal.open(tmp_path, "k", TAGS[0], TAGS[-1])
    assert resumed.verdicts == {TAGS[4]: False}  # what the first attempt learned
    lines: list[str] = []
    assert search(TAGS, judge, resumed, lines.append) == (TAGS[5], TAGS[6])
    assert TAGS[4] not in probed and lines[0].endswith(f"{TAGS[4]}: good (journal)")


def test_range_is_the_nightlies_between_good_and_bad_in_tag_order() -> None:
    listed = ["latest", TAGS[3], TAGS[0], "nightly", TAGS[2], TAGS[1], TAGS[4]]
    assert between(listed, TAGS[0], TAGS[3], "nightly_%Y%m%d%H%M") == TAGS[:4]
    with pytest.raises(PipelineError, match="must be older"):
        between(listed, TAGS[3], TAGS[0], "nightly_%Y%m%d%H%M")
    with pytest.raises(PipelineError, match="not a nightly"):
        between(listed, "latest", TAGS[3], "nightly_%Y%m%d%H%M")


def test_commits_carry_the_categories_of_the_relevant_files_they_touched() -> None:
    precision = {
        "status": "ok",
        "commits": [
            {"sha": "a" * 40, "subject": "fix(layernorm): fp32 variance", "pr": 2479},
            {"sha": "b" * 40, "subject": "docs: typo", "pr": None},
        ],
        "files": [
            {
                "path": "atom/model_ops/layernorm.py",
                "category": "norm",
                "verdict": "relevant",
                "commits": ["a" * 40],
            },
            {
                "path": "atom/kv.py",
                "category": "kv-cache",
                "verdict": "relevant",
                "commits": ["a" * 40],
            },
            {"path": "README.md", "category": None, "verdict": "cosmetic", "commits": ["b" * 40]},
        ],
    }
    assert [(c["sha"][:1], c["categories"]) for c in commits_of(precision)] == [
        ("a", ["kv-cache", "norm"]),
        ("b", ["not relevant"]),
    ]
    assert commits_of({"status": "error"}) == []


@pytest.mark.parametrize(
    ("bad_tags", "said"),
    [
        ({TAGS[0]}, f"GOOD {TAGS[0]} fails its qualification"),
        (set(), f"BAD {TAGS[-1]} passes its qualification"),
    ],
)
def test_endpoints_are_qualified_first_and_refused_in_one_line(
    tmp_path: Path, bad_tags: set[str], said: str
) -> None:
    probed: list[str] = []

    def judge(tag: str) -> bool:
        probed.append(tag)
        return tag in bad_tags

    journal = Journal.open(tmp_path, "k", TAGS[0], TAGS[-1])
    with pytest.raises(PipelineError, match=said) as refused:
        endpoints(TAGS, judge, journal)
    assert refused.value.exit_code == 1 and "\n" not in str(refused.value)
    assert probed == [TAGS[0]] if TAGS[0] in bad_tags else probed == [TAGS[0], TAGS[-1]]


def test_endpoints_that_hold_are_journaled(tmp_path: Path) -> None:
    journal = Journal.open(tmp_path, "k", TAGS[0], TAGS[-1])
    endpoints(TAGS, lambda tag: tag == TAGS[-1], journal)
    assert Journal.open(tmp_path, "k", TAGS[0], TAGS[-1]).verdicts == {
        TAGS[0]: False,
        TAGS[-1]: True,
    }


def test_dry_run_plan_counts_the_probes_and_qualifies_nothing(tmp_path: Path) -> None:
    journal = Journal.open(tmp_path, "k", TAGS[0], TAGS[-1])
    lines = plan(TAGS, journal)
    assert lines[0] == f"GOOD {TAGS[0]}, BAD {TAGS[-1]}: 7 nightly tag(s) between"
    assert "at most 3 qualification(s)" in lines[2]
    assert not (tmp_path / "bisect").exists()
