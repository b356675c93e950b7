"""`relpipe` command line: a table of subcommands, each a module with `main(argv) -> int`.

Subcommand modules are imported only when invoked, so `relpipe --help` and light commands stay
fast and do not pull torch, docker or httpx into processes that do not need them.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence

from ..core import sanitize, suggest
from ..core.errors import RelpipeError, report_unexpected
from ..engine.errors import EngineError

# Every package error derives from RelpipeError except the engine payload's (it imports no core).
USER_ERRORS = (RelpipeError, EngineError)

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
    "slurm": ("slurm", "run a qualification plan as a Slurm array job: submit, status, merge"),
    "review": ("review", "check a benchmark-repository change or config keys (review checklist)"),
    "history": ("history", "results history: ingest result files, per-point regressions"),
    "pr": ("pr", "open, update or inspect the bump pull request of a release (GitHub)"),
    "revert": ("revert", "restore a config key's previous pinned image and open its PR"),
    "bisect": ("bisect", "find the nightly that broke a config key, and its engine commits"),
    "doctor": (
        "doctor",
        "compare the benchmark repository's own rules with relpipe's, on its data",
    ),
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
        "Exit codes: 0 success/PASS/WARN, 1 checked failure (FAIL, or WARN with --strict),",
        "2 usage or environment error, 3 unexpected error (one line plus a log path).",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_help())
        return 0 if args else 2
    if args[0] == "--version":
        from importlib.metadata import (
            version,  # deferred: not on the commit hook's usual path (start-up)
        )

        print(f"relpipe {version('relpipe')}")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        hint = suggest.did_you_mean(name, ("--help", "--version") if name[:1] == "-" else COMMANDS)
        print(
            f"relpipe: error: unknown command {sanitize.terminal(repr(name), limit=200)}{hint}; "
            "run `relpipe --help`",
            file=sys.stderr,
        )
        return 2
    try:
        module = importlib.import_module(f"relpipe.pipeline.commands.{COMMANDS[name][0]}")
        return int(module.main(rest))
    except USER_ERRORS as exc:
        # The one place a package error becomes output: one line, no traceback.
        print(f"relpipe {name}: error: {_one_line(str(exc))}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 2))
    except ModuleNotFoundError as exc:
        extra = _extra_of(exc.name or "")
        if extra is None:
            return _unexpected(name, args)
        print(
            f"relpipe {name}: error: this command needs {exc.name!r}, which is not installed; "
            f"run: pip install 'relpipe[{extra}]'",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print(f"relpipe {name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`relpipe ... | head`): end quietly. stdout is pointed at devnull
        # so the interpreter's final flush does not raise a second time.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception:  # noqa: BLE001 - the one handler of unexpected errors (exit 3 + log)
        return _unexpected(name, args)


# top-level module -> the extra that installs it (pyproject.toml's optional-dependencies)
EXTRAS = {
    "httpx": "images",
    "docker": "images",
    "torch": "engine",
    "triton": "engine",
    "numpy": "engine",
    "jinja2": "report",  # the HTML report's template (pipeline.report)
    "rich": "report",
    "matplotlib": "report",
    "psycopg": "history",  # a PostgreSQL history (changelog.results.store)
}


def _extra_of(module: str) -> str | None:
    return EXTRAS.get(module.split(".")[0])


def _one_line(text: str) -> str:
    # Messages quote outside input (subjects, image facts, paths): no escape sequence gets out.
    return sanitize.terminal(text, limit=2000) or "(no message)"


def _unexpected(name: str, args: Sequence[str]) -> int:
    """Exit 3: one line naming the error and a log file with the traceback (as pre-commit does)."""
    return report_unexpected(f"relpipe {name}", args[1:])


if __name__ == "__main__":
    sys.exit(main())
