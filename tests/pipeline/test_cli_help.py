"""Every `relpipe` subcommand's --help, through the installed entry point: each option shows its
default (or says it is required), uses a real metavar, and long option lists come in groups."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

# An option entry of argparse's help: two spaces, then `-x, --long METAVAR` or `--long METAVAR`.
_ENTRY = re.compile(r"^  (-\S.*)$")
_SECTION = re.compile(r"^(\S.*):$")
_OPTION = re.compile(r"(--[a-z0-9-]+)(?: ([^\s,]+))?")


def _relpipe() -> list[str]:
    """The console script pip installed (the real entry point), next to this interpreter."""
    script = Path(sys.executable).with_name("relpipe")
    return [str(script)] if script.exists() else [shutil.which("relpipe") or "relpipe"]


@cache
def _help(*words: str) -> str:
    done = subprocess.run(
        [*_relpipe(), *words, "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 and not done.stderr, (words, done.stderr)
    return done.stdout


def _commands() -> list[tuple[str, ...]]:
    """Every command and subcommand, found by reading the help texts themselves."""
    top = _help()
    names = re.findall(r"^  ([a-z][a-z-]*)  ", top.split("commands:", 1)[1], re.M)
    found: list[tuple[str, ...]] = []
    for name in names:
        found.append((name,))
        text = _help(name)
        # A command with subcommands lists them under its COMMAND (or {a,b}) positional.
        if re.search(r"^usage: .*\b(COMMAND \.\.\.|\{[a-z,-]+\} \.\.\.)", text, re.M | re.S):
            block = text.split("positional arguments:", 1)[1].split("\n\n", 1)[0]
            found += [(name, sub) for sub in re.findall(r"^    ([a-z][a-z-]*)\b", block, re.M)]
    return found


def _entries(text: str) -> list[tuple[str, str, str]]:
    """(section, option line, whole entry text) for every option entry of a help text."""
    out: list[tuple[str, str, str]] = []
    section = ""
    current: list[str] = []
    for line in text.splitlines():
        heading = _SECTION.match(line)
        if heading:
            section = heading.group(1)
        entry = _ENTRY.match(line)
        if entry:
            current = [entry.group(1)]
            out.append((section, entry.group(1), ""))
        elif current and line.startswith("    ") and out:
            out[-1] = (out[-1][0], out[-1][1], out[-1][2] + " " + line.strip())
        else:
            current = []
        if entry:
            out[-1] = (section, entry.group(1), entry.group(1))
    return out


COMMANDS = _commands()


def test_every_command_is_walked() -> None:
    # The walk found the commands the CLI table names, and the nested ones.
    assert {"qualify", "release", "diff", "report", "merge", "nightly"} <= {c[0] for c in COMMANDS}
    assert ("images", "resolve") in COMMANDS and ("notes", "check") in COMMANDS


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_every_option_shows_its_default_and_a_real_metavar(words: tuple[str, ...]) -> None:
    text = _help(*words)
    entries = [e for e in _entries(text) if not e[1].startswith("-h, --help")]
    missing = [line for _, line, body in entries if not re.search(r"default|required", body)]
    assert not missing, f"relpipe {' '.join(words)}: options without a default shown: {missing}"
    # Python's own words for an absent default, or a default said twice, read as a bug.
    raw = [line for _, line, body in entries if "(default: None)" in body]
    twice = [line for _, line, body in entries if body.count("(default:") > 1]
    assert raw == [] and twice == [], (words, raw, twice)
    # argparse's fallback metavar is the option's name in capitals: say what the value is instead.
    generic = [
        opt
        for _, line, _ in entries
        for opt, metavar in _OPTION.findall(line)
        if metavar and metavar == opt.lstrip("-").replace("-", "_").upper()
    ]
    assert not generic, f"relpipe {' '.join(words)}: name a real metavar for {generic}"


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_long_option_lists_come_in_groups(words: tuple[str, ...]) -> None:
    entries = _entries(_help(*words))
    sections = {section for section, _, _ in entries}
    if len(entries) > 8:
        assert len(sections) > 1, f"relpipe {' '.join(words)}: group its {len(entries)} options"


def test_release_offers_no_baseline_and_requires_its_key() -> None:
    text = _help("release")
    assert "--baseline" not in text
    assert re.search(r"--config-key KEY\s+.*\(required\)", text)
    refused = subprocess.run(
        [*_relpipe(), "release", "--config-key", "k", "--image", "x", "--baseline", "y"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and "unrecognized arguments: --baseline" in (
        refused.stderr
    )
