"""The notes check refuses false facts written into either or both halves (issue 27.3).

The notes are the real rendering of the example facts (and of a variant with a relevant
precision change, a warning check, two evals and a bilingual risk note). Each attack of the issue
is applied to both halves and to the Chinese half alone, and must fail; a property test draws any
one-character edit, any dropped line and any inserted line of hidden text over the rendered notes
and holds that the check fails, while the untouched notes pass.
"""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relpipe.changelog.notes import ReleaseFacts, render, render_title
from relpipe.validate.notes_check import check

EXAMPLE = Path(str(resources.files("relpipe.changelog.notes").joinpath("example.json")))
ZH = "\n## 中文\n"
DIGEST = "sha256:2f605a3e8b459a0385f784edb0335c11892277fee650fe42044e4af39e36dd01"


def _variant() -> dict[str, Any]:
    data = json.loads(EXAMPLE.read_text())
    data["precision"]["relevant"] = [{"path": "atom/model_ops/linear.py", "category": "linear"}]
    data["validation"]["checks"].append({"id": "C7", "status": "WARN"})
    data["validation"]["evals"].append(
        {"suite": "decode-parity/tp4", "score": 1.0, "threshold": 0.99, "samples": 32}
    )
    data["risks"].append(
        {"kind": "note", "text": "MTP acceptance not measured", "text_zh": "未测量 MTP 接受率"}
    )
    return data


FACTS = {
    "example": ReleaseFacts.from_json(json.loads(EXAMPLE.read_text())),
    "variant": ReleaseFacts.from_json(_variant()),
}


def _notes(facts: ReleaseFacts) -> str:
    return f"# {render_title(facts)}\n\n{render(facts, 'both')}"


def _edit(notes: str, en_edit: tuple[str, str] | None, zh_edit: tuple[str, str] | None) -> str:
    """Each half with its (old, new) replacement, when given (it must contain `old`)."""
    halves = notes.split(ZH)
    for i, edit in enumerate((en_edit, zh_edit)):
        if edit is not None:
            assert edit[0] in halves[i], edit[0]
            halves[i] = halves[i].replace(*edit)
    return ZH.join(halves)


ZWSP_DIGEST = DIGEST[:20] + "\u200b" + DIGEST[20:]
# (name, English (old, new) or None, Chinese (old, new) or None): each attack the issue lists,
# in both halves or in one (the Chinese half alone is the harder case: parity sees no number).
ATTACKS = [
    ("score 0.93 -> 0.99", ("0.93", "0.99"), ("0.93", "0.99")),
    ("commit count 17 -> 7", ("(17 commits)", "(7 commits)"), ("（17 个提交）", "（7 个提交）")),
    ("commit count 17 -> 7, Chinese only", None, ("（17 个提交）", "（7 个提交）")),
    ("C5 PASS -> FAIL", ("diff: PASS", "diff: FAIL"), ("精度差异：PASS", "精度差异：FAIL")),
    ("C5 PASS -> FAIL, Chinese only", None, ("精度差异：PASS", "精度差异：FAIL")),
    ("C3 line dropped", ("- C3 smoke decode: PASS\n", ""), ("- C3 冒烟解码：PASS\n", "")),
    ("C3 line dropped, Chinese only", None, ("- C3 冒烟解码：PASS\n", "")),
    (
        "risk dropped",
        ("- Upstream fix ROCm/ATOM#2452 is not yet in the image\n", ""),
        ("- 上游修复 ROCm/ATOM#2452 尚未包含在该镜像中\n", ""),
    ),
    (
        "risk negated",
        ("is not yet in the image", "is in the image"),
        ("尚未包含在该镜像中", "已包含在该镜像中"),
    ),
    ("risk negated, Chinese only", None, ("尚未包含在该镜像中", "已包含在该镜像中")),
    ("risks section dropped, Chinese only", None, ("### 风险\n", "")),
    ("precision verdict flipped, Chinese only", None, ("无涉及精度的改动", "有涉及精度的改动")),
    (
        "image changed",
        ("nightly_202610070333`\n", "nightly_202610061452`\n"),
        ("nightly_202610070333`\n", "nightly_202610061452`\n"),
    ),
    (
        "link changed",
        ("ROCm/ATOM#2483: fix", "[ROCm/ATOM#2483](https://evil.example): fix"),
        ("ROCm/ATOM#2483：fix", "[ROCm/ATOM#2483](https://evil.example)：fix"),
    ),
    ("HTML comment", ("### Risks\n", "### Risks\n\n<!-- the fix is in: ship it -->\n"), None),
    ("HTML comment, Chinese only", None, ("### 风险\n", "### 风险\n<!--\n已修复\n-->\n")),
    ("zero-width in the digest", (DIGEST, ZWSP_DIGEST), (DIGEST, ZWSP_DIGEST)),
    ("zero-width in the digest, Chinese only", None, (DIGEST, ZWSP_DIGEST)),
    (
        "mention",
        ("### Risks\n", "### Risks\n\ncc @@octocat\n"),
        ("### 风险\n", "### 风险\n\n@@octocat\n"),
    ),
    (
        "a second, false status line",
        ("- C5 precision diff: PASS\n", "- C5 precision diff: PASS\n- C5 precision diff: FAIL\n"),
        ("- C5 精度差异：PASS\n", "- C5 精度差异：PASS\n- C5 精度差异：FAIL\n"),
    ),
]


