"""What a container run leaves behind: its caps, the run record, and the engine's result document.

The result JSON is untrusted: read without following links or blocking on FIFOs, size-capped,
parsed strictly (no duplicate keys, no NaN/Infinity) and checked against the engine's result
envelope on the host. The output folder is measured the way the disk pays for it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import jsonload
from .errors import ContainerError

OUT_DIR = "/relpipe/out"
RESULT_NAME = "result.json"
RESULT_STATUSES = {"pass": 0, "fail": 1, "error": 2}
MIB = 1 << 20


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Resource and size caps of one container run (defaults fit the tiny engine model on CPU)."""

    mem: str = "4g"
    pids: int = 1024
    tmpfs_size: str = "1g"
    log_bytes: int = 64 * 1024  # kept from each end of the logs
    result_bytes: int = 4 * MIB
    out_dir_bytes: int = 64 * MIB
    out_dir_poll_s: float = 0.2  # how often the output folder is measured while a container runs
    volumes: int = 16  # image-declared VOLUMEs mounted (as bounded tmpfs); more are refused
    volume_size: str = "64m"  # each declared VOLUME's tmpfs
    archive_bytes: int = 2048 * MIB
    archive_members: int = 200_000


@dataclass(frozen=True, kw_only=True)
class EngineRun:
    """One container run: what ran, how it ended, and the validated result (or why not)."""

    image: str  # registry/repository@sha256:... that ran
    argv: tuple[str, ...]
    exit_code: int | None  # None when killed at the timeout
    timed_out: bool
    duration_s: float
    result: dict[str, Any] | None
    error: str | None  # one line; None means PASS
    logs: str
    logs_truncated: bool
    out_dir: str

    @property
    def passed(self) -> bool:
        return self.error is None

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def require(self) -> dict[str, Any]:
        """The result document, or a one-line checked failure (exit 1)."""
        if self.error is not None or self.result is None:
            raise ContainerError(self.error or "no result", 1)
        return self.result


def one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise ValueError(f"duplicate key {key!r}")
        doc[key] = value
    return doc


def parse_result(data: bytes, command: str, cap: int = Limits.result_bytes) -> dict[str, Any]:
    """Validate an untrusted engine result document; raises a one-line checked error."""
    if len(data) > cap:
        raise ContainerError(f"{command} result is larger than {cap} bytes; refusing to read it", 1)
    try:
        doc = jsonload.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ContainerError(
            f"{command} result is not valid JSON: {one_line(str(exc), 120)}", 1
        ) from None
    if not isinstance(doc, dict):
        raise ContainerError(f"{command} result is not a JSON object", 1)
    if doc.get("schema") != 1 or isinstance(doc.get("schema"), bool):
        raise ContainerError(f"{command} result has schema {doc.get('schema')!r}, expected 1", 1)
    if doc.get("command") != command:
        raise ContainerError(f"{command} result names command {str(doc.get('command'))[:40]!r}", 1)
    if doc.get("status") not in RESULT_STATUSES:
        raise ContainerError(f"{command} result has status {str(doc.get('status'))[:40]!r}", 1)
    if command == "probe":
        _check_probe(doc)
    return doc


def _check_probe(doc: dict[str, Any]) -> None:
    for key, kind in (("engine", dict), ("packages", dict), ("errors", list)):
        if not isinstance(doc.get(key), kind):
            raise ContainerError(f"probe result field {key!r} must be a {kind.__name__}", 1)
    if not all(isinstance(e, str) for e in doc["errors"]):
        raise ContainerError("probe result 'errors' must be a list of strings", 1)


def read_result(out_dir: Path, command: str, cap: int) -> dict[str, Any]:
    """Read out_dir/result.json without following links or blocking on FIFOs; then validate."""
    path = out_dir / RESULT_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ContainerError(
            f"{command} wrote no result ({OUT_DIR}/{RESULT_NAME} missing)", 1
        ) from None
    except OSError as exc:
        raise ContainerError(
            f"{command} result is not a readable regular file ({exc.strerror})", 1
        ) from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise ContainerError(f"{command} result is not a regular file", 1)
        data = fh.read(cap + 1)
    return parse_result(data, command, cap)


def tree_bytes(root: Path) -> int:
    """Bytes a folder costs the disk: the larger of size and allocated blocks per file, plus a
    block per entry, so neither sparse files nor a flood of empty files slip under a cap."""
    total = 0
    for dirpath, dirs, files in os.walk(root):  # os.walk does not follow links by default
        total += 512 * len(dirs)
        for name in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(dirpath, name))
                total += max(st.st_size, st.st_blocks * 512) + 512
    return total
