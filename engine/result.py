"""Result documents of the engine CLI: the common envelope, atomic writing, and exit codes.

Every command writes one JSON object `{"schema": 1, "command": ..., "status": ...}` to `--out`
(atomically: temp file + fsync + rename) or to stdout. Exit 0 is pass, 1 a checked failure,
2 an error (bad usage, missing torch, unusable device).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from typing import Any

from .errors import EngineError
from .files import write_atomic

SCHEMA = 1
EXIT = {"pass": 0, "fail": 1, "error": 2}


def envelope(command: str, status: str, **fields: Any) -> dict[str, Any]:
    """The common head of every result document."""
    if status not in EXIT:
        raise ValueError(f"unknown status {status!r}")
    return {"schema": SCHEMA, "command": command, "status": status, **fields}


def _clean(value: Any) -> Any:
    # JSON has no NaN/Infinity; a non-finite measurement is reported as null, never as a number.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def dumps(doc: dict[str, Any]) -> str:
    """Canonical JSON text of a result (sorted keys, strict: no NaN)."""
    return json.dumps(_clean(doc), indent=2, sort_keys=True, allow_nan=False) + "\n"


def write(doc: dict[str, Any], out: str | None) -> int:
    """Write `doc` to `out` atomically (or stdout) and return the exit code of its status."""
    code = EXIT[doc["status"]]
    if out is None or out == "-":
        sys.stdout.write(dumps(doc))
        sys.stdout.flush()
    else:
        write_file(doc, out)
    return code


def write_file(doc: dict[str, Any], out: str) -> None:
    """Write a JSON document atomically (see `engine.files.write_atomic`)."""

    write_atomic(out, dumps(doc).encode("utf-8"))


def guarded(command: str, out: str | None, body: Callable[[], dict[str, Any]]) -> int:
    """Run a command body and write its result;
    an EngineError becomes a one-line fail/error result.
    """

    try:
        doc = body()
    except EngineError as exc:
        doc = envelope(command, "fail" if exc.exit_code == 1 else "error", reason=str(exc))
    return write(doc, out)
