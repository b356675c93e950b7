"""What the commands of a parsed launch script do, as facts for the launch-path checks.

A patch is recognised by what the command does, not by how the line looks: applying a diff
(`git [-C dir] apply|am|cherry-pick`, `patch`), writing into an installed package (`sed -i`,
`perl -i`, `cp`/`mv`/`install`/`ln`/`rsync` incl. `-t DIR`, `tar -C`, `unzip -d`, `tee`, `dd of=`,
a redirection, a Python heredoc or `-c` program that finds the package and writes a file, in one
statement or two), a `sitecustomize`/`.pth` hook, installing an engine wheel or an engine built
from a cloned source (`pip`, `pip3.12`, `python -m pip`, `uv pip`, options anywhere), and running
downloaded code (`curl ... | python`). A command is found behind wrappers (`sudo`, `env`,
`timeout N`, `nohup`, a script function that runs `"$@"`) and inside `eval`/`bash -c` strings
(bash.py re-parses them). `echo`/`printf` arguments are messages, not commands.

Infrastructure, not the serving stack (stated in docs/review.md): the lm-eval harness's own
`sitecustomize` (a copy whose source or text names lm_eval/lm-eval), and `git apply`/`am`/
`cherry-pick` inside the srt-slurm launcher checkout (`-C`, or a preceding `cd`, naming
srt-slurm).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass

import re2

from ...core.status import FAIL, PASS, WARN
from . import bash
from .rx import rx

# A path inside an installed package, or a command that finds one (a variable assigned from
# `python -c 'import vllm; print(vllm.__spec__.origin)'` or `pip show vllm` holds its text).
_INSTALLED = re2.compile(
    r"site-packages|dist-packages|/sgl-workspace|__file__|find_spec|/usr/(?:local/)?lib/python|"
    r"__path__|__spec__|getsitepackages|sysconfig|\bpip[0-9.]*\s+show\b|importlib\.util"
)
_ENGINE_PKG = re2.compile(
    r"(?i)^(?:vllm|sglang|sgl[-_]kernel|tensorrt[-_]llm|aiter|amd[-_]aiter|atom|"
    r"flashinfer(?:[-_]\w+)?|deep[-_]?gemm|deep[-_]?ep|lmcache|mooncake(?:[-_]\w+)?)"
    r"(?:[=<>~!\[@ ;]|$)"
)
_ENGINE_IN_URL = re2.compile(
    r"(?i)(?:^|[/=+_-])(?:vllm|sglang|sgl[-_]kernel|tensorrt[-_]llm|aiter|atom|flashinfer|"
    r"deep[-_]?gemm|deep[-_]?ep|lmcache|mooncake)(?:[-_.@/]|$)"
)
_PY_WRITE = re2.compile(
    r"write_text|write_bytes|\.write\(|open\([^)\n]*['\"][wax]b?\+?['\"]|shutil\.(?:copy|move)|"
    r"os\.(?:replace|rename)"
)
_HARNESS = re2.compile(r"(?i)lm[-_]eval")
_HOOK_FILE = re2.compile(r"(?:sitecustomize|usercustomize)\.py|\.pth$")
_WRAPPERS = frozenset(
    {"sudo", "env", "exec", "command", "builtin", "nohup", "time", "nice", "ionice", "timeout"}
    | {"xargs", "stdbuf", "taskset", "numactl", "then", "do", "else", "!", "doas"}
)
_WRAPPER_VALUE_FLAGS = frozenset({"-u", "-g", "-n", "-s", "-k", "-C", "--signal", "--user"})
_GIT_VALUE_OPTS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
_PIP_VALUE_OPTS = frozenset(
    {"-r", "-c", "-i", "-t", "-e", "--index-url", "--extra-index-url", "--target", "--prefix"}
    | {"--root", "-f", "--find-links", "--requirement", "--constraint", "--python", "--editable"}
)
_PIP = re2.compile(r"^pip\d*(?:\.\d+)?$")
_PYTHON = re2.compile(r"^python\d*(?:\.\d+)?$")
# Downloaded programs that are harness, not the serving stack: uv's installer (the aiperf client
# set-up uses it) and NeMo-Skills' dataset preparers (the SPEED-Bench scripts of the 2026-07 and
# 2026-08 trees pipe `nemo_skills/dataset/speed-bench/prepare.py` into python3 to write a JSONL).
_TOOL_INSTALLERS = (
    "https://astral.sh/uv/",
    "https://raw.githubusercontent.com/NVIDIA-NeMo/Skills/refs/heads/main/nemo_skills/dataset/",
)
_MESSAGES = frozenset({"echo", "printf", ":", "true", "false", "test", "[", "[["})


@dataclass(frozen=True, kw_only=True)
class Fact:
    """One thing a script does at one line: `kind` is "<family>: <what>" as the checks filter."""

    line: int
    kind: str
    text: str
    severity: str = FAIL


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _positions(argv: tuple[str, ...], functions: frozenset[str]) -> Iterator[int]:
    """Indexes where a program runs: 0, and after each wrapper (its options skipped)."""
    i = 0
    while i < len(argv):
        yield i
        name = _base(argv[i])
        if name not in _WRAPPERS and name not in functions:
            return
        i += 1
        while i < len(argv) and (
            argv[i].startswith("-")
            or "=" in argv[i].split("/", 1)[0]
            or argv[i].isdigit()
            or rx(r"\d+[smhd]?").fullmatch(argv[i])
        ):
            i += 2 if argv[i] in _WRAPPER_VALUE_FLAGS else 1


def _git(args: tuple[str, ...], cwd: str) -> tuple[str, str]:
    """git's subcommand and the directory it works in (`-C`, `--work-tree`, else the cwd)."""
    i, where = 0, cwd
    while i < len(args) and args[i].startswith("-"):
        opt, _, inline = args[i].partition("=")
        if opt in _GIT_VALUE_OPTS and not inline:
            if opt in ("-C", "--work-tree", "--git-dir") and i + 1 < len(args):
                where = args[i + 1]
            i += 2
            continue
        if opt in ("--work-tree", "--git-dir"):
            where = inline
        i += 1
    return (args[i] if i < len(args) else ""), where