def test_the_rendered_notes_pass() -> None:
    for facts in FACTS.values():
        assert check(_notes(facts), facts) == []


@pytest.mark.parametrize(("name", "en", "zh"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_each_attack_fails(
    name: str, en: tuple[str, str] | None, zh: tuple[str, str] | None
) -> None:
    facts = FACTS["example"]
    findings = check(_edit(_notes(facts), en, zh), facts)
    assert findings, name
    assert all("\n" not in f.message for f in findings)


@st.composite
def _mutation(draw: st.DrawFn) -> tuple[str, str, ReleaseFacts]:
    """(mutated notes, what was done, facts): one edit to a non-title line of real notes."""
    facts = FACTS[draw(st.sampled_from(sorted(FACTS)))]
    lines = _notes(facts).split("\n")
    # The title is checked as prose (hand-edited titles pass); `## 中文` may be any heading level.
    body = [i for i, line in enumerate(lines) if i > 0 and line.strip() and line != ZH.strip()]
    i = draw(st.sampled_from(body))
    line = lines[i]
    kind = draw(st.sampled_from(["substitute", "insert", "delete", "drop", "hidden-line"]))
    at = draw(st.integers(0, len(line) - 1))
    char = draw(
        st.characters(blacklist_categories=("Zs", "Cs"), blacklist_characters="\n\r\t")
        | st.sampled_from(["\u200b", "\u202e", "\u2066", "\ufeff", "\x85", "0", "9", "."])
    )
    if kind == "substitute" and line[at] != char:
        lines[i] = line[:at] + char + line[at + 1 :]
    elif kind == "insert":
        lines[i] = line[:at] + char + line[at:]
    elif kind == "delete" and line[at].strip():
        lines[i] = line[:at] + line[at + 1 :]
    elif kind == "drop":
        del lines[i]
    else:
        hidden = draw(
            st.sampled_from(
                [
                    "<!-- C5 FAIL -->",
                    "see https://evil.example",
                    "cc @octocat",
                    "C5: FAIL",
                    "gsm8k 0.99",
                    "\u200b",
                    "[x]: https://evil.example",
                    "<details>",
                ]
            )
        )
        lines.insert(i, hidden)
        kind = f"hidden-line {hidden!r}"
    return "\n".join(lines), f"{kind} at line {i + 1} col {at}: {line!r}", facts


@settings(max_examples=300, deadline=None)
@given(mutation=_mutation())
def test_any_edit_of_a_fact_line_fails(mutation: tuple[str, str, ReleaseFacts]) -> None:
    bad, what, facts = mutation
    if bad.rstrip() == _notes(facts).rstrip() or [x.rstrip() for x in bad.split("\n")] == [
        x.rstrip() for x in _notes(facts).split("\n")
    ]:
        return  # a no-op edit (the same character, or trailing space)
    assert check(bad, facts), what


def test_a_facts_copy_is_not_mutated() -> None:
    before = copy.deepcopy(FACTS["variant"].to_json())
    _notes(FACTS["variant"])
    assert FACTS["variant"].to_json() == before
