"""Bases the hook has already found valid, remembered by content, so history is checked once.

A changelog's history is immutable: a commit's base is the previous commit's head, which the
hook checked then. When a base is not house style throughout (the real file has blank lines of
whitespace, so `proven_valid` cannot clear it), InferenceX's reading of it takes a full scan;
this cache keeps "this exact base, under this exact validator, was not rejected" as an empty
file named by the BLAKE2b digest of the validator's source and the base bytes, so the next commit
on top of it pays only for its appended entries. Only acceptance is cached (a rejected base is
scanned, and reported, every time), and a cache that cannot be read or written is simply not
used: it can make the hook faster, never change its verdict.

On the hook's path: standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path

try:  # the built-in BLAKE2 `hashlib` itself uses: `import hashlib` loads OpenSSL (~3 ms a commit)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter without it
    from hashlib import blake2b

ENV = "RELPIPE_HOOK_CACHE"  # a folder, or "off"
# The modules whose code decides a base's verdict: a change to any of them starts a new cache.
_DECIDERS = (
    *(
        f"changelog/entry/{name}.py"
        for name in ("fields", "model", "scalars", "schema", "read", "grammar", "scan")
    ),
    "validate/gate/hook.py",
    "validate/gate/history.py",
    "validate/gate/basecache.py",
)


def _folder() -> Path | None:
    chosen = os.environ.get(ENV)
    if chosen == "off":
        return None
    if chosen:
        return Path(chosen)
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "relpipe" / "changelog-bases"


def _validator_digest() -> bytes:
    package = Path(__file__).resolve().parents[2]
    digest = blake2b()
    for rel in _DECIDERS:
        try:
            digest.update((package / rel).read_bytes())
        except OSError:
            digest.update(rel.encode())
    return digest.digest()


class BaseCache:
    """`known(base)` / `remember(base)`; both silently do nothing when the folder is unusable."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else _folder()
        self._validator: bytes | None = None

    def _entry(self, base: bytes) -> Path | None:
        if self.folder is None:
            return None
        if self._validator is None:
            self._validator = _validator_digest()
        name = blake2b(self._validator + base, digest_size=32).hexdigest()
        return self.folder / name

    def known(self, base: bytes) -> bool:
        entry = self._entry(base)
        return entry is not None and entry.is_file()

    def remember(self, base: bytes) -> None:
        entry = self._entry(base)
        if entry is None:
            return
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            entry.touch()
        except OSError:
            pass  # a read-only home: the next commit scans the base again, nothing else changes
