"""Text that came from outside, made safe for the sink it is printed to: the one place that does it.

Commit subjects, file paths, image facts, config values and error messages quoting them are
written by people relpipe does not trust (an engine's commit author, an image's builder, a
config's editor). Each sink has its own way to be abused:

- a terminal runs escape sequences: clear-screen, colours, OSC-8 hyperlinks whose text lies about
  their target, cursor moves that overwrite earlier lines;
- Markdown pasted into a pull request turns `@name` into a notification, a bare `#N` into a link
  to issue N of the wrong repository, `[text](url)` into a link, and bidi controls reorder what a
  reviewer reads (Trojan Source); a 5,000-character line breaks the page;
- JSON printed to a terminal or read in an editor carries the same controls inside strings;
- HTML runs markup (escaped by jinja2's autoescape in `pipeline.report`; this module removes the
  invisible characters that escaping leaves).

`clean` is shared by every sink: escape sequences are removed whole, the remaining control, bidi
and zero-width characters become a visible U+FFFD, and a line is capped. `terminal`, `markdown`
and `html_text` apply it and then the sink's own escaping. `json_text` is the JSON sink: it loses
nothing (the document parses to the same values) but writes every such character as a `\\u`
escape, so none reaches a terminal raw. Only the standard library: the commit
hook path may import it.
"""

from __future__ import annotations

import re

# ESC-introduced sequences: CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), other two-byte
# escapes; and their 8-bit C1 forms (CSI 0x9b, OSC 0x9d). Removed whole, payload included.
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: colours, clear-screen, cursor moves
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC: titles, OSC-8 hyperlinks
    r"|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[ -/]*[0-~]?"  # any other escape
)
# What is left that a reader cannot see or that reorders text: C0 (but tab and newline), DEL, C1,
# the Arabic letter mark, zero-width and bidi controls, word joiner and friends, the BOM.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]"
)
# In JSON the same characters, and lone surrogates (undecodable bytes), become \u escapes.
_JSON_UNSAFE = re.compile(f"(?:{_INVISIBLE.pattern}|[\ud800-\udfff])")
REPLACEMENT = "\ufffd"
ELLIPSIS = "\u2026"
LINE_LIMIT = 300  # characters of one line of untrusted text in a report, a note or a terminal
# Markdown: what can start markup (code, emphasis, links, HTML, tables, headings, lists, quotes,
# and GitHub's `$` math).
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~#!&{}$])")
# GitHub's autolinks that must not fire: @mentions (notify people) and bare #N (an issue of the
# repository the text is pasted into). `owner/repo#N` and words ending in `#N` are left alone. A
# mention is taken with every `@` and hidden character (shown as U+FFFD by `clean`) before its
# name: `@@name`, `@@@name` and `@\u200bname` become one code span each (issue 27.8).
_MD_MENTION = re.compile(r"@[@\ufffd]*[A-Za-z0-9][A-Za-z0-9-]*(?:/[\w.-]+)?")
_MD_REFERENCE = re.compile(rf"(?<![\w/`]){_MD_MENTION.pattern}|(?<![\w/&`])#\d+")


def clean(text: object, *, one_line: bool = True, limit: int | None = LINE_LIMIT) -> str:
    """`text` with escape sequences removed, invisible characters shown as U+FFFD, and (with
    `one_line`) all whitespace runs as one space; each line cut at `limit` characters."""
    value = _ESCAPES.sub("", str(text))
    if one_line:
        value = " ".join(value.split())
    value = _INVISIBLE.sub(REPLACEMENT, value)
    if limit is None:
        return value
    return "\n".join(_cap(line, limit) for line in value.split("\n"))


def invisible(text: str) -> bool:
    """Whether `text` holds a character a reader cannot see or that reorders text (`clean` would
    show it as U+FFFD): a check refuses such text where `clean` would repair it."""
    return _INVISIBLE.search(text) is not None


def _cap(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: max(limit - 1, 0)] + ELLIPSIS


def terminal(text: object, limit: int | None = LINE_LIMIT) -> str:
    """One line for a terminal (an error, a check's reason): no escape sequence reaches it."""
    return clean(text, limit=limit)


def markdown(text: object, limit: int | None = LINE_LIMIT) -> str:
    """One line for Markdown (a table cell, a list item): markup escaped, no @mention or bare
    `#N` that GitHub would act on (they become code spans, which it leaves alone)."""
    value = clean(text, limit=limit)
    out: list[str] = []
    last = 0
    while True:
        # Right after a code span an `@name` starts a text node, where GitHub would link it even
        # when the original text had a word character before it (`#12@name`, `@a@b`).
        match = _MD_MENTION.match(value, last) if out else None
        match = match or _MD_REFERENCE.search(value, last)
        if match is None:
            break
        out.append(_MD_SPECIAL.sub(r"\\\1", value[last : match.start()]))
        out.append(f"`{match.group(0)}`")
        last = match.end()
    out.append(_MD_SPECIAL.sub(r"\\\1", value[last:]))
    return "".join(out)


def markdown_code(text: object, limit: int | None = LINE_LIMIT, *, table: bool = False) -> str:
    """A code span showing `text` verbatim (a path, a digest): the fence is longer than any
    backtick run inside; in a GFM `table` cell a `|` is escaped, which GFM allows in code."""
    body = clean(text, limit=limit)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    if body.startswith("`") or body.endswith("`"):
        body = f" {body} "
    if table:
        body = body.replace("|", "\\|")
    return f"{fence}{body}{fence}"


def html_text(text: object, limit: int | None = LINE_LIMIT, *, one_line: bool = True) -> str:
    """Text for HTML *before* escaping (jinja2's autoescape, or `html.escape`, does that)."""
    return clean(text, one_line=one_line, limit=limit)


def json_text(value: object, *, indent: int | None = None, sort_keys: bool = False) -> str:
    """`value` as JSON for stdout or a file people read: readable non-ASCII text, and every
    character `clean` hides (C0, DEL, C1, bidi, zero-width) or that cannot be encoded (a lone
    surrogate) written as a `\\u` escape; `json.loads` gives back exactly `value`."""
    import json  # deferred: the hook imports this module and rarely writes JSON

    text = json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
