"""Untrusted input files the engine reads (golden tokens, thresholds): read whole, size-capped."""

from __future__ import annotations

from engine.errors import EngineError


def read_capped(path: str, cap: int, what: str) -> bytes:
    """The bytes of `path`, or a one-line EngineError naming `what` when unreadable or too big."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(cap + 1)
    except OSError as exc:
        raise EngineError(f"{what} {path}: cannot read it ({exc.strerror})") from exc
    if len(raw) > cap:
        raise EngineError(f"{what} {path}: larger than {cap} bytes")
    return raw
