"""release.json's upstream commits (issue 36): only the notable ones (a CI-only or docs-only
commit is left out), each PR with its repository, so the notes and the changelog entry write
`ROCm/ATOM#N` as InferenceX's entries do."""

from __future__ import annotations

from typing import Any

from relpipe.changelog.notes import description_lines
from relpipe.changelog.notes.facts import ReleaseFacts
from relpipe.pipeline.release import release_facts
from relpipe.pipeline.verdict import evaluate


def test_release_facts_name_notable_prs_with_their_repository(
    outcome_json: Any, make_outcome: Any, plan_of: Any
) -> None:
    data = outcome_json()
    precision = {**data["precision"], "project": "ROCm/ATOM"}  # atom_rules.yaml's project
    precision["commits"].append(
        {"sha": "d5ef6729e626", "subject": "ci: add a smoke test (#1950)", "pr": 1950}
    )
    precision["files"].append(
        {
            "path": ".github/workflows/atomesh.yaml",
            "category": "ci",
            "verdict": "not-relevant",
            "commits": ["d5ef6729e626"],
        }
    )
    outcome = make_outcome(precision=precision)
    plan = plan_of(data)
    key = plan.config.key if plan.config else "k"
    facts = release_facts(
        [(key, plan, outcome, evaluate(outcome))],
        [],
        [],
        "rocm/atom-dev:nightly_202610070333",
        "rocm/atom-dev:nightly_202610011210",
    )
    assert [(c["pr"], c["repo"]) for c in facts["commits"]] == [
        (2479, "ROCm/ATOM"),
        (2485, "ROCm/ATOM"),  # a comment-only change of linear.py: not CI, docs or tests
    ]
    assert facts["commit_count"] == 3  # the count is of every commit in between
    lines = description_lines(ReleaseFacts.from_json(facts))
    assert any("ROCm/ATOM#2479, ROCm/ATOM#2485" in line for line in lines), lines
