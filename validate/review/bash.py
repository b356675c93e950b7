"""Launch scripts parsed as bash parses them (tree-sitter-bash), reduced to simple commands.

Measured on the 2026-08 and 2026-10 trees' 263 scripts under `benchmarks/` and `runners/`:
tree-sitter-bash parses 262 without an error region (0.14 s for all), bashlex 3 (it rejects
`[[ -z ...` and `case` arms). So each command is read as bash reads it: quotes removed,
`$'..'` decoded, backslash escapes and backslash-newline joins applied, `--hf"-"overrides` one
word, comments and `$((1<<N))` not confused with anything, heredoc bodies attached to the command
that reads them. Variables assigned in the file are expanded (the last assignment before the use,
else the last in the file). `eval STRING` and `bash -c STRING` are parsed again when the string
is known. What cannot be resolved is an `Unread` naming the line, which the checks WARN on: a
command whose name is an unknown variable, `eval` of an unknown string, `source` of a variable or
of a file that is not a `.sh` script, and a region the parser could not read.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field, replace
from typing import Any

import re2
import tree_sitter
import tree_sitter_bash

from .rx import rx

_LANGUAGE = tree_sitter.Language(tree_sitter_bash.language())
MAX_DEPTH = 40  # nesting of words and of eval/bash -c re-parses (deeper: read as raw text)
MAX_VALUE = 10_000  # characters of one expanded word
MAX_COMMANDS = 100_000  # per file: a generated file bigger than that is not a launch script
# The largest real script (benchmark_lib.sh) is 89 KB and 16,187 syntax nodes; reading costs
# ~10 us a node in Python, so a bigger file is "not read" (a WARN), never a minute-long wait.
MAX_SCRIPT_BYTES = 256 * 1024
MAX_NODES = 60_000
# Calls of argument-reading functions expanded per file, and how deep (a helper calling a helper
# that calls one...); past either, the call is "not read" (a WARN), never an exponential walk.
MAX_CALLS = 2_000
MAX_CALL_DEPTH = 8
READ_BUDGET = 20  # parser reads of each 64-byte chunk (the real scripts need at most 4)
_CHUNK = 64
_VAR_NAME = re2.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ANSI = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b"}
_ANSI.update({"f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"})
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})
_MESSAGES = frozenset({"echo", "printf", ":", "true", "false"})


@dataclass(frozen=True, kw_only=True)
class Heredoc:
    """Text fed to a command on stdin (a heredoc or here-string), from `line` on."""

    line: int
    text: str


@dataclass(frozen=True, kw_only=True)
class Command:
    """One simple command: its words as bash passes them (quotes removed, known variables
    expanded; unknown ones left as `$NAME`), the files it redirects output to, its stdin text,
    the command piping into it and the directory a preceding `cd` moved to."""

    line: int
    argv: tuple[str, ...]
    env: tuple[str, ...] = ()  # `NAME=value` prefix assignments and `export`ed ones
    writes: tuple[str, ...] = ()
    stdin: Heredoc | None = None
    piped_from: tuple[str, ...] = ()
    cwd: str = ""
    origin: int = 0  # for a command of a function body reported at its call: the body's line

    @property
    def text(self) -> str:
        return " ".join((*self.env, *self.argv))


@dataclass(frozen=True, kw_only=True)
class Unread:
    """Something the parser could not resolve, so the checks cannot see through it (a WARN)."""

    line: int
    why: str


@dataclass(frozen=True, kw_only=True)
class Script:
    commands: tuple[Command, ...] = ()
    unread: tuple[Unread, ...] = ()
    functions: frozenset[str] = frozenset()  # functions that run their arguments ("$@")


@dataclass(kw_only=True)
class _State:
    """Walk state: variables seen so far (and every value in the file as a fallback)."""

    seen: dict[str, str] = field(default_factory=dict)
    final: dict[str, str] = field(default_factory=dict)
    arrays: dict[str, list[str]] = field(default_factory=dict)
    commands: list[Command] = field(default_factory=list)
    unread: list[Unread] = field(default_factory=list)
    cwd: str = ""
    depth: int = 0
    src: bytes = b""  # the parsed text (a backslash-newline between two words joins them)
    # functions of the file that read their arguments (`f() { cp "$@"; }`): name -> body
    functions: dict[str, tree_sitter.Node] = field(default_factory=dict)
    calling: frozenset[str] = frozenset()  # the functions being expanded (no recursion)
    calls: list[int] = field(default_factory=lambda: [MAX_CALLS])  # expansions left (shared)

    def value(self, name: str) -> str | None:
        return self.seen.get(name, self.final.get(name))


def _unescape(text: str, quoted: bool) -> str:
    """Backslash escapes of an unquoted word (any char) or a double-quoted string."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "\n":
                i += 2
                continue
            if not quoted or nxt in '$`"\\':
                out.append(nxt)
                i += 2
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _ansi_c(body: str) -> str:
    """`$'...'` body decoded as bash does (\\n, \\xHH, octal, \\uHHHH, quotes)."""
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 >= len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        m = rx(r"x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|([0-7]{1,3})").match(body[i + 1 : i + 6])
        if m:
            num = m.group(1) or m.group(2)
            out.append(chr(int(num, 16)) if num else chr(int(m.group(3), 8) % 256))
            i += 1 + m.end()
            continue
        out.append(_ANSI.get(nxt, "\\" + nxt))
        i += 2
    return "".join(out)


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _expansion(node: tree_sitter.Node, state: _State) -> str:
    """`$X`, `${X}`, `${X:-default}`: the known value, else the default, else the raw text."""
    raw = _text(node)
    name_node = next(
        (c for c in node.children if c.type in ("variable_name", "special_variable_name")), None
    )
    if name_node is None:
        return raw
    value = state.value(_text(name_node))
    if value is not None:
        return value
    m = rx(r"(?s)\$\{[A-Za-z_]\w*:?[-=](.*)\}").fullmatch(raw)
    return m.group(1).strip("'\"") if m else raw


