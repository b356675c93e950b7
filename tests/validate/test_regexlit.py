"""The literal prefilter of content gates (validate.regexlit): never drops a line a gate matches."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from relpipe.validate import precision
from relpipe.validate.precision import regexlit


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"\b(kv_dtype|cache_dtype)\b", {("kv_dtype", False), ("cache_dtype", False)}),
        (r"(?i)(fp8|e4m3)", {("fp8", True), ("e4m3", True)}),
        (r"a?bc", {("bc", False)}),
        (r"x(?i:Ab)y", {("ab", True)}),  # `x` and `y` are shorter than the group's `ab`
        (r"\bdtype\s*[=:].*(?i:float|half)", {("dtype", False)}),
        (r"(?:ab)+", {("ab", False)}),
        (r"(ab|)", None),  # an empty branch: nothing is required
        (r"[ab]+\d", None),
        (r"(?i)\u212a", None),  # case folding reaches beyond ASCII
    ],
)
def test_required_literals(pattern: str, expected: set[tuple[str, bool]] | None) -> None:
    got = regexlit.required_literals(pattern)
    assert (None if got is None else set(got)) == expected


def test_the_shipped_gates_get_a_prefilter() -> None:
    rules = precision.load_rules()
    patterns = [r.content_re for r in (*rules.rules, *rules.watch) if r.content_re is not None]
    assert patterns
    keep = regexlit.prefilter(patterns)
    assert keep is not None
    lines = [
        "    kv_cache_dtype: str = 'auto'",
        "    return x + 1",
        "class DeepseekV4ForCausalLM(nn.Module):",
        "    QUANT = 'FP8'",
        "    name = 'caf\u00e9'",  # not ASCII: always kept
    ]
    assert keep(lines) == [lines[0], lines[2], lines[3], lines[4]]


_ATOMS = ["a", "b", "A", "_", "8", "ab", "[ab]", ".", r"\b", r"\w", r"\d"]


def _patterns() -> st.SearchStrategy[str]:
    atom = st.sampled_from(_ATOMS)
    return st.recursive(
        atom,
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=4).map("".join),
            st.lists(inner, min_size=1, max_size=3).map(lambda xs: "(" + "|".join(xs) + ")"),
            inner.map(lambda x: f"(?i:{x})"),
            inner.map(lambda x: f"(?-i:{x})"),
            st.tuples(inner, st.sampled_from(["?", "*", "+", "{2}", "{0,2}", "+?"])).map("".join),
        ),
        max_leaves=8,
    )


@settings(max_examples=400, deadline=None)
@given(
    st.lists(_patterns(), min_size=1, max_size=3),
    st.booleans(),
    st.lists(st.text(alphabet="abAB_8 x\u212a\u017f\n", max_size=12), min_size=1, max_size=6),
)
def test_prefilter_never_drops_a_matching_line(
    sources: list[str], nocase: bool, lines: list[str]
) -> None:
    try:
        patterns = [re.compile(("(?i)" if nocase else "") + s) for s in sources]
    except re.error:
        assume(False)  # `a?*` and the like: not a pattern at all
    keep = regexlit.prefilter(patterns)
    if keep is None:
        return
    kept = keep(lines)
    assert kept == [line for line in lines if line in kept]  # in order, a subset
    for line in lines:
        if any(p.search(line) for p in patterns):
            assert line in kept, (sources, line)
