"""Property: for any appended bytes, the hook's verdict is that of a full strict parse.

The reference reads the whole head with PyYAML (duplicate keys rejected, as InferenceX's
`UniqueKeyLoader`), checks every entry against InferenceX's `ChangelogEntry` as pydantic's lax
mode reads it, and applies InferenceX's history and byte rules (`compare_entries`,
`validate_raw_change`) plus relpipe's documented exceptions (invisible or unassigned characters,
anchors/aliases/tags, lines over 8 KiB). relpipe's verdict comes from its fast path: only the
appended part is parsed, and from 32 KiB on the whole-entry grammar is used, so the generated
appends include large ones. No input may raise.
"""

from __future__ import annotations

import re
import unicodedata

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relpipe.validate.gate import hook as gate

REPO = "https://github.com/SemiAnalysisAI/InferenceX"
BASE = (
    b"- config-keys:\n    - dsr1-fp8-h200-sglang\n  description:\n"
    b'    - "Initial"\n'
    b"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n"
)
ALLOWED = {
    "config-keys",
    "description",
    "pr-link",
    "scenario-type",
    "evals-only",
    "all-evals",
    "append-only",
    "eval-min-prefill-ep",
}
LAX_BOOL = {"1", "on", "t", "true", "y", "yes", "0", "off", "f", "false", "n", "no"}
CANONICAL = re.compile(re.escape(REPO) + r"/pull/\d+")


class _Unique(yaml.SafeLoader):
    def construct_mapping(self, node, deep=False):  # type: ignore[no-untyped-def]
        keys = [self.construct_object(k, deep=True) for k, _ in node.value]
        if len(keys) != len({repr(k) for k in keys}):
            raise yaml.constructor.ConstructorError(None, None, "duplicate key", node.start_mark)
        return super().construct_mapping(node, deep=deep)


def _lax_bool(value: object) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return value in (0, 1)
    if isinstance(value, float):
        return value in (0.0, 1.0)
    return isinstance(value, str) and value.lower() in LAX_BOOL


def _lax_int(value: object) -> int | None:
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _flag(entry: dict[str, object], key: str) -> bool:
    """A flag as pydantic's lax mode reads it (absent: false)."""
    value = entry.get(key, False)
    if isinstance(value, str):
        return value.lower() in {"1", "on", "t", "true", "y", "yes"}
    return bool(value)


