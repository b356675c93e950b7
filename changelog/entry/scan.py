"""Scanning a whole changelog (or a suffix of one) into entries and findings.

The InferenceX `perf-changelog.yaml` format: a top-level YAML list whose items start at column 0
with `- config-keys:`, keys indented 2, list items indented 4, one empty line between entries and
one final newline. Parsing is built for the commit hook's budget (stdlib + PyYAML only, near
interpreter start-up):
- byte-level checks (size, NUL, CR, UTF-8, BOM, tabs, non-printable characters, conflict
  markers, line length, final newline) run over the whole input in C-speed primitives;
- entries are split at column-0 lines (a column-0 line can only start a new list item), so each
  entry is parsed on its own (read.py), keeps its byte span and line numbers, and a suffix of a
  file (the appended part) can be parsed without the history before it;
- in a large file, entries are first matched against the whole-entry grammars (grammar.py);
  only the rest are parsed line by line, with the same findings.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property

from ...core.record import Record
from ..errors import ChangelogError
from ..repository.era import CHANGELOG_NAME
from . import grammar
from .fields import ENTRY_CODES, ERROR, WARNING, Finding
from .model import ENTRY_START, Entry
from .read import parse_block
from .scalars import bad_char, lazy_re, plain, read_value, unsafe_char

# Caps on untrusted input; the real changelog is 755 KB with lines up to 1,089 bytes.
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_LINE_BYTES = 8192


class Block(Record):
    """One entry as it sits in a file: byte span, line span, text; fields and Entry on demand.

    `start`/`end` are byte offsets of the entry's lines (end is after its last line's newline);
    `line`/`end_line` are 1-based inclusive. `canonical` entries matched the house-style grammar
    as a whole, which proves them valid, so they are only parsed into fields when asked (this is
    what keeps a 20,000-entry file fast). `style` is set for entries that matched the grammar of
    the house style's common variants instead (other item indentation, comments, YAML 1.1
    booleans): also valid by construction, with these style findings; their fields are parsed on
    demand too. `entry` is None when the fields break the schema.
    """

    start: int
    end: int
    line: int
    end_line: int
    text: str
    canonical: bool
    style: tuple[Finding, ...] | None = None

    @property
    def proven(self) -> bool:
        """Valid by construction (a grammar matched): `entry` is not None, without parsing."""
        return self.canonical or self.style is not None

    @cached_property
    def _parsed(
        self,
    ) -> tuple[dict[str, object], dict[str, int], Entry | None, tuple[Finding, ...]]:
        return parse_block(self.text.split("\n")[:-1], self.line)

    @property
    def fields(self) -> Mapping[str, object]:
        return self._parsed[0]

    @property
    def key_lines(self) -> Mapping[str, int]:
        return self._parsed[1]

    @property
    def entry(self) -> Entry | None:
        return self._parsed[2]

    @property
    def findings(self) -> tuple[Finding, ...]:
        if self.canonical:
            return ()
        return self.style if self.style is not None else self._parsed[3]

    def scalar(self, key: str) -> object:
        """A one-line field's value; for a canonical entry without parsing the whole entry."""
        if not self.canonical or "_parsed" in self.__dict__:
            return self.fields.get(key)
        start = self.text.find(f"\n  {key}: ")
        if start < 0:
            return None
        start += len(key) + 5
        return read_value(self.text[start : self.text.index("\n", start)])


class Changelog(Record):
    """A parsed changelog (or suffix of one): its entries and every finding, in line order."""

    path: str
    blocks: tuple[Block, ...]
    findings: tuple[Finding, ...]
    line_count: int

    @property
    def entries(self) -> tuple[Entry | None, ...]:
        return tuple(block.entry for block in self.blocks)

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == ERROR)


# ---------------------------------------------------------------------------------------------
# Byte-level rules

_ASCII_BYTES = bytes(range(128))
_CONFLICT_BYTES = (b"<" * 7, b"=" * 7, b">" * 7, b"|" * 7)
_CONFLICT = lazy_re(r"^(?:<{7}|={7}|>{7}|\|{7})(?: |$)", re.M)


