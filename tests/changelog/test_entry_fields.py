"""The changelog entry's field table (relpipe.changelog.entry): every rule violation, generated
per field from the table, gets the same finding (code, rule, line) from the fast path (the
whole-entry grammars of a file >= 32 KiB) and from the full parse (a small file, line by line)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relpipe.changelog.entry import Entry, grammar, read, render, scan
from relpipe.changelog.entry.fields import CHOICES, COUNT, FLAG, KEYS, TEXTS, URL, Field
from relpipe.changelog.entry.model import BY_KEY, FIELDS
from relpipe.changelog.entry.schema import KIND_RULES

LINK = "https://github.com/SemiAnalysisAI/InferenceX/pull/"


@pytest.mark.parametrize(
    ("extra", "line", "fragment"),
    [
        ("  rm-rf: yes\n", 7, "unknown key `rm-rf`"),
        ("  evals-only: 7\n", 7, "evals-only must be a boolean"),
        ("  eval-min-prefill-ep: -5\n", 7, "eval-min-prefill-ep must be an integer >= 1"),
    ],
)
def test_a_continued_description_item_keeps_the_schema_check(
    extra: str, line: int, fragment: str
) -> None:
    """The hole an attack run found: a description item continued on the next line sent the
    entry to PyYAML's event parser, whose `continuation` finding switched the schema off."""
    text = (
        "- config-keys:\n    - k\n  description:\n"
        '    - "first line\n      continued"\n'
        f"  pr-link: {LINK}1\n{extra}"
    )
    changelog = scan(text.encode())
    (block,) = changelog.blocks
    assert block.entry is None
    schema = [f for f in changelog.findings if f.code == "schema"]
    assert [(f.line, fragment in f.message) for f in schema] == [(line, True)]
    assert {f.code for f in changelog.findings} == {"continuation", "schema"}


# ---------------------------------------------------------------------------------------------
# Every rule violation, per field, from the field table


def _violations(f: Field) -> list[tuple[list[str], str]]:
    """(the field's lines, the rule they break) for each rule of field `f`'s kind."""
    key, first = f.key, (f.allowed or ("",))[0]
    lists = {
        KEYS: [(["- 5"], "item-type"), (['- ""'], "blank-item"), (['- "a\\u200bb"'], "unsafe")],
        TEXTS: [(["- 5"], "item-type"), (['- ""'], "blank-item"), (['- "a\\u200bb"'], "unsafe")],
        CHOICES: [
            (["- nightly"], "allowed"),
            ([f"- {first}", f"- {first}"], "duplicate"),
            (["- 5"], "item-type"),
        ],
    }
    if f.kind in lists:
        cases = [
            ([f"  {key}: just text"], "not-list"),
            ([f"  {key}:"], "not-list"),
            ([f"  {key}: []"], "empty"),
        ]
        if f.kind == CHOICES:
            cases = [([f"  {key}: {first}"], "not-list"), ([f"  {key}: []"], "empty")]
        return cases + [
            ([f"  {key}:", *(f"    {i}" for i in items)], r) for items, r in lists[f.kind]
        ]
    values = {
        URL: [
            ("5", "type"),
            ("no", "type"),
            ('""', "blank"),
            ('" x "', "spaces"),
            ('"a\\u200bb"', "unsafe"),
        ],
        FLAG: [
            ("7", "type"),
            ("maybe", "type"),
            ("[a]", "type"),
            ('"yes"', "coerced"),
            ("1", "coerced"),
        ],
        COUNT: [
            ("-5", "range"),
            ("0", "range"),
            ("x", "type"),
            ('"3"', "coerced"),
            ("2.0", "coerced"),
        ],
    }[f.kind]
    return [([f"  {key}: {value}"], rule) for value, rule in values]


_GOOD = {
    "config-keys": ["    - k"],
    "description": ['    - "x"'],
    "pr-link": [f"  pr-link: {LINK}1"],
}


def _text(lines_by_key: dict[str, list[str]]) -> str:
    """An entry of these fields' lines, in written order (the first key starts the entry)."""
    out: list[str] = []
    for f in FIELDS:
        if f.key not in lines_by_key:
            continue
        lines = lines_by_key[f.key]
        if f.kind in (KEYS, TEXTS, CHOICES) and not lines[0].startswith(f"  {f.key}:"):
            lines = [f"  {f.key}:", *lines]
        out.extend(lines)
    out[0] = "- " + out[0][2:]
    return "\n".join(out) + "\n"