def word(node: tree_sitter.Node, state: _State, depth: int = 0) -> str:
    """The string bash makes of one argument node (bounded in depth and length)."""
    kind = node.type
    if depth > MAX_DEPTH:
        return _text(node)
    if kind == "word" or kind == "number":
        return _unescape(_text(node), quoted=False)
    if kind == "raw_string":
        return _text(node)[1:-1]
    if kind == "ansi_c_string":
        return _ansi_c(_text(node)[2:-1])
    if kind in ("simple_expansion", "expansion"):
        return _expansion(node, state)
    if kind == "string":
        parts = []
        for child in node.children:
            if child.type == '"':
                continue
            if child.type == "string_content":
                parts.append(_unescape(_text(child), quoted=True))
            else:
                parts.append(word(child, state, depth + 1))
        return "".join(parts)[:MAX_VALUE]
    if kind == "concatenation":
        return "".join(word(c, state, depth + 1) for c in node.children)[:MAX_VALUE]
    return _text(node)


def _array(node: tree_sitter.Node, state: _State) -> list[str] | None:
    """The elements of `"${X[@]}"` / `${X[*]}` for an array assigned in the file, and of `"$@"`
    inside a function expanded at its call (its arguments)."""
    text = _text(node)
    if text in ('"$@"', "$@", '"${@}"', "${@}", "$*", "${*}"):
        return state.arrays.get("@")
    m = rx(r'"?\$\{([A-Za-z_]\w*)\[[@*]\]\}"?').fullmatch(text)
    return state.arrays.get(m.group(1)) if m else None


def _joined_words(nodes: list[tree_sitter.Node], state: _State) -> list[str]:
    """Argument words; two nodes split only by a backslash-newline are one word to bash."""
    words: list[str] = []
    prev: tree_sitter.Node | None = None
    for node in nodes:
        items = _array(node, state)
        if items is not None:
            words += items
            prev = None
            continue
        value = word(node, state)
        if prev is not None and node.start_byte == prev.end_byte + 2 and _text(prev)[-1:] != " ":
            if state.src[prev.end_byte : node.start_byte] == b"\\\n" and words:
                words[-1] += value
                prev = node
                continue
        words.append(value)
        prev = node
    return words


_ARG_TYPES = frozenset(
    {
        "word",
        "number",
        "string",
        "raw_string",
        "ansi_c_string",
        "simple_expansion",
        "expansion",
        "concatenation",
        "command_substitution",
        "arithmetic_expansion",
        "process_substitution",
    }
)


def _line(node: tree_sitter.Node, state: _State) -> int:
    return node.start_point.row + 1


