"""A mutator of real perf-changelog changes: base -> head pairs a user, an editor or an attacker
could commit, in classes (issue 27 item 9), for the conformance test that compares relpipe's
verdict with InferenceX's validators (tests/validate/test_changelog_mutations.py).

`mutations(base, entry, seed, per_class)` takes a real base (entry-aligned bytes) and a real
appended entry (`- config-keys:` ... with its final newline) and returns named heads. Each class
varies one thing in the appended entry or in history; parameters come from a seeded
`random.Random`, so a failure names a reproducible case.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator

REPO = "https://github.com/SemiAnalysisAI/InferenceX"
Mutation = Callable[[random.Random, bytes, str], tuple[str, bytes]]


def _fields(entry: str) -> list[str]:
    """The entry's top-level fields, each with its item lines (the `- ` of the first removed)."""
    body = entry[2:]  # "config-keys:\n    - ..."
    parts = re.split(r"\n(?=  [A-Za-z])", body.rstrip("\n"))
    return [parts[0], *(p[2:] for p in parts[1:])]


def _join(fields: list[str]) -> str:
    return "- " + "\n  ".join(fields) + "\n"


def _append(base: bytes, entry: str) -> bytes:
    return base + b"\n" + entry.encode("utf-8")


def _line_edit(entry: str, rng: random.Random, edit: Callable[[str], str]) -> str:
    lines = entry.split("\n")[:-1]
    index = rng.randrange(len(lines))
    lines[index] = edit(lines[index])
    return "\n".join(lines) + "\n"