def _pip_args(args: tuple[str, ...]) -> tuple[bool, list[str], list[str]]:
    """(is an install, the requirement words, the values of -e/-t/--target...)."""
    i = 0
    while i < len(args) and args[i] != "install":
        i += 2 if args[i] in _PIP_VALUE_OPTS else 1
    if i >= len(args):
        return False, [], []
    reqs: list[str] = []
    values: list[str] = []
    j = i + 1
    while j < len(args):
        word = args[j]
        if word in _PIP_VALUE_OPTS and j + 1 < len(args):
            values.append(f"{word} {args[j + 1]}")
            j += 2
            continue
        if not word.startswith("-"):
            reqs.append(word)
        elif "=" in word:
            values.append(word)
        j += 1
    return True, reqs, values


def _pip(
    args: tuple[str, ...], last_clone: str, written: dict[str, str] | None = None
) -> list[tuple[str, str]]:
    install, reqs, values = _pip_args(args)
    if not install:
        return []
    # A requirements file the script itself wrote is read as the requirements it names
    # (`echo 'vllm @ git+https://github.com/fork/vllm' > r.txt; pip install -r r.txt`).
    for value in values:
        flag, _, name = value.partition(" ")
        if flag in ("-r", "--requirement") and written and name in written:
            reqs += [
                line.split("#", 1)[0].strip()
                for line in written[name].splitlines()[:1000]
                if line.split("#", 1)[0].strip()
            ]
    out: list[tuple[str, str]] = []
    source = [v for v in values if v.startswith(("-e ", "--editable"))]
    local = [r for r in reqs if r in (".", "./") or r.startswith("./")]
    if source and any(v.split(" ", 1)[-1].rstrip("/") in (".", "") for v in source) or local:
        clone = _base(last_clone.rstrip("/"))
        if _ENGINE_IN_URL.search(clone):
            out.append(("patch: installs an engine package built from " + last_clone, FAIL))
        elif "srt-slurm" not in last_clone:
            out.append((f"patch: installs a package built from source ({last_clone or '?'})", WARN))
    for req in reqs:
        if req.endswith(".whl") and _ENGINE_IN_URL.search(_base(req)):
            out.append(("patch: installs an engine wheel over the pinned image", FAIL))
        elif req.endswith(".whl"):
            out.append(("patch: installs a wheel over the pinned image", WARN))
        elif "://" in req and _ENGINE_IN_URL.search(req):
            out.append(("patch: installs an engine from a URL", FAIL))
        elif _ENGINE_PKG.match(req):
            out.append(("patch: installs an engine wheel over the pinned image", FAIL))
    if any(_INSTALLED.search(v) for v in values if v.startswith(("-t", "--target", "--prefix"))):
        out.append(("patch: pip writes into the installed engine", FAIL))
    return out


