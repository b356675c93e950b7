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


def _disagreement(name: str, pr: int | None, report: gate.Report, ok: bool, why: str) -> str | None:
    """None when relpipe's verdict is InferenceX's (or stricter by a security exception)."""
    errors = [f for f in report.findings if f.severity == "error"]
    if report.ok == ok or (ok and errors and all(_security(f) for f in errors)):
        return None
    return (
        f"{name} (pr {pr}): relpipe {'accepts' if report.ok else 'rejects'} {errors[:2]}; "
        f"InferenceX {'accepts' if ok else 'rejects'} ({why[:300]})"
    )


def test_mutated_heads_get_both_validators_verdict(cases) -> None:  # type: ignore[no-untyped-def]
    august = _oracle(corpus.run_oracle, cases)
    october = _oracle(corpus.run_oracle_e2e, cases, "--e2e")
    assert {name.split(":")[0] for name, *_ in cases} == {c.__name__ for c in CLASSES}
    disagreements, split, exceptions = [], [], 0
    for (name, base, head, pr), (ok08, why08), (ok10, why10) in zip(
        cases, august, october, strict=True
    ):
        # The hook judges new entries by the schema of the repository's layout.
        report08 = gate.check(
            base, head, gate.Policy(repo_url=REPO, pr_number=pr, config_keys=None, schema="2026-08")
        )
        report10 = gate.check(
            base, head, gate.Policy(repo_url=REPO, pr_number=pr, config_keys=None, schema="2026-10")
        )
        if ok08 != ok10:
            split.append((name, head[len(base) :]))
        for report, ok, why in ((report08, ok08, why08), (report10, ok10, why10)):
            found = _disagreement(name, pr, report, ok, why)
            if found is not None:
                disagreements.append(found)
        exceptions += ok10 and not report10.ok
    print(
        f"{len(cases)} mutated heads compared with both validators: {len(disagreements)} "
        f"disagreement(s), {exceptions} security exception(s), {len(split)} where the two "
        "validators differ"
    )
    assert not disagreements, "\n".join(disagreements)
    # The one difference between the two validators: 2026-10's `no-evals` field.
    assert all(b"no-evals" in new for _, new in split), [name for name, _ in split]


def test_no_evals_follows_the_layout() -> None:
    """`no-evals: true` passes the 2026-10 validator and fails the 2026-08 one: relpipe judges
    it by the layout's schema (the command line takes it from the changelog's folder)."""
    base, entry = _pair()
    head = base + b"\n" + entry.encode() + b"  no-evals: true\n"
    report = gate.check(
        base, head, gate.Policy(repo_url=REPO, pr_number=None, config_keys=None, schema="2026-08")
    )
    (finding,) = [f for f in report.findings if f.severity == "error"]
    assert finding.code == "schema" and "unknown key `no-evals`" in finding.message
    assert finding.line == head.count(b"\n")
    assert gate.check(
        base, head, gate.Policy(repo_url=REPO, pr_number=None, config_keys=None, schema="2026-10")
    ).ok
    both = head.replace(b"  no-evals: true\n", b"  no-evals: true\n  all-evals: true\n")
    report = gate.check(
        base, both, gate.Policy(repo_url=REPO, pr_number=None, config_keys=None, schema="2026-10")
    )
    assert not report.ok
    assert "no-evals cannot be combined" in report.findings[-1].message


def test_every_entry_with_a_chinese_line_passes_when_appended() -> None:
    """The 136 entries of the real 2026-10 file that carry a Simplified Chinese description line
    after the English ones (InferenceX's validator accepts the file that holds them), each
    appended again to the whole file: relpipe accepts every one (only house-style warnings on
    one of them)."""
    full = (corpus.inferencex_e2e() / "perf-changelog.yaml").read_bytes()
    starts = [0] + [m.start() + 1 for m in re.finditer(rb"\n- config-keys:", full)]
    ends = [*starts[1:], len(full)]
    # Each entry without the separator (blank or whitespace-only lines) after it.
    entries = [full[a:b].rstrip(b" \n") + b"\n" for a, b in zip(starts, ends, strict=True)]
    chinese = [e for e in entries if re.search("[\u4e00-\u9fff]", e.decode("utf-8"))]
    assert len(entries) == 1101 and len(chinese) == 136
    rules = gate.Policy(repo_url=REPO, pr_number=None, config_keys=None, schema="2026-10")
    bad = []
    for entry in chinese:
        report = gate.check(full, full + b"\n" + entry, rules)
        # One of them has 2-space items and a value over two lines: house style, warnings.
        if not report.ok or any(f.code not in ("indent", "continuation") for f in report.findings):
            bad.append((entry[:80], report.findings[:2]))
    assert not bad, bad
