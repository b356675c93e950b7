"""`relpipe` command line: a table of subcommands, each a module with `main(argv) -> int`.

Subcommand modules are imported only when invoked, so `relpipe --help` and light commands stay
fast and do not pull torch, docker or httpx into processes that do not need them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from changelog.errors import ChangelogError
from engine.errors import EngineError
from images.errors import ImageError
from pipeline.errors import PipelineError
from validate.errors import ValidateError

USER_ERRORS = (ChangelogError, ImageError, ValidateError, EngineError, PipelineError)

# name -> (module under pipeline.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "images": ("images", "resolve, list, pin and probe container images (OCI registry)"),
    "fixtures": ("fixtures", "build reproducible fixture nightlies and push them to a registry"),
    "diff": ("diff", "engine commits between two images and their precision relevance"),
    "notes": ("notes", "render and check bilingual (EN + ZH) release notes"),
    "qualify": ("qualify", "qualify one image: probe, smoke, evals, precision diff, verdict"),
    "nightly": ("nightly", "find the newest nightly of a repository and qualify it"),
    "release": ("release", "pin a qualified image, append the changelog entry, write notes"),
    "report": ("report", "re-render a run record's reports"),
    "merge": ("merge", "combine shard run records into one verdict"),
}

USAGE = "usage: relpipe [-h] [--version] COMMAND [ARGS ...]"


def _help() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        USAGE,
        "",
        "Qualify nightly inference images and turn them into releases.",
        "",
        "commands:",
    ]
    lines += [f"  {name:<{width}}  {text}" for name, (_, text) in COMMANDS.items()]
    lines += [
        "",
        "Run `relpipe COMMAND --help` for a command's options.",
        "Exit codes: 0 success/PASS, 1 checked failure, 2 usage or environment error.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_help())
        return 0 if args else 2
    if args[0] == "--version":
        from importlib.metadata import version

        print(f"relpipe {version('relpipe')}")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"relpipe: error: unknown command {name!r}; run `relpipe --help`", file=sys.stderr)
        return 2
    module = importlib.import_module(f"pipeline.commands.{COMMANDS[name][0]}")
    try:
        return int(module.main(rest))
    except USER_ERRORS as exc:
        # The one place a package error becomes output: one line, no traceback.
        print(f"relpipe {name}: error: {exc}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 2))
    except KeyboardInterrupt:
        print(f"relpipe {name}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