def _str_list(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


def _entry_ok(entry: object) -> bool:
    """InferenceX's ChangelogEntry (pydantic, lax mode), restated."""
    if not isinstance(entry, dict) or set(entry) - ALLOWED:
        return False
    if not {"config-keys", "description", "pr-link"} <= set(entry):
        return False
    if not (_str_list(entry["config-keys"]) and _str_list(entry["description"])):
        return False
    if not isinstance(entry["pr-link"], str):
        return False
    scenario = entry.get("scenario-type")
    if scenario is not None and not (
        isinstance(scenario, list)
        and scenario
        and all(v in ("fixed-seq-len", "agentic-coding") for v in scenario)
    ):
        return False
    flags = {}
    for key in ("evals-only", "all-evals", "append-only"):
        if key in entry:
            if not _lax_bool(entry[key]):
                return False
            flags[key] = _flag(entry, key)
    ep = entry.get("eval-min-prefill-ep")
    if ep is not None and (_lax_int(ep) is None or _lax_int(ep) < 1):
        return False
    return not (
        flags.get("append-only")
        and (flags.get("evals-only") or flags.get("all-evals") or ep is not None)
    )


def _exception(suffix: bytes) -> bool:
    """relpipe's documented exceptions to parity, in the appended text."""
    text = suffix.decode("utf-8")
    if any(unicodedata.category(c) in {"Cf", "Co", "Cn", "Cs", "Cc"} for c in text if c != "\n"):
        return True
    if any(len(line) > 8192 for line in suffix.split(b"\n")):
        return True
    try:
        events = list(yaml.parse(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return False
    return any(
        isinstance(e, yaml.AliasEvent) or getattr(e, "anchor", None) or getattr(e, "tag", None)
        for e in events
    )


def reference(base: bytes, head: bytes) -> bool:
    """A full strict parse of the head plus InferenceX's rules: accepted?"""
    if not head.endswith(b"\n") or any(b in head for b in (b"\r", b"\t", b"\0")):
        return False
    try:
        text = head.decode("utf-8")
        data = yaml.load(text, Loader=_Unique)  # noqa: S506 - a SafeLoader subclass
    except (UnicodeDecodeError, yaml.YAMLError, ValueError):
        return False
    if not isinstance(data, list):
        return False
    if sum(line.startswith("- config-keys:") for line in text.splitlines()) != len(data):
        return False
    if not all(_entry_ok(e) for e in data) or len(data) < 1:
        return False
    base_entries = yaml.load(base.decode(), Loader=_Unique)  # noqa: S506
    if data[0] != base_entries[0]:
        return False
    additions = data[1:]
    if any(not CANONICAL.fullmatch(e["pr-link"]) for e in additions):
        return False
    # process_changelog.py: append-only entries cannot share a sweep with regular ones.
    if len({_flag(e, "append-only") for e in additions}) > 1:
        return False
    if additions:
        if not head.startswith(base) or not head[len(base) :].startswith(b"\n- config-keys:"):
            return False
        starts = [m.start() for m in re.finditer(rb"(?m)^- config-keys:[^\r\n]*\n", head)]
        for start in starts[-len(additions) :][1:]:
            if not head[:start].endswith(b"\n\n") or head[:start].endswith(b"\n\n\n"):
                return False
        if head.endswith(b"\n\n"):
            return False
    elif head != base:
        return False
    return not _exception(head[len(base) :])


SCALARS = st.sampled_from(
    [
        "dsr1-fp4-mi355x-atom",
        '"quoted key"',
        "'single'",
        "yes",
        "true",
        "false",
        '"true"',
        "1",
        "0",
        "2",
        "010",
        "1.0",
        "~",
        "",
        "[a, b]",
        "{a: 1}",
        "&x anchor",
        "*x",
        "!!str tagged",
        '"bidi \\u202e"',
        "bidi \u202e here",
        "zero\u200bwidth",
        "private \ue000",
        "ok é 中文",
        "x: y",
        "- dash",
        "# comment",
        '"unterminated',
        f"{REPO}/pull/12",
        f"{REPO}/pull/XXX",
        "https://evil.example/pull/1",
        "fixed-seq-len",
        "agentic-coding",
        "7" * 5000,
    ]
)
KEYS = st.sampled_from(sorted(ALLOWED) + ["notes", "pr-link", "description"])
INDENTS = st.sampled_from(["    - ", "  - ", "      - ", "   - "])


@st.composite
def entry_text(draw: st.DrawFn) -> str:
    """One entry: mostly valid, house style or not, with a drawn defect or two."""
    key = draw(st.sampled_from(["dsr1-fp4-mi355x-atom", "gptoss-fp4-b200-vllm", "'q'"]))
    item = draw(INDENTS) if draw(st.booleans()) else "    - "
    lines = ["- config-keys:", f"{item}{key}", "  description:"]
    plain = st.text("abc xyz-_.:é", max_size=30)
    text = st.one_of(plain, plain, plain, st.text(max_size=8))
    lines += [f'{item}"{draw(text)}"'.replace("\\", "/")]
    if draw(st.integers(0, 3)) == 0:
        lines += [f"{item}{'x' * draw(st.integers(0, 9000))}"]
    links = [f"{REPO}/pull/77"] * 4 + ["XXX", f"{REPO}/pull/0"]
    lines += [f"  pr-link: {draw(st.sampled_from(links))}"]
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2]))):
        key, value = draw(KEYS), draw(SCALARS)
        if draw(st.booleans()):
            lines += [f"  {key}:", f"{item}{value}"]
        else:
            lines += [f"  {key}: {value}"]
    if draw(st.integers(0, 5)) == 0:
        lines.insert(draw(st.integers(1, len(lines))), draw(st.sampled_from(["", "  ", "# c"])))
    if draw(st.integers(0, 5)) == 0:
        lines[-1] += draw(st.sampled_from(["  ", " # c", "\t"]))
    return "\n".join(lines) + "\n"


@st.composite
def appended(draw: st.DrawFn) -> bytes:
    parts = [draw(st.sampled_from(["\n"] * 5 + ["\n\n", "", "  \n"]))]
    count = draw(st.integers(1, 3))
    for index in range(count):
        if index:
            parts.append(draw(st.sampled_from(["\n"] * 5 + ["\n\n", "  \n"])))
        parts.append(draw(entry_text()))
    if draw(st.booleans()):  # make it large: the whole-entry grammar path (>= 32 KiB)
        filler = (
            "- config-keys:\n    - dsr1-fp4-mi355x-atom\n  description:\n"
            f'    - "{"y" * 1000}"\n  pr-link: {REPO}/pull/5\n'
        )
        if draw(st.booleans()):  # entries off the house style: the variants grammar after 64
            filler = filler.replace("    - ", "  - ").replace('"', "") + "  evals-only: yes\n"
        parts.insert(1, "\n".join([filler] * 70) + "\n")
    if draw(st.integers(0, 3)) == 0:
        parts.append(draw(st.sampled_from(["\n", "  pr-link: https://evil.example/pull/1\n", ""])))
    tail = "".join(parts).encode()
    if draw(st.integers(0, 6)) == 0:
        tail = tail.rstrip(b"\n")
    return tail


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(appended())
def test_fast_path_verdict_equals_a_full_strict_parse(suffix: bytes) -> None:
    head = BASE + suffix
    report = gate.check(BASE, head, gate.Policy(repo_url=REPO, pr_number=None, config_keys=None))
    assert report.ok == reference(BASE, head), [f for f in report.findings if f.severity == "error"]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_give_a_verdict_never_a_traceback(noise: bytes) -> None:
    for base, head in ((BASE, BASE + noise), (None, noise), (noise, BASE)):
        report = gate.check(
            base, head, gate.Policy(repo_url=REPO, pr_number=None, config_keys=None)
        )
        assert report.ok in (True, False)