def _redirects(stmt: tree_sitter.Node, state: _State) -> tuple[list[str], Heredoc | None]:
    writes: list[str] = []
    stdin: Heredoc | None = None
    for red in stmt.children:
        if red.type == "file_redirect":
            op = next((c for c in red.children if not c.is_named), None)
            dest = red.child_by_field_name("destination") or (
                red.named_children[-1] if red.named_children else None
            )
            if op is not None and dest is not None and ">" in _text(op):
                writes.append(word(dest, state))
        elif red.type == "heredoc_redirect":
            body = next((c for c in red.children if c.type == "heredoc_body"), None)
            start = next((c for c in red.children if c.type == "heredoc_start"), None)
            if body is not None:
                quoted = start is not None and _text(start)[:1] in "'\"\\"
                text = _text(body) if quoted else word_expand(_text(body), state)
                stdin = Heredoc(line=_line(body, state), text=text)
            for c in red.children:
                if c.type == "file_redirect":
                    more, _ = _redirects(red, state)
                    writes += more
                    break
        elif red.type == "herestring_redirect" and red.named_children:
            stdin = Heredoc(line=_line(red, state), text=word(red.named_children[-1], state))
    return writes, stdin


def word_expand(text: str, state: _State) -> str:
    """`$X`/`${X}` in free text (an unquoted heredoc body) replaced by known values."""

    def sub(m: Any) -> str:
        value = state.value(m.group(1) or m.group(2))
        return m.group(0) if value is None else value

    return rx(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)").sub(sub, text)[: MAX_VALUE * 10]


def _assign(node: tree_sitter.Node, state: _State) -> None:
    name = node.child_by_field_name("name") or (node.children[0] if node.children else None)
    value = node.child_by_field_name("value")
    if name is None or name.type != "variable_name":
        return
    var = _text(name)
    parent = node.parent.type if node.parent is not None else ""
    if parent not in ("command", "declaration_command"):
        # A statement of its own (`X=...`): a fact too (`SGLANG_..._MOE=1` is a finding),
        # one per physical line so that an array element is reported at its own line.
        first = _line(node, state)
        for k, text in enumerate(_text(node)[:MAX_VALUE].splitlines()):
            if text.strip():
                state.commands.append(Command(line=first + k, argv=(), env=(text.strip(),)))
    append = any(c.type == "+=" for c in node.children)
    if value is not None and value.type == "array":
        items = _joined_words([c for c in value.named_children if c.type in _ARG_TYPES], state)
        merged = (state.arrays.get(var, []) if append else []) + items
        state.arrays[var] = merged[:MAX_COMMANDS]
        state.seen[var] = " ".join(merged)[:MAX_VALUE]
        return
    text = word(value, state) if value is not None else ""
    state.seen[var] = (state.seen.get(var, "") + text if append else text)[:MAX_VALUE]


def _command(node: tree_sitter.Node, state: _State, stmt: tree_sitter.Node | None) -> None:
    parts = [c for c in node.children if c.type == "command_name" or c.type in _ARG_TYPES]
    nodes = [
        p.named_children[0] if p.type == "command_name" and p.named_children else p for p in parts
    ]
    argv = _joined_words(nodes, state)
    env = tuple(_text(c)[:MAX_VALUE] for c in node.children if c.type == "variable_assignment")
    if not argv:
        return
    writes, stdin = _redirects(stmt, state) if stmt is not None else ([], None)
    line = _line(node, state)
    piped: tuple[str, ...] = ()
    parent = (stmt or node).parent
    if parent is not None and parent.type == "pipeline":
        before = [c for c in parent.named_children if c.end_byte <= (stmt or node).start_byte]
        if before:
            piped = tuple(_text(before[-1]).split()[:20])
    cmd = Command(
        line=line,
        argv=tuple(argv),
        env=env,
        writes=tuple(writes),
        stdin=stdin,
        piped_from=piped,
        cwd=state.cwd,
    )
    state.commands.append(cmd)
    _follow_up(cmd, state)
    body = state.functions.get(cmd.argv[0])
    if body is not None and cmd.argv[0] not in state.calling:
        _call(cmd, body, state)


def _call(cmd: Command, body: tree_sitter.Node, state: _State) -> None:
    """A call of a function of the file that reads its arguments: its body's commands with the
    call's words as `$1`.. and `"$@"`, reported at the call (`f() { cp "$@"; }; f x.py SITE/`:
    what `cp` writes is known only here; issue 34.9)."""
    if len(state.calling) >= MAX_CALL_DEPTH or state.calls[0] <= 0:
        why = f"{cmd.argv[0]}: function calls nested too deep or too many to read"
        state.unread.append(Unread(line=cmd.line, why=why))
        return
    state.calls[0] -= 1
    args = list(cmd.argv[1:])
    seen = dict(state.seen) | {str(i): a for i, a in enumerate(args[:9], start=1)}
    seen["@"] = seen["*"] = " ".join(args)[:MAX_VALUE]
    inner = _State(
        seen=seen,
        final=state.final,
        arrays={**state.arrays, "@": args},
        cwd=state.cwd,
        depth=state.depth + 1,
        src=state.src,
        functions=state.functions,
        calling=state.calling | {cmd.argv[0]},
        calls=state.calls,
    )
    _walk(body, inner)
    state.commands += [replace(c, line=cmd.line, origin=c.origin or c.line) for c in inner.commands]
    # (what the body cannot be read as was reported where it is written)