def _dest(name: str, args: tuple[str, ...]) -> list[str]:
    """Where a copying/unpacking command writes."""
    plain = [a for a in args if not a.startswith("-")]
    found: list[str] = []
    for i, a in enumerate(args):
        if a in ("-t", "-C", "-d", "--directory", "--target-directory") and i + 1 < len(args):
            found.append(args[i + 1])
        elif a.startswith(("--target-directory=", "--directory=")):
            found.append(a.split("=", 1)[1])
        elif name == "dd" and a.startswith("of="):
            found.append(a[3:])
    if name in ("cp", "mv", "install", "ln", "rsync") and not found and plain:
        found.append(plain[-1])
    if name == "tee":
        found += plain
    return found


def _in_place(name: str, args: tuple[str, ...]) -> bool:
    if name == "sed":
        return any(rx(r"-[a-zA-Z]*i\S*|--in-place\S*").fullmatch(a) for a in args)
    return any(rx(r"-[a-zA-Z]*i\S*").fullmatch(a) for a in args)  # perl -pi -e / -i.bak


def _edits_in_place(name: str, args: tuple[str, ...]) -> bool:
    """Editors that rewrite their file arguments: gawk's `-i inplace`, `ex`/`vi -e`/`vim -e`
    with commands (`-c`, `-s -c`, `+cmd`), `ed` (issue 34.9)."""
    if name in ("awk", "gawk"):
        pairs = zip(args, args[1:], strict=False)
        return any(a in ("-i", "--include") and b.startswith("inplace") for a, b in pairs) or any(
            a.startswith(("--include=inplace", "-iinplace")) for a in args
        )
    if name in ("ex", "ed") or (name in ("vi", "vim", "nvim") and "-e" in args):
        return True
    return False


def _program(
    name: str, args: tuple[str, ...], cmd: bash.Command, state: dict[str, str]
) -> list[tuple[str, str]]:
    """Facts of one program run with its arguments."""
    out: list[tuple[str, str]] = []
    joined = " ".join(args)
    if name == "git":
        sub, where = _git(args, cmd.cwd)
        if sub == "clone":
            state["clone"] = next((a for a in args if "://" in a or "github.com" in a), "")
        if sub in ("apply", "am", "cherry-pick"):
            # The launcher checkout by name, after `..` is resolved: `/tmp/srt-slurm/../../usr/..`
            # is not inside it (issue 34.9).
            parts = posixpath.normpath(where or ".").split("/")
            if "srt-slurm" in parts or "srt_slurm" in parts:
                out.append((f"infra: git {sub} in the srt-slurm launcher checkout", PASS))
            else:
                out.append((f"patch: git {sub}", FAIL))
    elif name == "patch":
        out.append(("patch: patch(1)", FAIL))
    elif (name in ("sed", "perl") and _in_place(name, args)) or _edits_in_place(name, args):
        if "config.json" in joined:
            out.append(("arch: edits the model config", FAIL))
        elif _INSTALLED.search(joined) or rx(r"\.py\b").search(joined):
            out.append((f"patch: {name} -i on an installed engine source", FAIL))
    elif name == "jq" and "config.json" in joined:
        out.append(("arch: edits the model config", FAIL))
    elif name in ("cp", "mv", "install", "ln", "rsync", "tar", "unzip", "tee", "dd"):
        for dest in _dest(name, args):
            if _HOOK_FILE.search(dest) and not _HARNESS.search(joined):
                out.append(("patch: monkey-patching hook (sitecustomize/.pth)", FAIL))
            elif _INSTALLED.search(dest):
                out.append(("patch: overwrites a file inside the installed engine", FAIL))
    if _PIP.match(name) or (name == "uv" and args[:1] == ("pip",)):
        out += _pip(args[1:] if name == "uv" else args, state.get("clone", ""), _files(state))
    if _PYTHON.match(name) and args[:2] in (("-m", "pip"), ("-m", "pip3")):
        out += _pip(args[2:], state.get("clone", ""), _files(state))
    if _PYTHON.match(name) and "-c" in args[:-1]:
        out += _python_code(args[args.index("-c") + 1])
    if (_PYTHON.match(name) or name in bash.SHELLS) and cmd.piped_from[:1] in (
        ("curl",),
        ("wget",),
    ):
        if any(w.startswith(_TOOL_INSTALLERS) for w in cmd.piped_from):
            out.append(("infra: a tool's own installer", PASS))
        else:
            # Code nobody reviewed, run in the serving container: it can patch anything.
            out.append(("patch: runs downloaded code", FAIL))
    if rx(r"<\((?:curl|wget)\b").search(joined):
        out.append(("patch: runs downloaded code", FAIL))
    return out


def _python_code(code: str) -> list[tuple[str, str]]:
    """A Python program that locates an installed package and writes a file (any two lines)."""
    if _INSTALLED.search(code) and _PY_WRITE.search(code) and not _HARNESS.search(code):
        return [("patch: inline Python rewrites an installed file", FAIL)]
    return []


