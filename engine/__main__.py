"""`python -m relpipe.engine COMMAND ...` (probe, smoke, eval, serve, launch-command,
server-smoke): dispatch to one module per command.

Nothing here imports torch or triton: `probe` must run in images that have neither, and the
decode commands import them lazily with a one-line error when they are missing.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from .runtime import prepare_environment

COMMANDS = {
    "probe": (
        "relpipe.engine.probe",
        "facts about the image: engine, AITER, ROCm, torch, triton, GPU",
    ),
    "smoke": (
        "relpipe.engine.smoke",
        "watched mono-path greedy decode checked against the reference",
    ),
    "eval": ("relpipe.engine.evals.cli", "eval suites: decode-parity, gsm8k"),
    "serve": ("relpipe.engine.serve", "OpenAI-compatible server for the reference model"),
    "launch-command": (
        "relpipe.engine.adapters.command",
        "the exact server command of an engine adapter (printed, not run)",
    ),
    "server-smoke": (
        "relpipe.engine.adapters.smoke",
        "start an engine server, decode fixed prompts through its API, then gsm8k",
    ),
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or args[0] not in COMMANDS:
        lines = ["usage: python -m relpipe.engine COMMAND [ARGS] [--out FILE]", ""]
        lines += [f"  {name:14} {help_}" for name, (_, help_) in COMMANDS.items()]
        print(
            "\n".join(lines),
            file=sys.stdout if args and args[0] in ("-h", "--help") else sys.stderr,
        )
        return 0 if args and args[0] in ("-h", "--help") else 2

    prepare_environment()
    module = importlib.import_module(COMMANDS[args[0]][0])
    return int(module.main(args[1:]))


if __name__ == "__main__":
    sys.exit(main())