GOOD = BASE.decode()


@pytest.mark.parametrize(
    "text",
    [
        GOOD + '\n- config-keys:\n    - k\n  description:\n    - "open\n  pr-link: l\n',
        GOOD + "\n- config-keys:\n    - k\n  description:\n    - x\n  pr-link: l\n  pr-link: m\n",
        GOOD + f"\n- config-keys:\n    - k\n  description:\n    - x\n  pr-link: l\n"
        f"  eval-min-prefill-ep: {'7' * 5000}\n",
        GOOD + "  - config-keys:\n    - k\n",
        GOOD.replace("  description:", "\tdescription:"),
        "\udcff".join([GOOD, ""]),
    ],
    ids=["unclosed-quote", "duplicate-key", "long-int", "nested-entry", "tab", "invalid-utf8"],
)
def test_full_audit_rejects_what_pyyaml_cannot_load(text: str) -> None:
    data = text.encode("utf-8", "surrogateescape")
    assert not reference(data, data)
    report = gate.check(None, data, gate.Policy(repo_url=REPO, pr_number=None, config_keys=None))
    assert not report.ok
    assert all(f.line >= 1 for f in report.findings if f.severity == "error")


def test_a_huge_entry_off_the_house_style_is_capped_not_parsed() -> None:
    """PyYAML's events for a 10 MB entry would take over a GB: a size finding instead."""
    items = b"".join(b"    - {a: %d}\n" % i for i in range(600_000))
    data = BASE + b"\n- config-keys: [k]\n  description:\n" + items + b"  pr-link: l\n"
    report = gate.check(BASE, data, gate.Policy(repo_url=REPO, pr_number=None, config_keys=None))
    assert not report.ok
    assert [(f.line, f.code) for f in report.findings if f.severity == "error"][0] == (7, "size")


@pytest.mark.parametrize(
    ("old", "new"),
    [(b"dsr1-fp8-h200-sglang", b"012"), (b'"Initial"', b"yes"), (b"Initial", b"Init\x00")],
)
def test_a_base_the_grammar_cannot_prove_is_scanned_and_judged(old: bytes, new: bytes) -> None:
    """The append fast path trusts a base only when the house-style grammar proves it."""
    base = BASE.replace(old, new)
    head = base + b"\n" + BASE.replace(b"pull/1", b"pull/2")
    assert not reference(base, base)
    report = gate.check(base, head, gate.Policy(repo_url=REPO, pr_number=None, config_keys=None))
    assert not report.ok
    assert report.findings[0].code == "base" and "base line" in report.findings[0].message


# Lines at column 0 that do not start an entry: YAML document markers (`---` starts a second
# document, anything after `...` does too: InferenceX's `yaml.load` rejects both), list items that
# are not mappings, comments. Issue 34.12: after an appended entry, `---` passed the hook, and
# from 32 KiB on (the grammar path) so did `- x` and `...` followed by an entry.
COLUMN_ZERO = st.sampled_from(
    ["---", "--- # c", "--- x", "---  ", "...", "... # c", "- x", "-", "- ", "# c", "----", "--"]
)


@st.composite
def column_zero_appends(draw: st.DrawFn) -> bytes:
    entries = [draw(st.sampled_from([GOOD.replace("pull/1", f"pull/{n}") for n in (7, 8, 9)]))]
    entries += [GOOD.replace("pull/1", "pull/10")] * draw(st.integers(0, 2))
    if draw(st.booleans()):  # the whole-entry grammar path (>= 32 KiB)
        filler = GOOD.replace('"Initial"', '"' + "y" * 1000 + '"').replace("pull/1", "pull/5")
        entries = [filler] * 40 + entries
    lines = "\n".join(entries).split("\n")[:-1]
    for _ in range(draw(st.integers(1, 2))):
        at = draw(st.integers(1, len(lines)))
        lines.insert(at, draw(COLUMN_ZERO))
    return ("\n" + "\n".join(lines) + "\n").encode()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(column_zero_appends())
def test_column_zero_text_after_an_entry_gets_pyyamls_verdict(suffix: bytes) -> None:
    head = BASE + suffix
    report = gate.check(BASE, head, gate.Policy(repo_url=REPO, pr_number=None, config_keys=None))
    assert report.ok == reference(BASE, head), [f for f in report.findings if f.severity == "error"]
    try:
        loaded = yaml.load(head, Loader=_Unique)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError:
        loaded = None
    if not (isinstance(loaded, list) and all(isinstance(e, dict) for e in loaded)):
        # The whole file audited (`--full`) is rejected too.
        full = gate.check(None, head, gate.Policy(repo_url=REPO, pr_number=None, config_keys=None))
        assert not full.ok