def _follow_up(cmd: Command, state: _State) -> None:
    """`cd`, `eval`, `bash -c`, `source`, a dynamic command name: what bash does next."""
    name = cmd.argv[0].rsplit("/", 1)[-1]
    if name == "cd" and len(cmd.argv) > 1:
        state.cwd = cmd.argv[1]
    elif name == "eval":
        _reparse(" ".join(cmd.argv[1:]), cmd.line, state, "eval")
    elif name in SHELLS and "-c" in cmd.argv[1:-1]:
        _reparse(cmd.argv[cmd.argv.index("-c") + 1], cmd.line, state, f"{name} -c")
    elif name in ("source", ".") and len(cmd.argv) > 1:
        # A `.sh` script is followed by the launch-path resolution (scope.py); a virtualenv or
        # uv activation script is environment set-up; anything else is code nobody reads.
        target = cmd.argv[1]
        if not rx(r"\.sh$|(?:^|/)bin/(?:activate|env)$").search(target):
            state.unread.append(Unread(line=cmd.line, why=f"sources {target[:120]}, not read"))
    elif _dynamic(cmd.argv[0], state):
        state.unread.append(Unread(line=cmd.line, why=f"runs a dynamic command {cmd.argv[0][:80]}"))


def _dynamic(name: str, state: _State) -> bool:
    """A command name bash only knows at run time: a variable assigned nowhere in the file.

    A positional parameter (`"$@"` in a wrapper function) is not: each call site's words are
    read. A path whose last part is known (`${DIR}/venv/bin/python`) is that program, and a
    variable named like an interpreter (`$PY`, `$AIPERF_PYTHON`) is taken as python.
    """
    base = name.rsplit("/", 1)[-1]
    m = rx(r"\$\{?([A-Za-z_]\w*)\}?").fullmatch(base)
    if not base.startswith("$") or base.startswith("$(") or not m:
        return bool(base.startswith("${") and not m and not rx(r"\$\{?[@*0-9#]").match(base))
    var = m.group(1)
    return var not in state.final and not rx(r"(?i)py(?:thon)?\d*$").search(var)


def _reparse(text: str, line: int, state: _State, how: str) -> None:
    """The commands of an `eval`/`bash -c` string, reported at the line that runs it."""
    if state.depth >= MAX_DEPTH or len(text) > MAX_VALUE * 10:
        state.unread.append(Unread(line=line, why=f"{how}: nested too deep to read"))
        return
    if text.lstrip().startswith(("$(", "`")):
        decoded = _decoded(text.strip())
        if decoded is None:
            state.unread.append(Unread(line=line, why=f"{how} of a command's output: {text[:120]}"))
            return
        text, how = decoded, f"{how} of base64 text"
    inner = _State(seen=dict(state.seen), final=state.final, cwd=state.cwd, depth=state.depth + 1)
    inner.src = text.encode("utf-8", "surrogateescape")
    tree = parse_tree(text)
    if tree is None:
        state.unread.append(Unread(line=line, why=f"{how}: not read (parser budget spent)"))
        return
    _walk(tree.root_node, inner)
    state.commands += [replace(c, line=line) for c in inner.commands]
    state.unread += [Unread(line=line, why=f"{how}: {u.why}") for u in inner.unread]


_BASE64 = re2.compile(
    r"\$\(\s*(?:(?:echo(?:\s+-n)?|printf(?:\s+['\"]?%s['\"]?)?)\s+['\"]?([A-Za-z0-9+/=\s]+?)['\"]?"
    r"\s*\|\s*base64\s+(?:-d|--decode|-D)|base64\s+(?:-d|--decode|-D)\s*<<<\s*['\"]?"
    r"([A-Za-z0-9+/=]+)['\"]?)\s*\)"
)