def _line_of(data: bytes | str, index: int) -> int:
    if isinstance(data, bytes):
        return data.count(b"\n", 0, index) + 1
    return data.count("\n", 0, index) + 1


def _first_line(data: bytes, needle: bytes) -> int:
    return _line_of(data, data.index(needle))


def _byte_findings(
    data: bytes, first: int, after_content: bool = False
) -> tuple[str | None, list[Finding]]:
    """Byte-level rules; returns the decoded text when the bytes can be parsed further."""
    found: list[Finding] = []
    base = first - 1
    if len(data) > MAX_FILE_BYTES:
        return None, [
            Finding(
                line=0,
                code="size",
                message=f"file is {len(data)} bytes, over the {MAX_FILE_BYTES}-byte cap",
                hint="this is not a perf-changelog; check the file",
            )
        ]
    if b"\0" in data:
        found.append(
            Finding(
                line=base + _first_line(data, b"\0"),
                code="nul",
                message="NUL byte",
                hint="remove binary content",
            )
        )
    if b"\r" in data:
        found.append(
            Finding(
                line=base + _first_line(data, b"\r"),
                code="crlf",
                message="CR line ending (CRLF)",
                hint="convert line endings to LF "
                "(e.g. `dos2unix`, or git config core.autocrlf input)",
            )
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        found.append(
            Finding(
                line=base + _line_of(data, exc.start),
                code="utf8",
                message="invalid UTF-8",
                hint="save the file as UTF-8",
            )
        )
        return None, found
    found += _text_findings(data, text, first, after_content)
    return _readable(text, found), found


def _text_findings(
    data: bytes, text: str, first: int, after_content: bool = False
) -> list[Finding]:
    """Rules on the decoded text: BOM, tabs, invisible and non-printable characters, conflict
    markers, YAML document markers, the file's end (`after_content`: `data` is a suffix of a
    file whose earlier part has entries)."""
    found: list[Finding] = []
    base = first - 1
    if text.startswith("\ufeff"):
        found.append(
            Finding(
                line=first,
                code="bom",
                message="UTF-8 byte-order mark",
                hint="save the file as UTF-8 without BOM",
            )
        )
    if "\t" in text:
        found.append(
            Finding(
                line=base + _line_of(text, text.index("\t")),
                code="tab",
                message="tab character",
                hint="indent and separate with spaces only",
            )
        )
    if not data.isascii():
        # Deleting the ASCII bytes leaves whole UTF-8 sequences: all non-ASCII characters, in
        # order, at C speed (a str regex over the file would cost more than the rest of the scan).
        char = unsafe_char(data.translate(None, _ASCII_BYTES).decode("utf-8"))
        if char is not None:
            found.append(
                Finding(
                    line=base + _line_of(text, text.index(char)),
                    code="unsafe-char",
                    message=f"invisible, private-use or unassigned character U+{ord(char):04X}",
                    hint="remove it (bidi controls and zero-width characters hide what a "
                    "reviewer reads)",
                )
            )
    odd = bad_char(data)
    if odd is not None:
        char = odd.group(0).decode("utf-8")
        found.append(
            Finding(
                line=base + _line_of(data, odd.start()),
                code="non-printable",
                message=f"non-printable or line-break character U+{ord(char):04X}",
                hint="remove it, or write it as an escape inside a double-quoted string",
            )
        )
    conflict = _CONFLICT.search(text) if any(m in data for m in _CONFLICT_BYTES) else None
    if conflict is not None:
        found.append(
            Finding(
                line=base + _line_of(text, conflict.start()),
                code="conflict-marker",
                message=f"merge conflict marker `{conflict.group(0).strip()}`",
                hint="resolve the merge conflict and delete the <<<<<<< ======= >>>>>>> lines",
            )
        )
    document = _document_finding(data, text, base, after_content)
    if document is not None:
        found.append(document)
    end = _end_finding(data, base)
    if end is not None:
        found.append(end)
    return found


# YAML's document markers: at column 0, followed by a space or the line's end. InferenceX's
# validator loads the file with `yaml.load`, one document: a `---` after any content starts a
# second one, and so does any content after a `...` (both are rejected there). Content is a line
# that is neither blank nor a comment.
_DOCUMENT = lazy_re(r"^(?:---|\.\.\.)(?= |$)", re.M)
_CONTENT = lazy_re(r"^ *[^ #\n]", re.M)


def _document_finding(data: bytes, text: str, base: int, after_content: bool) -> Finding | None:
    """A second YAML document: `---` after content, or content after `...` (one pass)."""
    if not (data.startswith((b"---", b"...")) or b"\n---" in data or b"\n..." in data):
        return None
    first = last = -1  # where the first and the last content line start (markers aside)
    for c in _CONTENT.finditer(text):
        if not _DOCUMENT.match(text, c.start()):
            first = c.start() if first < 0 else first
            last = c.start()
    for m in _DOCUMENT.finditer(text):
        if m.group(0) == "---" and (after_content or 0 <= first < m.start()):
            return Finding(
                line=base + _line_of(text, m.start()),
                code="structure",
                message="`---` starts a second YAML document",
                hint="the changelog is one YAML list: remove the `---` line",
            )
        if m.group(0) == "..." and last > m.start():
            return Finding(
                line=base + _line_of(text, m.start()),
                code="structure",
                message="text after the YAML document's end (`...`)",
                hint="the changelog is one YAML list: remove the `...` line",
            )
    return None


def _end_finding(data: bytes, base: int) -> Finding | None:
    """The file's end: exactly one newline (`base`: the line before the text's first)."""
    if not data.endswith(b"\n"):
        return Finding(
            line=base + data.count(b"\n") + 1,
            code="final-newline",
            message="no newline at end of file",
            hint="end the file with exactly one newline",
        )
    if data[len(data.rstrip(b" \n")) :].count(b"\n") > 1:
        # An empty last line is InferenceX's "must end with one newline"; whitespace-only ones
        # before the final newline are only style there.
        return Finding(
            line=base + len(data.rstrip(b" \n").split(b"\n")) + 1,
            code="trailing-blank-lines" if data.endswith(b"\n\n") else "trailing-whitespace",
            message="blank lines at end of file"
            if data.endswith(b"\n\n")
            else "whitespace-only lines at end of file",
            hint="end the file with exactly one newline",
        )
    return None


def _readable(text: str | None, found: list[Finding]) -> str | None:
    """Blank lines at the end and unsafe characters leave the file readable: go on parsing."""
    if any(
        f.code not in ("unsafe-char", "trailing-blank-lines", "trailing-whitespace") for f in found
    ):
        return None
    return text


# ---------------------------------------------------------------------------------------------
# Entries


def _gap_findings(gap: Sequence[str], first: int) -> list[Finding]:
    """The separator before an entry must be exactly one empty line."""
    found = [
        Finding(
            line=first + k,
            code="whitespace-line",
            message="whitespace-only line",
            hint="make separator lines empty",
        )
        for k, line in enumerate(gap)
        if line
    ]
    if len(gap) != 1:
        message = (
            f"{len(gap)} blank lines before the entry" if gap else "no empty line before the entry"
        )
        found.append(
            Finding(
                line=first + len(gap),
                code="separator",
                message=message,
                hint="separate entries with exactly one empty line",
            )
        )
    return found


def _structure(line: int, message: str, hint: str) -> Finding:
    return Finding(line=line, code="structure", message=message, hint=hint)


def _lead_findings(text: str, pos: int, first_line: int, leading_blank: bool) -> list[Finding]:
    """What comes before the first entry (`pos`): nothing, or in a suffix its separator."""
    if pos >= len(text):
        return [
            _structure(
                first_line,
                "no entries: the file must be a YAML list of entries",
                f"start each entry at column 0 with `{ENTRY_START}`",
            )
        ]
    if leading_blank:
        gap = text[:pos].split("\n")[:-1]
        if any(line.strip() for line in gap):
            return [
                _structure(
                    first_line,
                    "text appended to the last existing entry",
                    "existing entries are immutable; add a new entry at the end, "
                    "after one empty line",
                )
            ]
        return _gap_findings(gap, first_line)
    if pos == 0:
        return []
    comments_only = all(
        not line.strip(" ") or line.lstrip(" ").startswith("#") for line in text[:pos].split("\n")
    )
    return [
        Finding(
            line=first_line,
            code="comment" if comments_only else "structure",
            message="comments before the first entry"
            if comments_only
            else "text before the first entry",
            hint=f"start the file with `{ENTRY_START}`",
        )
    ]


class _Scan:
    """One scan's state: the text, where it stands, the blocks and findings so far."""

    __slots__ = (
        "ascii_only",
        "blocks",
        "canonical",
        "found",
        "line",
        "misses",
        "offset",
        "seen",
        "shapes",
        "size",
        "text",
        "variants",
        "variants_ok",
    )

    def __init__(self, text: str, found: list[Finding], first_line: int, offset: int) -> None:
        self.text, self.found, self.size = text, found, len(text)
        self.ascii_only = text.isascii()
        self.canonical = grammar.canonical() if self.size >= grammar.CANONICAL_MIN_BYTES else None
        # The variants grammar's findings are the line parser's only where every character is
        # one the line parser accepts (it would add a schema finding for an unsafe one).
        # Compiling it costs as much as parsing some 60 entries line by line, so a file pays for
        # it only once that many have missed the house style (the real changelog has 20).
        self.variants_ok = self.canonical is not None and not any(
            f.code == "unsafe-char" for f in found
        )
        self.variants: re.Pattern[str] | None = None
        self.misses = 0
        self.shapes: dict[object, grammar._Template] = {}
        self.blocks: list[Block] = []
        self.seen: dict[str, int] = {}
        self.line, self.offset = first_line, offset

    def next_start(self, index: int) -> int:
        m = grammar.NEXT_START.search(self.text, index)
        return m.end() if m is not None else self.size

    def nbytes(self, start: int, stop: int) -> int:
        return stop - start if self.ascii_only else len(self.text[start:stop].encode("utf-8"))

    def match(self, pos: int, style: str) -> tuple[int, bool, tuple[Finding, ...] | None]:
        """(end, matched, style findings) of the entry at `pos`: a grammar's proof, or None."""
        text = self.text
        m = self.canonical.match(text, pos) if self.canonical is not None else None
        proven = None  # the style findings of an entry the variants grammar matched
        if m is None and self.variants_ok:
            self.misses += 1
            if self.variants is None and self.misses > grammar.VARIANTS_AFTER:
                self.variants = grammar.variants()
            m = self.variants.match(text, pos) if self.variants is not None else None
            proven = (
                None if m is None else grammar.variant_style(m, text, self.line, style, self.shapes)
            )
            if proven is None:
                m = None
        if m is not None:
            end = m.end()
            # The grammar proves the entry only if it reaches the entry's end: PyYAML reads
            # every indented or blank line up to the next column-0 line as part of this entry
            # (a second `pr-link:` below a match would win there), so anything else is parsed.
            # (The usual case, one empty line and the next entry, needs no search.)
            # The next entry is what starts with ENTRY_START, not any `-` at column 0 (`- x`,
            # `---` and `-` are read by the line parser).
            if (
                end >= self.size
                or text.startswith(ENTRY_START, end)
                or text.startswith(grammar.SEPARATED, end)
            ):
                return end, True, proven
            if not text[end : self.next_start(end - 1)].strip(" \n"):
                return end, True, proven
        kept = text[pos : self.next_start(pos)].split("\n")[:-1]
        while len(kept) > 1 and not kept[-1].strip(" "):
            kept.pop()  # trailing blank lines are the separator, not the entry
        return pos + sum(map(len, kept)) + len(kept), False, None

    def entry(self, pos: int, style: str) -> int:
        """Record the entry at `pos` and its findings; return where it ends."""
        end, matched, proven = self.match(pos, style)
        body = self.text[pos:end]
        lines_in = body.count("\n")
        end_byte = self.offset + (end - pos if self.ascii_only else self.nbytes(pos, end))
        block = Block(
            start=self.offset,
            end=end_byte,
            line=self.line,
            end_line=self.line + lines_in - 1,
            text=body,
            canonical=matched and proven is None,
            style=proven,
        )
        self.blocks.append(block)
        if body in self.seen:
            self.found.append(
                Finding(
                    line=self.line,
                    code="duplicate-entry",
                    message=f"exact duplicate of the entry at line {self.seen[body]}",
                    hint="remove the repeated entry",
                )
            )
        else:
            self.seen[body] = self.line
        if not matched:
            self.found.extend(block.findings)
        elif proven:
            self.found.extend(proven)
        self.line += lines_in
        self.offset = end_byte
        return end

    def run(self, pos: int, style: str) -> None:
        """Every entry from `pos` (the first column-0 line) to the end."""
        text, size = self.text, self.size
        while pos < size:
            if text[pos] != "-":
                stop = self.next_start(pos)
                self.found.append(
                    _structure(
                        self.line,
                        "text at column 0 that is not an entry",
                        f"start entries with `{ENTRY_START}`; indent keys by 2",
                    )
                )
                self.line += text.count("\n", pos, stop)
                self.offset += self.nbytes(pos, stop)
                pos = stop
                continue
            end = self.entry(pos, style)
            if end >= size:
                break
            if text.startswith(grammar.SEPARATED, end):
                pos = end + 1  # the one empty separator line
            else:
                pos = self.next_start(end - 1)
                if pos < size:
                    self.found.extend(_gap_findings(text[end:pos].split("\n")[:-1], self.line))
                pos = min(pos, size)
            self.offset += pos - end if self.ascii_only else self.nbytes(end, pos)
            self.line += text.count("\n", end, pos)

    def recheck_plain_keys(self, offset: int) -> None:
        """A canonical entry may still hold a plain config key YAML 1.1 reads as a non-string."""
        blocks = self.blocks
        if not any(block.canonical for block in blocks):
            return
        for m in grammar.SUSPECT_PLAIN.finditer(self.text):
            if plain(m.group(1)) != m.group(1):
                index = _block_at(blocks, offset + self.nbytes(0, m.start()))
                old = blocks[index]
                if old.canonical:
                    blocks[index] = Block(
                        start=old.start,
                        end=old.end,
                        line=old.line,
                        end_line=old.end_line,
                        text=old.text,
                        canonical=False,
                    )
                    self.found.extend(blocks[index].findings)


def _long_line(data: bytes, first_line: int) -> Finding | None:
    if len(data) <= MAX_LINE_BYTES:
        return None
    longest = max(map(len, data.split(b"\n")))
    if longest <= MAX_LINE_BYTES:
        return None
    lengths = [len(line) for line in data.split(b"\n")]
    return Finding(
        line=first_line + lengths.index(longest),
        code="line-length",
        message=f"line is {longest} bytes long",
        hint=f"keep lines under {MAX_LINE_BYTES} bytes",
    )


def scan(
    data: bytes,
    path: str = CHANGELOG_NAME,
    *,
    first_line: int = 1,
    offset: int = 0,
    leading_blank: bool = False,
    style: str = ERROR,
) -> Changelog:
    """Parse a changelog, or a suffix of one, collecting every finding (errors as errors).

    `first_line`/`offset` place `data` inside a larger file (a suffix after the history), so
    lines and byte spans are those of the whole file. `leading_blank` says `data` starts with the
    separator line before its first entry (a suffix appended to a non-empty history). `style` is
    the severity of the house-style findings of entries the variants grammar proves valid: a
    caller that grades them as warnings gets them so, rather than copying each (a large file in
    such a style has several an entry).
    """
    text, found = _byte_findings(data, first_line, after_content=offset > 0)
    line_count = first_line - 1 + data.count(b"\n")
    long_line = _long_line(data, first_line) if text is not None else None
    if text is None or long_line is not None:
        found += [long_line] if long_line is not None else []
        return Changelog(path=path, blocks=(), findings=tuple(found), line_count=line_count)
    state = _Scan(text, found, first_line, offset)
    pos = 0 if text[:1] not in ("", " ", "\n", "#") else state.next_start(0)
    found.extend(_lead_findings(text, pos, first_line, leading_blank))
    state.line += text.count("\n", 0, pos)
    state.offset += state.nbytes(0, pos)
    state.run(pos, style)
    state.recheck_plain_keys(offset)
    found.sort(key=_LINE)
    return Changelog(
        path=path, blocks=tuple(state.blocks), findings=tuple(found), line_count=line_count
    )


_LINE = operator.attrgetter("line")  # a sort key in C: a large file has a finding a line


def _block_at(blocks: Sequence[Block], byte: int) -> int:
    """Index of the block holding byte offset `byte` (blocks are sorted by start)."""
    import bisect  # deferred: not on the commit hook's usual path (start-up)

    return bisect.bisect_right([b.start for b in blocks], byte) - 1


def proven_valid(data: bytes) -> bool:
    """True when `data` is, byte for byte, house-style entries each after one empty line: then
    it is valid by construction (InferenceX's parse accepts it). False means "not proven", not
    "invalid": `scan` decides. Cheaper than `scan` (no per-entry records), for the hook's base.
    """
    if not data.startswith(b"- config-keys:") or not data.endswith(b"\n") or data.endswith(b"\n\n"):
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    match = grammar.canonical().match
    size, pos = len(text), 0
    while True:
        m = match(text, pos)
        if m is None:
            return False
        pos = m.end()
        if pos == size:
            break
        if not text.startswith("\n- config-keys:", pos):
            return False
        pos += 1
    if _byte_findings(data, 1) != (text, []):
        return False
    # The grammar leaves plain config keys that YAML 1.1 reads as non-strings to this check.
    return all(plain(m.group(1)) == m.group(1) for m in grammar.SUSPECT_PLAIN.finditer(text))


def parse(data: bytes, path: str = CHANGELOG_NAME) -> Changelog:
    """Parse a whole changelog; raise ChangelogError (exit code 1) naming the first error."""
    changelog = scan(data, path)
    errors = changelog.errors
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        err = ChangelogError(errors[0].format(path) + more)
        err.exit_code = 1
        raise err
    return changelog


def parse_appended(base: bytes, head: bytes, path: str = CHANGELOG_NAME) -> Changelog:
    """Parse only what `head` appends to `base` (a byte prefix of it), with head's lines and spans.

    The last base entry is re-read too, so that a base which does not end in a complete entry
    cannot swallow the appended text. Raises ChangelogError when `base` is not a prefix.
    """
    if not head.startswith(base):
        raise ChangelogError(
            f"{path}: the base is not a byte prefix of the head; compare them entry by entry"
        )
    suffix = head[len(base) :]
    first = base.count(b"\n") + 1
    found: list[Finding] = []
    if base:
        if not base.endswith(b"\n"):
            found.append(
                Finding(
                    line=first,
                    code="final-newline",
                    message="the history does not end with a newline",
                    hint="restore the history as it is in the base",
                )
            )
        last_start = base.rfind(b"\n- config-keys:") + 1
        tail = scan(
            base[last_start:], path, first_line=_line_of(base, last_start), offset=last_start
        )
        # Only what says the history does not end in a complete entry matters here.
        found.extend(f for f in tail.findings if f.code in ("yaml", "structure", "final-newline"))
    if not suffix:
        return Changelog(path=path, blocks=(), findings=tuple(found), line_count=first - 1)
    changelog = scan(suffix, path, first_line=first, offset=len(base), leading_blank=bool(base))
    return Changelog(
        path=path,
        blocks=changelog.blocks,
        findings=tuple(found) + changelog.findings,
        line_count=changelog.line_count,
    )


def as_warnings(findings: Iterable[Finding]) -> list[Finding]:
    """History findings: entry-level problems become warnings, file-level ones stay errors."""
    return [
        Finding(line=f.line, code=f.code, message=f.message, hint=f.hint, severity=WARNING)
        if f.code in ENTRY_CODES
        else f
        for f in findings
    ]


__all__ = ["Block", "Changelog", "as_warnings", "parse", "parse_appended", "proven_valid", "scan"]
