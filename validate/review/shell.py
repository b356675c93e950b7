"""Launch scripts as the shell reads them: logical lines, comments dropped, variables resolved.

Not a shell: enough of one to check facts with evidence. A logical line joins backslash
continuations and keeps the number of its first physical line; `#` comments outside quotes are
dropped (so a commented-out `--hf-overrides` is not a finding); heredoc bodies are kept as their
own lines, marked, because inline patches live there. Simple assignments (`X=...`,
`export X=...`, `local X=...`) are recorded so that `sed -i ... "$X"` can be resolved to the file
it edits. `source`/`bash` of a repository script is followed by the caller (`scope.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

import re2

_HEREDOC = re2.compile(r"""<<-?\s*(?:'([A-Za-z_]\w*)'|"([A-Za-z_]\w*)"|([A-Za-z_]\w*))""")
_ASSIGN = re2.compile(
    r"^(?:export\s+|local\s+|declare\s+(?:-\w+\s+)*|readonly\s+)?([A-Za-z_]\w*)=(.*)$"
)
_VAR = re2.compile(r"\$\{([A-Za-z_]\w*)(?:[:%#/][^}]*)?\}|\$([A-Za-z_]\w*)")
MAX_LOGICAL = 200_000  # lines per file: a generated file bigger than that is not a launch script


@dataclass(frozen=True)
class Line:
    """One logical line: the first physical line number, the text, and whether it is a heredoc
    body line (data fed to a command, not a command)."""

    number: int
    text: str
    heredoc: bool = False


def _strip_comment(text: str, quote: str = "") -> tuple[str, str]:
    """Drop an unquoted `#` comment (a `#` that starts a word), keeping quoted text intact.

    `quote` is the quote still open from the previous physical line; returns the text and the
    quote still open at its end (a multi-line quoted argument, e.g. a `sed` script).
    """
    prev = " "
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and (quote == "'" or prev != "\\"):
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (prev.isspace() or prev in ";&|(" or i == 0):
            return text[:i].rstrip(), ""
        prev = ch
    return text, quote


def logical_lines(text: str) -> list[Line]:
    """The script's logical lines (see the module docstring)."""
    out: list[Line] = []
    physical = text.splitlines()[:MAX_LOGICAL]
    i = 0
    while i < len(physical):
        start = i
        raw, quote = _strip_comment(physical[i])
        # A quote left open spans lines (bounded: a stray apostrophe must not eat the file).
        while (raw.endswith("\\") or quote) and i + 1 < len(physical) and i - start < 60:
            i += 1
            was_quoted = bool(quote)
            more, quote = _strip_comment(physical[i], quote)
            raw = raw + "\n" + more if was_quoted else raw[:-1] + " " + more.strip()
        i += 1
        if raw.strip():
            out.append(Line(start + 1, raw.strip()))
        heredoc = _HEREDOC.search(raw)
        if heredoc:
            word = heredoc.group(1) or heredoc.group(2) or heredoc.group(3)
            while i < len(physical) and physical[i].strip() != word:
                out.append(Line(i + 1, physical[i], heredoc=True))
                i += 1
            i += 1  # the terminator
    return out


def assignments(lines: list[Line]) -> dict[str, str]:
    """Last simple assignment of each variable (quotes removed); enough to resolve targets."""
    found: dict[str, str] = {}
    for line in lines:
        if line.heredoc:
            continue
        m = _ASSIGN.match(line.text)
        if m:
            found[m.group(1)] = m.group(2).strip().strip("'\"")
    return found


def expand(text: str, variables: dict[str, str], depth: int = 4) -> str:
    """`$X` and `${X...}` replaced by their recorded values (bounded: no recursion bombs)."""
    for _ in range(depth):
        new = _VAR.sub(lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), text)
        if new == text or len(new) > 10_000:
            break
        text = new
    return text
