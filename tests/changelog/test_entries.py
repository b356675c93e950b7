"""relpipe.changelog.entry: the real corpus, the house-style renderer, the strict parser (both
paths), and property tests: render/parse round trip, byte mutations, agreement with PyYAML."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relpipe.changelog import entry as E
from relpipe.changelog.entry import (
    Entry,
    grammar,
    parse,
    read,
    render,
    scalars,
    scan,
    validate_entry,
)
from relpipe.changelog.errors import ChangelogError

LINK = "https://github.com/SemiAnalysisAI/InferenceX/pull/"


def test_corpus_parses_772_entries_equal_to_pyyaml(corpus_dir: Path) -> None:
    data = (corpus_dir / "perf-changelog.yaml").read_bytes()
    changelog = scan(data)
    reference = yaml.load(data, Loader=yaml.CSafeLoader)
    assert len(changelog.blocks) == len(reference) == 772
    assert [dict(b.fields) for b in changelog.blocks] == reference
    assert all(b.entry is not None for b in changelog.blocks)
    # Spans and lines point at the entries' own bytes.
    last = changelog.blocks[-1]
    assert data[last.start : last.end].startswith(b"- config-keys:\n") and last.end == len(data)
    assert last.end_line == 6380
    # scenario-type appears as a one-item list in the corpus and reads as a tuple.
    assert {
        b.entry.scenario_type for b in changelog.blocks if b.entry and b.entry.scenario_type
    } == {
        ("agentic-coding",),
        ("fixed-seq-len",),
    }


def test_corpus_quirks_are_findings_not_failures(corpus_dir: Path) -> None:
    changelog = scan((corpus_dir / "perf-changelog.yaml").read_bytes())
    codes = [f.code for f in changelog.findings]
    assert codes.count("whitespace-line") == 43 and codes.count("duplicate-entry") == 5
    assert set(codes) <= E.ENTRY_CODES  # only entry-level quirks: history stays readable
    assert {f.severity for f in E.as_warnings(changelog.findings)} == {"warning"}


def test_render_writes_the_house_style() -> None:
    entry = Entry(
        config_keys=("dsr1-fp4-mi355x-atom", "*gb200-dynamo-sglang", "1234"),
        description=('Bump "nightly" to 202610070333 \\ 中文说明', "it's fine"),
        pr_link=LINK + "2500",
        scenario_type=("agentic-coding",),
        evals_only=True,
        eval_min_prefill_ep=2,
    )
    assert render(entry) == (
        "- config-keys:\n"
        "    - dsr1-fp4-mi355x-atom\n"
        '    - "*gb200-dynamo-sglang"\n'
        '    - "1234"\n'
        "  scenario-type:\n"
        "    - agentic-coding\n"
        "  description:\n"
        '    - "Bump \\"nightly\\" to 202610070333 \\\\ 中文说明"\n'
        '    - "it\'s fine"\n'
        f"  pr-link: {LINK}2500\n"
        "  evals-only: true\n"
        "  eval-min-prefill-ep: 2\n"
    )


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            Entry(config_keys=(), description=("x",), pr_link=LINK + "1"),
            "config-keys must be a non-empty list",
        ),
        (
            Entry(config_keys=("k",), description=(" ",), pr_link=LINK + "1"),
            "description items must be non-empty strings",
        ),
        (
            Entry(config_keys=("k",), description=("a\nb",), pr_link=LINK + "1"),
            "control, line-break, invisible",
        ),
        (
            Entry(
                config_keys=("k",),
                description=("x",),
                pr_link=LINK + "1",
                scenario_type=("nightly",),
            ),
            "scenario-type 'nightly' is not one of",
        ),
        (
            Entry(
                config_keys=("k",), description=("x",), pr_link=LINK + "1", eval_min_prefill_ep=0
            ),
            "eval-min-prefill-ep must be an integer >= 1",
        ),
        (
            Entry(
                config_keys=("k",),
                description=("x",),
                pr_link=LINK + "1",
                append_only=True,
                all_evals=True,
            ),
            "append-only cannot be combined",
        ),
    ],
)
def test_validate_entry_and_render_refuse_invalid_entries(entry: Entry, problem: str) -> None:
    assert any(problem in p for p in validate_entry(entry))
    with pytest.raises(ChangelogError, match="cannot render an invalid changelog entry"):
        render(entry)


def _one(text: str) -> E.Block:
    changelog = scan(text.encode())
    assert len(changelog.blocks) == 1
    return changelog.blocks[0]


@pytest.mark.parametrize(
    ("text", "code", "line", "fragment"),
    [
        (
            "- config-keys:\n    - k\n  description:\n    - x\n  pr-link: l\n  evals-only: yes\n",
            "yaml-ambiguous",
            6,
            "YAML 1.1 and 1.2",
        ),
        (
            "- config-keys:\n    - k\n  description:\n    - x\n  pr-link: l\n"
            "  eval-min-prefill-ep: 010\n",
            "yaml-ambiguous",
            6,
            "`010`",
        ),
        (
            "- config-keys:\n    - k\n  description:\n    - x\n  description:\n    - y\n"
            "  pr-link: l\n",
            "duplicate-key",
            5,
            "duplicate key `description`",
        ),
        (
            "- config-keys:\n    - &a k\n  description:\n    - *a\n  pr-link: l\n",
            "anchor",
            2,
            "YAML anchor `&a`",
        ),
        (
            "- config-keys:\n    - k\n  description:\n    - x\n  pr-link: l\n  <<: {a: 1}\n",
            "merge-key",
            6,
            "merge key",
        ),
        (
            "- config-keys:\n    - k\n  description:\n    - !!str x\n  pr-link: l\n",
            "tag",
            4,
            "explicit YAML tag",
        ),
        (
            "- config-keys:\n    - k\n  description: just text\n  pr-link: l\n",
            "schema",
            3,
            "description must be a list",
        ),
        ("- config-keys:\n    - k\n  pr-link: l\n", "schema", 1, "entry has no `description`"),
        (
            '- config-keys:\n    - k\n  description:\n    - "open\n  pr-link: l\n',
            "yaml",
            4,
            "YAML syntax error",
        ),
        (
            "- config-keys:\n  - k\n  description:\n    - x\n  pr-link: l\n",
            "indent",
            2,
            "indented by 2 spaces",
        ),
    ],
)
def test_entry_level_findings_name_their_line(
    text: str, code: str, line: int, fragment: str
) -> None:
    block = _one(text)
    matches = [f for f in block.findings if f.code == code]
    assert matches, block.findings
    assert matches[0].line == line and fragment in matches[0].message + matches[0].hint


def test_scenario_type_scalar_is_rejected_as_inferencex_does() -> None:
    # InferenceX's ChangelogEntry declares `scenario_type: Optional[List[Literal[...]]]`.
    block = _one(
        "- config-keys:\n    - k\n  scenario-type: fixed-seq-len\n  description:\n    - x\n"
        "  pr-link: l\n"
    )
    assert block.entry is None
    (finding,) = block.findings
    assert (finding.line, finding.code) == (3, "schema")
    assert "scenario-type must be a list" in finding.message
    assert "- fixed-seq-len" in finding.hint


def test_ambiguous_scalars_are_style_and_judged_on_pyyaml_value() -> None:
    # PyYAML reads `yes` as true and `010` as 8: InferenceX accepts both; relpipe warns.
    block = _one(
        "- config-keys:\n    - k\n  description:\n    - x\n  pr-link: l\n"
        "  evals-only: yes\n  eval-min-prefill-ep: 010\n"
    )
    assert block.entry is not None
    assert (block.entry.evals_only, block.entry.eval_min_prefill_ep) == (True, 8)
    assert {f.code for f in block.findings} == {"yaml-ambiguous"}


@pytest.mark.parametrize(
    "word", [*scalars.YAML11_BOOL, "~", "null", "Null", "NULL", "y", "n", "tRue", "nul"]
)
def test_booleans_and_null_read_as_pyyaml_does_without_importing_it(word: str) -> None:
    import subprocess
    import sys

    value = scalars.plain(word)
    got = value.value if isinstance(value, scalars.Ambiguous) else value
    expected = yaml.safe_load(word)
    assert got == expected and type(got) is type(expected)
    if word in ("true", "null"):  # the common flag values: the hook does not import PyYAML
        entry = (
            f"- config-keys:\n  - k\n  description:\n  - x\n  pr-link: l\n  evals-only: {word}\n"
        )
        probe = f"import sys\nfrom relpipe.changelog.entry import scan\nscan({entry.encode()!r})\n"
        probe += "assert 'yaml' not in sys.modules, 'PyYAML imported'\n"
        subprocess.run([sys.executable, "-c", probe], check=True)


def test_integer_longer_than_python_converts_is_a_finding_not_a_traceback() -> None:
    block = _one(
        "- config-keys:\n    - k\n  description:\n    - x\n  pr-link: l\n"
        f"  eval-min-prefill-ep: {'7' * 5000}\n"
    )
    assert block.entry is None
    assert [f.code for f in block.findings] == ["schema"]


@pytest.mark.parametrize("char", ["\u202e", "\u200b", "\ue000", "\U000e0001", "\u0378"])
def test_invisible_private_and_unassigned_characters_are_errors(char: str) -> None:
    from relpipe.changelog.entry import scan

    text = f'- config-keys:\n    - k\n  description:\n    - "a{char}b"\n  pr-link: l\n'
    codes = {(f.line, f.code) for f in scan(text.encode()).findings}
    assert (4, "unsafe-char") in codes
    escaped = (
        f'- config-keys:\n    - k\n  description:\n    - "a\\U{ord(char):08x}b"\n  pr-link: l\n'
    )
    (finding,) = [f for f in scan(escaped.encode()).findings if f.code == "schema"]
    assert "invisible" in finding.message and finding.line == 3


def test_single_quoted_escapes_and_comments_read_like_yaml() -> None:
    block = _one(
        "- config-keys:  # keys\n    - k\n  description:\n    # why\n"
        "    - 'it''s ''quoted'''\n  pr-link: l  # c\n"
    )
    assert block.entry is not None
    assert block.entry.description == ("it's 'quoted'",) and block.entry.pr_link == "l"


def test_parse_raises_changelog_error_naming_file_and_line() -> None:
    with pytest.raises(
        ChangelogError, match=r"^perf-changelog.yaml:2: error: tab character"
    ) as info:
        parse(b"- config-keys:\n\t- k\n")
    assert info.value.exit_code == 1


# ---- property tests -------------------------------------------------------------------------

_key = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.*", min_size=1, max_size=24)
_line = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="\ufeff\x85"
    ),
    min_size=1,
    max_size=60,
).filter(lambda s: s.strip() != "")
_entries = st.builds(
    Entry,
    config_keys=st.lists(_key, min_size=1, max_size=4).map(tuple),
    description=st.lists(_line, min_size=1, max_size=3).map(tuple),
    pr_link=st.integers(1, 99999).map(lambda n: LINK + str(n)),
    scenario_type=st.sampled_from(
        [None, ("agentic-coding",), ("fixed-seq-len",), ("fixed-seq-len", "agentic-coding")]
    ),
    evals_only=st.booleans(),
    all_evals=st.booleans(),
    append_only=st.booleans(),
    eval_min_prefill_ep=st.one_of(st.none(), st.integers(1, 64)),
).filter(lambda e: not validate_entry(e))


@settings(max_examples=150, deadline=None)
@given(_entries)
def test_render_parse_round_trip_on_both_paths(entry: Entry) -> None:
    text = render(entry)
    block = _one(text)
    assert block.findings == () and block.entry == entry
    # The event path (PyYAML) reads the same fields as the line path, and so does PyYAML's loader.
    fields, _, found = read.event_fields(text, 1)
    assert found == [] and fields == dict(block.fields)
    assert yaml.load(text, Loader=yaml.CSafeLoader) == [dict(block.fields)]


PADDING = "\n".join(
    render(Entry(config_keys=("pad",), description=(f"padding {i}",), pr_link=LINK + str(i + 1)))
    for i in range(400)
).encode()
assert len(PADDING) > grammar.CANONICAL_MIN_BYTES


@settings(max_examples=40, deadline=None)
@given(st.lists(_entries, min_size=1, max_size=6, unique=True))
def test_canonical_grammar_agrees_with_the_line_parser(entries: list[Entry]) -> None:
    data = "\n".join(render(e) for e in entries).encode()
    data = PADDING + b"\n" + data
    changelog = scan(data)
    assert not changelog.errors
    canonical = [b for b in changelog.blocks if b.canonical]
    assert canonical  # large input: the whole-entry grammar is used
    for block, entry in zip(changelog.blocks[-len(entries) :], entries, strict=False):
        assert block.entry == entry and block._parsed[3] == ()


# Entries in the house style's variants and near misses: other indentation, comments, YAML 1.1
# words, plain and single-quoted text (the second half of each list: what the grammar must not
# prove, or must prove only with the line parser's findings).
def _mostly(good: list[str], bad: list[str]) -> st.SearchStrategy[str]:
    """Mostly a value the grammar should prove, sometimes a near miss."""
    return st.sampled_from(good * 9 + bad)


_V_INDENT = st.sampled_from(["    ", "  ", "   ", "      "])
_V_COMMENT = _mostly(["", "", "  # c", " # x y", " #"], ["  #c  ", "#c", " # ", "  "])
_V_KEY = _mostly(
    ["dsr1-fp4-mi355x-atom", "k*", "'q k'", '"dq"', "nemotron:x", "yes-no", "off-by-one"],
    ["on", "012", "no", "a:", "x #y", "Null", "~", "[a]", "'", '"a\\tb"'],
)
_V_TEXT = _mostly(
    ["Bump the image", "'it''s'", '"double"', "a - b", "Off we go", "a#b", "(x) 2, y", "x:y"],
    ["Fix: it", "yes", "a #b", "on", "x  y", "' '", "5", "é", "&a x", "'open", "Off  # c"],
)
_V_BOOL = _mostly(["yes", "no", "true", "True", "On", "OFF"], ["y", "1", '"yes"', "~", "tRue"])


@st.composite
def _variant_entry(draw: st.DrawFn) -> str:
    def items(values: st.SearchStrategy[str], count: int) -> list[str]:
        indent = draw(_V_INDENT)
        return [f"{indent}- {draw(values)}{draw(_V_COMMENT)}" for _ in range(count)]

    lines = [f"- config-keys:{draw(_V_COMMENT)}", *items(_V_KEY, draw(st.integers(1, 3)))]
    if draw(st.booleans()):
        scenarios = draw(st.sampled_from([["fixed-seq-len"], ["agentic-coding", "fixed-seq-len"]]))
        lines += ["  scenario-type:", *items(st.sampled_from(scenarios), len(scenarios))]
    lines += [f"  description:{draw(_V_COMMENT)}", *items(_V_TEXT, draw(st.integers(1, 3)))]
    link = draw(_mostly([LINK + "7", f"'{LINK}8'", f'"{LINK}9"', "XXX"], ["no", "null", "l #"]))
    lines.append(f"  pr-link: {link}{draw(_V_COMMENT)}")
    for key in ("evals-only", "all-evals", "append-only"):
        if draw(st.integers(0, 2)) == 0:
            lines.append(f"  {key}: {draw(_V_BOOL)}{draw(_V_COMMENT)}")
    if draw(st.integers(0, 4)) == 0:
        lines.append(f"  eval-min-prefill-ep: {draw(_mostly(['1', '16'], ['0', '012']))}")
    if draw(st.integers(0, 9)) == 0:
        lines.insert(draw(st.integers(1, len(lines))), draw(st.sampled_from(["", "  # c", "   "])))
    return "\n".join(lines) + "\n"


# Enough entries off the house style before the ones under test for scan to use the grammar.
VARIANT_PADDING = (
    PADDING
    + b"\n"
    + "\n".join(
        f"- config-keys:\n  - pad\n  description:\n  - padding {i}\n  pr-link: {LINK}{i + 1}\n"
        for i in range(grammar.VARIANTS_AFTER)
    ).encode()
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_variant_entry(), min_size=1, max_size=4))
def test_variants_grammar_proves_only_what_the_line_parser_and_pyyaml_accept(
    texts: list[str],
) -> None:
    changelog = scan(VARIANT_PADDING + b"\n" + "\n".join(texts).encode())
    for block in changelog.blocks[-len(texts) :]:
        if block.style is None:
            continue
        # The grammar's proof and findings are exactly the line parser's ...
        _, _, entry, findings = read.parse_block(block.text.split("\n")[:-1], block.line)
        assert entry is not None and findings == block.style
        # ... and PyYAML reads the entry as InferenceX's schema accepts it.
        (loaded,) = yaml.load(block.text, Loader=yaml.CSafeLoader)
        assert tuple(loaded["config-keys"]) == entry.config_keys
        assert tuple(loaded["description"]) == entry.description
        assert loaded["pr-link"] == entry.pr_link
        flags = (entry.evals_only, entry.all_evals, entry.append_only, entry.no_evals)
        assert tuple(bool(loaded.get(key, False)) for key in E.FLAG_KEYS) == flags
        assert loaded.get("eval-min-prefill-ep") == entry.eval_min_prefill_ep


def test_variants_grammar_proves_common_variants_with_their_style_findings() -> None:
    text = (
        "- config-keys:  # keys\n  - dsr1-fp4-mi355x-atom  # key\n  description:\n"
        "  - Bump the image\n  - 'quoted'\n"
        f"  pr-link: {LINK}9  # link\n  evals-only: yes\n"
    )
    changelog = scan(VARIANT_PADDING + b"\n" + text.encode())
    block = changelog.blocks[-1]
    assert block.style is not None and not block.canonical and block.proven
    assert [(f.line - block.line, f.code) for f in block.findings] == [
        (1, "indent"),
        (3, "indent"),
        (4, "indent"),
        (6, "yaml-ambiguous"),
    ]
    assert block.entry == Entry(
        config_keys=("dsr1-fp4-mi355x-atom",),
        description=("Bump the image", "quoted"),
        pr_link=LINK + "9",
        evals_only=True,
    )


@pytest.mark.parametrize("link", ["no", "Off", "null", "NULL", "yes"])
def test_a_plain_pr_link_yaml_reads_as_boolean_or_null_is_not_proven(link: str) -> None:
    """Both grammars once accepted `pr-link: no`, which PyYAML reads as false."""
    for style in ("    - ", "  - "):
        text = f'- config-keys:\n{style}k\n  description:\n{style}"x"\n  pr-link: {link}\n'
        changelog = scan(VARIANT_PADDING + b"\n" + text.encode())
        block = changelog.blocks[-1]
        assert not block.proven and block.entry is None
        (schema,) = [f for f in changelog.errors if f.code == "schema"]
        assert schema.line == block.line + 4 and "pr-link must be a URL string" in schema.message


def test_a_scan_makes_no_reference_cycles() -> None:
    """The hook runs its check with the cyclic collector off (perf_changelog._without_collector):
    every path of the parser must free its objects by reference counting alone."""
    import gc

    entries = [
        render(Entry(config_keys=("k",), description=("x",), pr_link=LINK + "1")),
        "- config-keys:\n  - k  # c\n  description:\n  - x\n  pr-link: l\n  evals-only: yes\n",
        "- config-keys: [a, {b: 1}]\n  description:\n    - x\n  pr-link: l\n",  # event parser
        '- config-keys:\n    - k\n  description:\n    - "open\n  pr-link: l\n',  # YAML error
        "- config-keys:\n    - &a k\n  description:\n    - *a\n  pr-link: l\n",
        "- config-keys:\n    - k\n  description:\n    - x\n  pr-link: l\n  pr-link: m\n",
    ]
    data = VARIANT_PADDING + b"\n" + "\n".join(entries).encode()
    small = "\n".join(entries).encode()
    for sample in (data, small):
        scan(sample)  # warm-up: imports and compiled patterns stay, they are not garbage
    gc.collect()
    gc.disable()
    try:
        for sample in (data, small):
            changelog = scan(sample)
            _ = [(b.fields, b.entry) for b in changelog.blocks]
        del changelog
        assert gc.collect() == 0
    finally:
        gc.enable()


_SAMPLE = (
    "\n".join(
        render(Entry(config_keys=(f"k{i}",), description=(f"line {i}",), pr_link=LINK + str(i)))
        for i in range(3)
    )
).encode()
_INTERESTING = [
    b"\t",
    b"\r",
    b"\0",
    b"\n",
    b" ",
    b"'",
    b'"',
    b"-",
    b":",
    b"#",
    b"&",
    b"*",
    b"{",
    b"[",
    b"\xff",
    b"\xc2\x85",
    b"\xe2\x80\xa8",
    b"!",
    b"|",
    b"<<<<<<< ",
    b"yes",
    b"\\",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.integers(0, len(_SAMPLE)), st.integers(0, 3), st.sampled_from(_INTERESTING)),
        min_size=1,
        max_size=4,
    )
)
def test_byte_mutations_raise_only_changelog_error_and_accepted_files_read_like_pyyaml(
    edits: list[tuple[int, int, bytes]],
) -> None:
    data = bytearray(_SAMPLE)
    for pos, cut, insert in edits:
        data[pos : pos + cut] = insert
    blob = bytes(data)
    try:
        changelog = parse(blob)
    except ChangelogError:
        return
    # Accepted: PyYAML must read the same entries.
    reference = yaml.load(blob, Loader=yaml.CSafeLoader)
    assert reference == [dict(b.fields) for b in changelog.blocks]
