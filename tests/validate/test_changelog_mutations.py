"""Conformance under mutation (issue 27 item 9): relpipe's perf-changelog verdict against BOTH of
InferenceX's validators, the 2026-08 one (`tree/utils/validate_perf_changelog.py` with
`process_changelog.py`'s checks of the additions) and the 2026-10 one
(`tree-2026-10/inferencex-e2e/infx/workflows/validate_perf_changelog.py`), per mutated head.

The heads come from tests/changelog_mutator.py: each class (key order, indentation, quoting,
duplicate keys, flags with odd types, comments, Unicode, whitespace/CRLF/tabs, empty items,
anchors/aliases/tags, pr-link forms, values of other types, history edits and deletions,
separators, block and flow scalars, field names) applied to the real #3750 entry appended to the
real 2026-10 changelog's last 60 entries (14 of them with a Chinese description line; the
oracle's pure-Python loader needs about a second per whole file). Each oracle judges every head in
one process. Config keys are not resolved here (the 2026-10 tree lacks the generator that does);
test_changelog_conformance.py covers them.

Agreement: relpipe accepts exactly what both accept, except the documented security exceptions
(docs/perf-changelog.md), which it rejects. Where the two validators disagree with each other
(2026-10 added the `no-evals` field), relpipe follows the 2026-08 schema: a known gap, listed.
`RELPIPE_MUTATIONS_PER_CLASS` (default 12) sets the heads per class.
"""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path

import corpus
import pytest
from changelog_mutator import CLASSES, mutations
from relpipe.validate.gate import hook as gate

REPO = "https://github.com/SemiAnalysisAI/InferenceX"
DRIVER = Path(__file__).resolve().parent.parent / "oracles" / "changelog_gate.py"
PER_CLASS = int(os.environ.get("RELPIPE_MUTATIONS_PER_CLASS", "12"))
# Findings relpipe makes where InferenceX accepts: the documented security exceptions.
SECURITY_CODES = frozenset({"unsafe-char", "non-printable", "alias", "anchor", "tag", "merge-key"})


def _security(finding: gate.Finding) -> bool:
    return finding.code in SECURITY_CODES or (
        finding.code == "schema" and "contains a control, line-break, invisible" in finding.message
    )


def _pair() -> tuple[bytes, str]:
    derived = corpus.inferencex_e2e().parent / "_derived"
    base = (derived / "perf-changelog.base-before-3750.yaml").read_bytes()
    head = (derived / "perf-changelog.head-3750.yaml").read_bytes()
    starts = [m.start() + 1 for m in re.finditer(rb"\n- config-keys:", base)]
    return base[starts[-60] :], head[len(base) + 1 :].decode("utf-8")


@pytest.fixture(scope="module")
def cases() -> list[tuple[str, bytes, bytes, int | None]]:
    base, entry = _pair()
    heads = list(mutations(base, entry, seed=27, per_class=PER_CLASS))
    # Every other head in PR mode (placeholders allowed), the rest as a main-branch merge.
    return [(name, base, head, 3750 if i % 2 else None) for i, (name, head) in enumerate(heads)]


def _oracle(run, cases, *args: str) -> list[tuple[bool, str]]:  # type: ignore[no-untyped-def]
    payload = [
        {
            "base": base64.b64encode(base).decode(),
            "head": base64.b64encode(head).decode(),
            "pr": pr,
            "all_evals": False,
            "evals_only": False,
            "resolve": False,
        }
        for _, base, head, pr in cases
    ]
    done = run(DRIVER, *args, input=json.dumps(payload), timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    return [(ok, why) for ok, why in json.loads(done.stdout)]


def test_mutated_heads_get_both_validators_verdict(cases) -> None:  # type: ignore[no-untyped-def]
    august = _oracle(corpus.run_oracle, cases)
    october = _oracle(corpus.run_oracle_e2e, cases, "--e2e")
    assert {name.split(":")[0] for name, *_ in cases} == {c.__name__ for c in CLASSES}
    disagreements, split, exceptions = [], [], 0
    for (name, base, head, pr), (ok08, why08), (ok10, why10) in zip(
        cases, august, october, strict=True
    ):
        report = gate.check(base, head, gate.Rules(REPO, pr, None))
        errors = [f for f in report.findings if f.severity == "error"]
        if ok08 != ok10:
            split.append(name)
            if report.ok != ok08:
                disagreements.append(f"{name}: relpipe {report.ok}, 2026-08 {ok08} ({why08})")
            continue
        if report.ok == ok08:
            continue
        if ok08 and errors and all(_security(f) for f in errors):
            exceptions += 1
            continue
        disagreements.append(
            f"{name} (pr {pr}): relpipe {'accepts' if report.ok else 'rejects'} {errors[:2]}; "
            f"InferenceX {'accepts' if ok08 else 'rejects'} ({why08[:200]} | {why10[:200]})"
        )
    print(
        f"{len(cases)} mutated heads compared with both validators: {len(disagreements)} "
        f"disagreement(s), {exceptions} security exception(s), {len(split)} where the two "
        "validators differ"
    )
    assert not disagreements, "\n".join(disagreements)
    # The only difference between the two validators the mutator reaches: `no-evals`.
    assert all("no-evals" in name or "no-evals" in head.decode("utf-8", "replace")[-400:]
               for name, _, head, _ in [c for c in cases if c[0] in split]), split
