"""`relpipe notes render|check`: bilingual release notes from a facts file, and their checks.

`render FACTS.json [--lang en|zh|both] [--title] [--description]` prints the PR body (optionally
preceded by the `# EN / ZH` title line), or the perf-changelog description lines.
`check NOTES.md --facts FACTS.json [--json]` runs `validate.notes_check`: exit 0 clean, 1 findings.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ...changelog.notes import (
    LANG_CHOICES,
    description_lines,
    load_facts,
    render,
    render_title,
)
from ...core import sanitize
from ...validate import notes_check
from ..errors import PipelineError
from .parser import parser

MAX_NOTES = 1024 * 1024


def _parser() -> argparse.ArgumentParser:
    p = parser("relpipe notes", __doc__)
    sub = p.add_subparsers(dest="action", required=True, metavar="COMMAND")
    r = sub.add_parser("render", help="render notes from a release facts file (release.json)")
    r.add_argument("facts", metavar="FACTS_JSON", help="release facts JSON")
    r.add_argument("--lang", choices=LANG_CHOICES, default="both", help="language(s)")
    what = r.add_mutually_exclusive_group()
    what.add_argument("--title", action="store_true", help="start with the `# EN / ZH` title line")
    what.add_argument(
        "--description",
        action="store_true",
        help="print the perf-changelog description lines instead of the body",
    )
    c = sub.add_parser("check", help="check notes: EN/ZH parity and consistency with the facts")
    c.add_argument("notes", metavar="NOTES_MD", help="notes Markdown file")
    c.add_argument(
        "--facts", metavar="FACTS_JSON", required=True, help="release facts the notes must match"
    )
    c.add_argument("--json", action="store_true", help="print one JSON document (the findings)")
    return p


def _read_notes(path: str) -> str:
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise PipelineError(f"cannot read notes file {p}: {exc.strerror}; check the path") from None
    if len(raw) > MAX_NOTES:
        raise PipelineError(
            f"notes file {p} is larger than {MAX_NOTES} bytes; is it the right file?"
        )
    if b"\x00" in raw:
        raise PipelineError(f"notes file {p} contains a NUL byte; it is not a text file")
    try:
        return raw.decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError as exc:
        raise PipelineError(
            f"notes file {p} is not UTF-8 (byte {exc.start}); save it as UTF-8"
        ) from None


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    facts = load_facts(args.facts)
    if args.action == "render":
        if args.description:
            sys.stdout.write("".join(f"{line}\n" for line in description_lines(facts)))
            return 0
        head = f"# {render_title(facts)}\n\n" if args.title else ""
        sys.stdout.write(head + render(facts, args.lang))
        return 0
    findings = notes_check.check(_read_notes(args.notes), facts, path=args.notes)
    if args.json:
        doc = {"ok": not findings, "findings": [f.to_json() for f in findings]}
        print(sanitize.json_text(doc, indent=2))
    else:
        for finding in findings:
            print(finding)
        print(f"{args.notes}: {'ok' if not findings else f'{len(findings)} finding(s)'}")
    return 1 if findings else 0
