"""The engine payload's own file helpers: size-capped reads of untrusted inputs (golden tokens,
thresholds) and crash-safe writes of results and weights.

This is a deliberate minimal copy of `relpipe.core.files`: the payload is mounted into foreign
images that have nothing of relpipe but `relpipe/engine`, so it may not import the core.
"""

from __future__ import annotations

import os

from .errors import EngineError


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


def write_atomic(path: str, data: bytes) -> None:
    """Replace `path` with `data`: temp file beside it, fsync, rename, fsync of the folder."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