def key_reorder(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    fields = _fields(entry)
    order = list(range(len(fields)))
    rng.shuffle(order)
    return f"order {order}", _append(base, _join([fields[i] for i in order]))


def indentation(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    kind = rng.choice(["items", "keys", "one-item", "one-key"])
    width = rng.choice([0, 1, 2, 3, 5, 6, 8])
    if kind == "items":
        text = re.sub(r"(?m)^    - ", " " * width + "- ", entry)
    elif kind == "keys":
        text = re.sub(r"(?m)^  (?=[a-z])", " " * width, entry)
    elif kind == "one-item":
        text = _line_edit(entry, rng, lambda s: re.sub(r"^ *- ", " " * width + "- ", s, count=1))
    else:
        text = _line_edit(entry, rng, lambda s: re.sub(r"^  (?=[a-z])", " " * width, s))
    return f"{kind} {width}", _append(base, text)


_QUOTES: list[Callable[[str], str]] = [
    lambda v: f"'{v}'",
    lambda v: f'"{v}"',
    lambda v: v,
    lambda v: f'"{v}',  # unterminated
    lambda v: f"'{v}\"",
    lambda v: f"!!str {v}",
    lambda v: f'"{v}\\x41"',
    lambda v: f'"{v}\\q"',  # an invalid escape
]


def quoting(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    which = rng.randrange(len(_QUOTES))
    target = rng.choice(["key", "link", "description"])
    quote = _QUOTES[which]
    if target == "key":
        text = re.sub(
            r"(?m)^(    - )(\S+)$", lambda m: m.group(1) + quote(m.group(2)), entry, count=1
        )
    elif target == "link":
        text = re.sub(r"(?m)^(  pr-link: )(.+)$", lambda m: m.group(1) + quote(m.group(2)), entry)
    else:
        text = re.sub(
            r'(?m)^(  description:\n    - )"([^"\n]{0,60})',
            lambda m: m.group(1) + quote(m.group(2)),
            entry,
        )
    return f"{target} quote#{which}", _append(base, text)


def duplicate_key(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    fields = _fields(entry)
    index = rng.randrange(len(fields))
    copy = fields[index]
    if rng.random() < 0.5:
        copy = copy.replace("    - ", "    - x", 1) if "\n" in copy else copy + "x"
    fields.insert(rng.randrange(1, len(fields) + 1), copy)
    return f"duplicate {copy.split(':')[0]}", _append(base, _join(fields))


_FLAG_VALUES = (
    "true", "false", "yes", "no", "on", "off", "y", "n", "1", "0", "True", "FALSE", "~", "null",
    "", "[]", "{}", "1.0", '"true"', "'yes'", "!!bool true", "tRuE", "- true", "truex",
)  # fmt: skip
_FLAGS = ("evals-only", "all-evals", "append-only", "no-evals", "eval-min-prefill-ep")


def odd_flags(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    flag = rng.choice(_FLAGS)
    value = rng.choice(
        _FLAG_VALUES
        if flag != "eval-min-prefill-ep"
        else ("1", "0", "-1", "2.0", '"2"', "0x10", "1_000", "+3", "9" * 30, "0o7", "true")
    )
    line = f"  {flag}: {value}\n" if not value.startswith("- ") else f"  {flag}:\n    {value}\n"
    fields = entry.rstrip("\n") + "\n" + line
    if rng.random() < 0.3:  # a second flag with it
        other = rng.choice(_FLAGS)
        fields += f"  {other}: {rng.choice(('true', '1', 'yes'))}\n"
    return f"{flag}: {value}", _append(base, fields)


def comments(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    kind = rng.choice(["line", "trailing", "column0", "before", "hash-in-value", "after"])
    if kind == "line":
        text = _line_edit(entry, rng, lambda s: s + "\n  # a comment")
    elif kind == "trailing":
        text = _line_edit(entry, rng, lambda s: s + " # trailing")
    elif kind == "column0":
        text = _line_edit(entry, rng, lambda s: s + "\n# column 0")
    elif kind == "hash-in-value":
        text = _line_edit(entry, rng, lambda s: s + "#x")
    elif kind == "before":
        return kind, base + b"\n# note\n" + entry.encode()
    else:
        return kind, _append(base, entry) + b"# end\n"
    return kind, _append(base, text)


_UNICODE = (
    "\u200b", "\u00a0", "\ufeff", "\u202e", "\uff1a", "中文", "\U0001f680", "e\u0301", "\u2028",
    "\u0085", "\ue000", "\u00ad", "\u3000", "\u0661\u0662",
)  # fmt: skip


def unicode(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    char = rng.choice(_UNICODE)
    where = rng.choice(["description", "key", "link", "start", "key-name"])
    if where == "description":
        text = entry.replace('    - "', '    - "' + char, 1)
    elif where == "key":
        text = re.sub(
            r"(?m)^(    - )(\S)", lambda m: m.group(1) + m.group(2) + char, entry, count=1
        )
    elif where == "link":
        text = re.sub(r"(?m)^(  pr-link: \S+)$", lambda m: m.group(1) + char, entry)
    elif where == "key-name":
        text = entry.replace("  description:", f"  descr{char}iption:", 1)
    else:
        text = char + entry
    return f"{where} U+{ord(char[0]):04X}", _append(base, text)


def whitespace(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    kind = rng.choice(["trailing", "crlf-line", "crlf-all", "tab-indent", "tab-value", "cr"])
    if kind == "trailing":
        text = _line_edit(entry, rng, lambda s: s + rng.choice([" ", "  ", "\t"]))
    elif kind == "crlf-line":
        text = _line_edit(entry, rng, lambda s: s + "\r")
    elif kind == "crlf-all":
        text = entry.replace("\n", "\r\n")
    elif kind == "tab-indent":
        text = _line_edit(entry, rng, lambda s: "\t" + s.lstrip(" "))
    elif kind == "tab-value":
        text = entry.replace(": ", ":\t", 1)
    else:
        text = entry.replace("\n", "\r", 1)
    return kind, _append(base, text)


def empty_items(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    kind = rng.choice(
        ["empty-item", "empty-desc", "empty-keys", "flow-empty", "null-link", "empty-link", "ws"]
    )
    if kind == "empty-item":
        text = entry.replace("  description:\n", "  description:\n    -\n", 1)
    elif kind == "empty-desc":
        text = re.sub(r"(?s)  description:\n(    - [^\n]*\n)+", "  description:\n", entry)
    elif kind == "empty-keys":
        text = re.sub(r"(?s)^- config-keys:\n(    - [^\n]*\n)+", "- config-keys:\n", entry)
    elif kind == "flow-empty":
        text = re.sub(r"(?s)^- config-keys:\n(    - [^\n]*\n)+", "- config-keys: []\n", entry)
    elif kind == "null-link":
        text = re.sub(r"(?m)^  pr-link: .*$", "  pr-link: ~", entry)
    elif kind == "empty-link":
        text = re.sub(r"(?m)^  pr-link: .*$", "  pr-link:", entry)
    else:
        text = entry.replace("  description:\n    - ", '  description:\n    - ""\n    - ', 1)
    return kind, _append(base, text)


def anchors(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    kind = rng.choice(["anchor", "alias", "merge", "tag", "history-anchor"])
    if kind == "anchor":
        text = entry.replace("- config-keys:", "- config-keys: &k", 1)
    elif kind == "alias":
        text = entry.replace("  description:", "  description: &d", 1).rstrip("\n")
        text += "\n  scenario-type: *d\n"
    elif kind == "merge":
        text = entry.rstrip("\n") + "\n  <<: {evals-only: true}\n"
    elif kind == "tag":
        text = entry.replace("  pr-link: ", "  pr-link: !!str ", 1)
    else:
        last = base.rfind(b"\n- config-keys:") + 1
        return kind, base[:last] + b"- &h config-keys:" + base[last + 14 :] + b"\n" + entry.encode()
    return kind, _append(base, text)


_LINKS = (
    f"{REPO}/pull/3750", f"{REPO}/pull/3750/", f"{REPO}/pull/3750/files", f"{REPO}/pulls/3750",
    f"{REPO.replace('https', 'http')}/pull/3750", f"{REPO}/pull/03750", f"{REPO}/pull/",
    f"{REPO}/pull/\u0663\u0667", f"{REPO}/pull/3750?x=1", f"{REPO}/pull/3750#top",
    f"{REPO.lower()}/pull/3750", "XXX", f"{REPO}/pull/XXX", "xxx", "#3750", "TBD",
    f"<{REPO}/pull/3750>", f"{REPO}/issues/3750", "https://github.com/other/repo/pull/3750",
    "https://www.github.com/SemiAnalysisAI/InferenceX/pull/3750", f"{REPO}/pull/3750 ",
    f"'{REPO}/pull/3750'", f'"{REPO}/pull/3750"', f"{REPO}/pull/+3750", f"{REPO}/pull/3_750",
)  # fmt: skip


def pr_links(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    link = rng.choice(_LINKS)
    text = re.sub(r"(?m)^  pr-link: .*$", lambda _: f"  pr-link: {link}", entry)
    return link, _append(base, text)


def _entry_starts(base: bytes) -> list[int]:
    return [0] + [m.start() + 1 for m in re.finditer(rb"\n- config-keys:", base)]


def history(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    starts = _entry_starts(base)
    k = rng.randrange(len(starts))
    start, stop = starts[k], (starts[k + 1] if k + 1 < len(starts) else len(base))
    old = base[start:stop]
    kind = rng.choice(
        ["delete", "edit", "link-fix", "link-bad", "swap", "duplicate", "space", "insert", "blank"]
    )
    append = rng.random() < 0.5
    if kind == "delete":
        head = base[:start] + base[stop:]
    elif kind == "edit":
        head = base[:start] + old.replace(b"    - ", b"    - x", 1) + base[stop:]
    elif kind in ("link-fix", "link-bad"):
        link = f"{REPO}/pull/{rng.randrange(1, 9999)}" if kind == "link-fix" else "XXX"
        new = re.sub(rb"(?m)^  pr-link: .*$", f"  pr-link: {link}".encode(), old)
        head = base[:start] + new + base[stop:]
    elif kind == "swap" and k + 2 < len(starts):
        nxt = base[stop : starts[k + 2]]
        head = base[:start] + nxt + old + base[starts[k + 2] :]
    elif kind == "duplicate":
        head = base + b"\n" + old.rstrip(b"\n") + b"\n"
        append = False
    elif kind == "space":
        head = base[:start] + old.replace(b"\n", b" \n", 1) + base[stop:]
    elif kind == "insert":
        head = base[:start] + entry.encode() + b"\n" + base[start:]
        append = False
    elif kind == "blank":
        head = base[:start] + b"\n" + base[start:]
    else:
        head = base
    if append:
        head = _append(head, entry)
    return f"{kind} entry {k + 1}{' + append' if append else ''}", head


def separators(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    kind = rng.choice(
        ["none", "two", "spaces", "no-final", "extra-final", "doc-start", "doc-end", "two-new"]
    )
    raw = entry.encode()
    heads = {
        "none": base + raw,
        "two": base + b"\n\n" + raw,
        "spaces": base + b"  \n" + raw,
        "no-final": (base + b"\n" + raw).rstrip(b"\n"),
        "extra-final": base + b"\n" + raw + b"\n",
        "doc-start": b"---\n" + base + b"\n" + raw,
        "doc-end": base + b"\n" + raw + b"...\n",
        "two-new": base
        + b"\n"
        + raw
        + rng.choice([b"\n", b"\n\n", b"", b"  \n\n", b"\n  \n", b"# c\n\n", b" \n \n\n"])
        + raw.replace(b"    - ", b"    - 2", 1),
    }
    return kind, heads[kind]


_INVALID = (
    "  evals-only: maybe", "  notes: x", "  scenario-type: other", "  eval-min-prefill-ep: 0",
    "  append-only: true\n  all-evals: true", "  pr-link: >",
)  # fmt: skip


def scalars(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    kinds = ["literal", "folded", "plain-continued", "flow-keys", "flow-desc", "scalar", "bad"]
    kind = rng.choice(kinds)
    if kind == "literal":
        text = entry.replace("  description:\n    - ", "  description:\n    - |\n      ", 1)
    elif kind == "folded":
        text = entry.replace("  description:\n    - ", "  description:\n    - >-\n      ", 1)
    elif kind == "plain-continued":
        text = entry.replace("  description:\n", "  description:\n    - first\n      second\n", 1)
    elif kind == "bad":  # a value over two lines must not exempt the entry from the schema
        text = entry.replace("  description:\n", "  description:\n    - first\n      second\n", 1)
        text = text.rstrip("\n") + "\n" + rng.choice(_INVALID) + "\n"
        kind += " " + text.rsplit("\n", 2)[-2]
    elif kind == "flow-keys":
        text = re.sub(r"^- config-keys:\n    - (\S+)\n", r"- config-keys: [\1]\n", entry)
    elif kind == "flow-desc":
        text = entry.replace("  description:\n    - ", "  description: [", 1)
        text = text.replace('"\n', '"]\n', 1)
    else:
        text = re.sub(r"^- config-keys:\n    - (\S+)\n", r"- config-keys: \1\n", entry)
    return kind, _append(base, text)


def field_names(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    kind = rng.choice(
        ["Config-keys", "pr_link", "quoted-key", "spaced-dash", "scenario", "unknown", "chinese"]
    )
    if kind == "Config-keys":
        text = entry.replace("- config-keys:", "- Config-keys:", 1)
    elif kind == "pr_link":
        text = entry.replace("  pr-link:", "  pr_link:", 1)
    elif kind == "quoted-key":
        text = entry.replace("  pr-link:", '  "pr-link":', 1)
    elif kind == "spaced-dash":
        text = entry.replace("- config-keys:", "-  config-keys:", 1)
    elif kind == "scenario":
        value = rng.choice(["fixed-seq-len", "[]", "[agentic-coding, x]", "\n    - other", "~"])
        text = re.sub(r"(?s)  scenario-type:\n    - [^\n]*\n", "", entry)
        text = text.rstrip("\n") + f"\n  scenario-type: {value}\n"
    elif kind == "unknown":
        text = entry.rstrip("\n") + "\n  notes: x\n"
    else:
        text = entry.replace("  pr-link:", '    - "更新镜像。"\n  pr-link:', 1)
    return kind, _append(base, text)


_VALUES = (
    "123", "1.5", "2026-10-07", "null", "~", "true", "no", "0x1F", "1e3", ".inf", "-", "?",
    "!!binary aGk=", "[a, b]", "{a: b}", '"two\n- config-keys: x"', "- nested", "'it''s'",
    "1:2", "a: b", "@at", "`tick", "%pct", "|", ">", "*", "&",
)  # fmt: skip


def value_types(rng: random.Random, base: bytes, entry: str) -> tuple[str, bytes]:
    """Values YAML reads as other types (int, date, null, bool, binary, maps) or not at all."""
    value = rng.choice(_VALUES)
    target = rng.choice(["key", "description", "link", "column0"])
    if target == "key":
        text = re.sub(r"(?m)^(    - )\S+$", lambda m: m.group(1) + value, entry, count=1)
    elif target == "description":
        text = entry.replace("  description:\n", f"  description:\n    - {value}\n", 1)
    elif target == "link":
        text = re.sub(r"(?m)^  pr-link: .*$", lambda _: f"  pr-link: {value}", entry)
    else:  # a double-quoted item continued at column 0 (PyYAML does not check its indent)
        text = entry.replace('    - "', '    - "x\n- config-keys: ' + value + "\n  ", 1)
    return f"{target} {value}", _append(base, text)


CLASSES: tuple[Mutation, ...] = (
    value_types,
    key_reorder,
    indentation,
    quoting,
    duplicate_key,
    odd_flags,
    comments,
    unicode,
    whitespace,
    empty_items,
    anchors,
    pr_links,
    history,
    separators,
    scalars,
    field_names,
)


def mutations(base: bytes, entry: str, seed: int, per_class: int) -> Iterator[tuple[str, bytes]]:
    """`per_class` heads of each class (duplicates dropped), named `class: what`."""
    rng = random.Random(seed)
    seen: set[bytes] = set()
    for mutate in CLASSES:
        made = 0
        for _ in range(per_class * 3):
            what, head = mutate(rng, base, entry)
            if head not in seen and made < per_class:
                seen.add(head)
                made += 1
                yield f"{mutate.__name__}: {what}", head