def _cases() -> list[tuple[str, str, str]]:
    """(name, entry text, expected rule) for every violation of every field, and the entry's."""
    cases = []
    for f in FIELDS:
        for lines, rule in _violations(f):
            cases.append((f"{f.key}:{lines}", _text({**_GOOD, f.key: lines}), f"{f.key}.{rule}"))
        for other in f.excludes:
            set_other = "2" if BY_KEY[other].kind == COUNT else "true"
            fields = {**_GOOD, f.key: [f"  {f.key}: true"], other: [f"  {other}: {set_other}"]}
            cases.append((f"{f.key}+{other}", _text(fields), f"{f.key}.excludes"))
        if f.required and f is not FIELDS[0]:  # an entry starts with the first: structure
            rest = {k: v for k, v in _GOOD.items() if k != f.key}
            cases.append((f"no {f.key}", _text(rest), "entry.missing-key"))
    cases.append(("unknown", _text(_GOOD) + "  rm-rf: yes\n", "entry.unknown-key"))
    return cases


CASES = _cases()
PADDING = "\n".join(
    render(Entry(config_keys=("pad",), description=(f"padding {i}",), pr_link=f"{LINK}{i + 1}"))
    for i in range(400)
)
VARIANT_PADDING = (
    PADDING
    + "\n"
    + "\n".join(
        f"- config-keys:\n  - pad\n  description:\n  - padding {i}\n  pr-link: {LINK}{i + 1}\n"
        for i in range(grammar.VARIANTS_AFTER)
    )
)
assert len(PADDING) > grammar.CANONICAL_MIN_BYTES


def _seen(data: str, entry_at: int) -> set[tuple[str, str, int]]:
    """(code, rule, line in the entry) of every finding of the entry at index `entry_at`."""
    changelog = scan(data.encode())
    block = changelog.blocks[entry_at]
    full = read.parse_block(block.text.split("\n")[:-1], block.line)[3]
    ranged = {
        (f.code, getattr(f, "rule", ""), f.line - block.line)
        for f in changelog.findings
        if block.line <= f.line <= block.end_line
    }
    assert ranged == {(f.code, getattr(f, "rule", ""), f.line - block.line) for f in full}
    return ranged


def test_the_cases_break_every_rule_of_every_field() -> None:
    """Every rule the schema declares, for every field of the table, has a case here."""
    declared = {f"{f.key}.{rule}" for f in FIELDS for rule in KIND_RULES[f.kind]}
    declared |= {f"{f.key}.excludes" for f in FIELDS if f.excludes}
    assert {rule for _, _, rule in CASES} == declared | {"entry.unknown-key", "entry.missing-key"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(CASES),
    st.sampled_from(["small", "house", "variants"]),
    st.booleans(),
    st.booleans(),
)
def test_every_violation_gets_one_finding_below_and_above_32_kib(
    case: tuple[str, str, str], size: str, continued: bool, after: bool
) -> None:
    _, text, rule = case
    padding = {"small": "", "house": PADDING, "variants": VARIANT_PADDING}[size]
    if continued:  # a description item continued on the next line must not hide the rule
        text = text.replace('    - "x"\n', '    - "x\n      y"\n')
    data = (padding + "\n" if padding else "") + text + ("\n" + render_good() if after else "")
    index = -2 if after else -1
    small = _seen(text + ("\n" + render_good() if after else ""), index)
    large = _seen(data, index)
    assert small == large
    assert any(r == rule for _, r, _ in large), (rule, large)


def render_good() -> str:
    return render(Entry(config_keys=("k2",), description=("y",), pr_link=f"{LINK}2"))


@pytest.mark.parametrize(("name", "text", "rule"), CASES, ids=[c[0] for c in CASES])
def test_each_violation_names_its_rule_on_its_key_line(name: str, text: str, rule: str) -> None:
    for padding in ("", PADDING, VARIANT_PADDING):
        found = _seen((padding + "\n" if padding else "") + text, -1)
        key = "rm-rf" if rule == "entry.unknown-key" else rule.split(".")[0]
        lines = text.split("\n")
        at = next((i for i, line in enumerate(lines) if line[2:].startswith(f"{key}:")), 0)
        assert any(r == rule and line == at for _, r, line in found), (name, found)


_SCALARS = st.one_of(
    st.sampled_from(["yes", "No", "on", "~", "null", "012", "0x1f", "1e3", "2.5", "-1", "true"]),
    st.from_regex(r"[A-Za-z0-9 .:/'\"#-]{0,12}", fullmatch=True),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FIELDS), st.lists(_SCALARS, min_size=1, max_size=3), st.booleans())
def test_any_value_of_any_field_gets_the_same_findings_on_both_paths(
    f: Field, values: list[str], variants: bool
) -> None:
    """Not only the catalogued violations: whatever a field holds, the grammars and the line
    parser agree (the entry is padded past 32 KiB, and past the variants' switch-on count)."""
    if f.kind in (KEYS, TEXTS, CHOICES):
        lines = [f"  {f.key}:", *(f"    - {value}" for value in values)]
    else:
        lines = [f"  {f.key}: {values[0]}"]
    text = _text({**_GOOD, f.key: lines})
    padding = VARIANT_PADDING if variants else PADDING
    assert _seen(padding + "\n" + text, -1) == _seen(text, -1)