def _decoded(text: str) -> str | None:
    """The text of `$(echo LITERAL | base64 -d)` (or `base64 -d <<< LITERAL`), so a command built
    from it is read like any other (issue 34.9); None for any other command's output."""
    m = _BASE64.fullmatch(text[: MAX_VALUE * 2])
    if m is None:
        return None
    try:
        return base64.b64decode("".join((m.group(1) or m.group(2)).split()), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return None


def parse_tree(text: str) -> tree_sitter.Tree | None:
    """The syntax tree, or None when the parser needs more than READ_BUDGET reads per chunk.

    tree-sitter's error recovery is superlinear on some garbage (`a=(` repeated: 14 s for 40 KB;
    the real scripts need at most 4 reads of each 64-byte chunk), and this binding has no
    timeout, so the input ends early once the budget is spent and the file is "not read".
    """
    data = text.encode("utf-8", "surrogateescape")
    budget = READ_BUDGET * (len(data) // _CHUNK + 1) + 1000
    reads = 0

    def read(offset: int, _point: object) -> bytes:
        nonlocal reads
        reads += 1
        return data[offset : offset + _CHUNK] if reads <= budget else b""

    tree_sitter.Parser(_LANGUAGE).parse(read)
    if reads > budget:
        return None
    # Parsed again from bytes: a tree parsed through a read callback holds no text (Node.text
    # of it is not safe); the budgeted pass proved this one cheap (the real scripts: 0.14 s).
    return tree_sitter.Parser(_LANGUAGE).parse(data)


def _walk(root: tree_sitter.Node, state: _State) -> None:
    """Document-order walk (iterative: deep nesting must not exhaust the Python stack)."""
    stack: list[tuple[tree_sitter.Node, tree_sitter.Node | None]] = [(root, None)]
    while stack and len(state.commands) < MAX_COMMANDS:
        node, stmt = stack.pop()
        kind = node.type
        if kind == "ERROR":
            state.unread.append(Unread(line=_line(node, state), why="not parsed as bash"))
        if kind == "variable_assignment":
            _assign(node, state)
        if kind == "command":
            _command(node, state, stmt)
        if kind == "declaration_command":
            words = tuple(_text(c)[:MAX_VALUE] for c in node.children)
            state.commands.append(Command(line=_line(node, state), argv=(), env=words))
        if kind == "redirected_statement":
            body = node.child_by_field_name("body") or (node.children[0] if node.children else None)
            kids = [(c, node if c == body else None) for c in node.children]
        elif kind == "heredoc_body":
            continue
        else:
            kids = [(c, None) for c in node.children]
        stack.extend(reversed(kids))


def parse(text: str) -> Script:
    """The commands of a script (see the module docstring)."""
    size = len(text.encode("utf-8", "surrogateescape"))
    if size > MAX_SCRIPT_BYTES:
        return Script(
            unread=(Unread(line=1, why=f"not read: {size} bytes (cap {MAX_SCRIPT_BYTES})"),)
        )
    tree = parse_tree(text)
    if tree is None:
        why = f"not read: {size} bytes (the parser's budget of {READ_BUDGET} reads a chunk spent)"
        return Script(unread=(Unread(line=1, why=why),))
    nodes = tree.root_node.descendant_count
    if nodes > MAX_NODES:
        why = f"not read: {size} bytes, {nodes} syntax nodes (cap {MAX_NODES})"
        return Script(unread=(Unread(line=1, why=why),))
    src = text.encode("utf-8", "surrogateescape")
    first = _State(src=src)
    _walk(tree.root_node, first)  # every assignment, for uses before the assignment
    defined = _functions(tree.root_node)
    # Functions whose body reads its arguments are expanded at each call (`_call`).
    reading = {
        _text(n.named_children[0]): n.named_children[-1]
        for n in defined
        if rx(r"\$\{?[@*1-9]").search(_text(n.named_children[-1]))
    }
    state = _State(final=dict(first.seen), src=src, functions=reading)
    _walk(tree.root_node, state)
    functions = frozenset(
        _text(n.named_children[0])
        for n in defined
        if rx(r"\"?\$[@*]\"?|\$\{[@*]\}").search(_text(n).split("{", 1)[-1])
    )
    return Script(
        commands=tuple(state.commands),
        unread=tuple(dict.fromkeys(state.unread)),
        functions=functions,
    )


def _functions(root: tree_sitter.Node) -> list[tree_sitter.Node]:
    out: list[tree_sitter.Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "function_definition" and node.named_children:
            out.append(node)
        stack.extend(node.children)
    return out