def _heredoc(cmd: bash.Command) -> list[Fact]:
    """Facts of a heredoc body, at the line of the write (or of the hook file named)."""
    if cmd.stdin is None:
        return []
    body = cmd.stdin.text
    out: list[Fact] = []
    lines = body.splitlines()
    if _INSTALLED.search(body) and not _HARNESS.search(body):
        for n, text in enumerate(lines):
            if _PY_WRITE.search(text):
                out.append(
                    Fact(
                        line=cmd.stdin.line + n,
                        kind="patch: inline heredoc rewrites an installed file",
                        text=text.strip(),
                    )
                )
                break
    for n, text in enumerate(lines):
        if rx(r"hf[-_]overrides").search(text):
            out.append(Fact(line=cmd.stdin.line + n, kind="arch: hf_overrides", text=text.strip()))
    return out


def facts(script: bash.Script) -> list[Fact]:
    """Every patch/arch fact of a script's commands (other families: see launch.py)."""
    out: list[Fact] = []
    state: dict[str, str] = {}
    seen: set[tuple[int, str]] = set()  # (line, kind) of every fact so far
    for cmd in script.commands:
        start = len(out)
        _command_facts(cmd, script, state, out)
        if cmd.origin:
            # A function's command at its call: only what its definition did not show (`cp "$@"`
            # writes where the call says); the rest was reported at the body's line.
            out[start:] = [f for f in out[start:] if (cmd.origin, f.kind) not in seen]
        seen.update((f.line, f.kind) for f in out[start:])
    for u in script.unread:
        out.append(Fact(line=u.line, kind=f"unread: {u.why}", text=u.why, severity=WARN))
    return out


_FILE = "file:"  # `state` key prefix of a file the script wrote, with its known content


def _files(state: dict[str, str]) -> dict[str, str]:
    return {k[len(_FILE) :]: v for k, v in state.items() if k.startswith(_FILE)}


def _remember_writes(cmd: bash.Command, state: dict[str, str]) -> None:
    """What the script writes into files whose content is known: `echo`/`printf` words or a
    heredoc redirected (`> F`), and a heredoc through `tee F` (bounded)."""
    name = _base(cmd.argv[0]) if cmd.argv else ""
    targets = list(cmd.writes) + (
        [a for a in cmd.argv[1:] if not a.startswith("-")] if name == "tee" else []
    )
    if not targets:
        return
    if name in ("echo", "printf"):
        words = [a for a in cmd.argv[1:] if not (name == "echo" and a in ("-e", "-n", "-ne"))]
        content = " ".join(words).replace("\\n", "\n")
    elif cmd.stdin is not None:
        content = cmd.stdin.text
    else:
        return
    for target in targets:
        state[_FILE + target] = (state.get(_FILE + target, "") + "\n" + content)[-100_000:]


def _command_facts(
    cmd: bash.Command, script: bash.Script, state: dict[str, str], out: list[Fact]
) -> None:
    """The facts of one command, appended to `out`."""
    _remember_writes(cmd, state)
    out += _heredoc(cmd)
    if not cmd.argv or _base(cmd.argv[0]) in _MESSAGES:
        return
    text = " ".join(cmd.text.split())[:200]
    for dest in cmd.writes:
        if _HOOK_FILE.search(dest) and not _HARNESS.search(cmd.text):
            out.append(
                Fact(
                    line=cmd.line,
                    kind="patch: monkey-patching hook (sitecustomize/.pth)",
                    text=text,
                )
            )
        elif _INSTALLED.search(dest):
            out.append(Fact(line=cmd.line, kind="patch: overwrites an installed file", text=text))
    seen: set[str] = set()
    for i in _positions(cmd.argv, script.functions):
        for kind, sev in _program(_base(cmd.argv[i]), cmd.argv[i + 1 :], cmd, state):
            seen.add(kind)
            out.append(Fact(line=cmd.line, kind=kind, text=text, severity=sev))
    # A git/pip sequence behind a wrapper this file does not define (a library's `log`).
    for i, w in enumerate(cmd.argv[1:], start=1):
        after = cmd.argv[i + 1 : i + 2]
        if (
            _base(w) == "git"
            or _PIP.match(_base(w))
            or (_base(w) == "patch" and after and after[0].startswith("-"))
        ):
            for kind, sev in _program(_base(w), cmd.argv[i + 1 :], cmd, state):
                if kind not in seen and (kind.startswith("patch") or kind.startswith("infra")):
                    seen.add(kind)
                    out.append(Fact(line=cmd.line, kind=kind, text=text, severity=sev))
