"""Bases the hook has already found valid, remembered by content, so history is checked once.

A changelog's history is immutable: a commit's base is the previous commit's head, which the
hook checked then. When a base is not house style throughout (the real file has blank lines of
whitespace, so `proven_valid` cannot clear it), InferenceX's reading of it takes a full scan;
this cache keeps "this exact base, under this exact validator, was not rejected" as an empty
file named by the BLAKE2b digest of the validator's source and the base bytes, so the next commit
on top of it pays only for its appended entries. Only acceptance is cached (a rejected base is
scanned, and reported, every time), and a cache that cannot be read or written is simply not
used: it can make the hook faster, never change its verdict.

The same folder keeps the top-level keys of master configs by content (the hook resolves config
keys against them on every commit; the masters rarely change): a checksum line and the keys.

On the hook's path: standard library only.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook does not import typing
if TYPE_CHECKING:
    from collections.abc import Sequence

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
    "validate/gate/alignment.py",
    "validate/gate/basecache.py",
    "changelog/configs/load.py",  # the master keys
)
_KEYS = b"master-keys\0"  # the name space of master-key entries


def _folder() -> str | None:
    chosen = os.environ.get(ENV)
    if chosen == "off":
        return None
    if chosen:
        return chosen
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "relpipe", "changelog-bases")


def _validator_digest() -> bytes:
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    digest = blake2b()
    for rel in _DECIDERS:
        try:
            with open(os.path.join(package, rel), "rb") as handle:
                digest.update(handle.read())
        except OSError:
            digest.update(rel.encode())
    return digest.digest()


class BaseCache:
    """`known(base)` / `remember(base)`, and the top-level keys of master configs by content
    (`master_keys` / `remember_master_keys`); all do nothing when the folder is unusable."""

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self.folder = os.fspath(folder) if folder is not None else _folder()
        self._validator: bytes | None = None

    def _entry(self, base: bytes, space: bytes = b"") -> str | None:
        if self.folder is None:
            return None
        if self._validator is None:
            self._validator = _validator_digest()
        name = blake2b(self._validator + space + base, digest_size=32).hexdigest()
        return os.path.join(self.folder, name)

    def master_keys(self, master: bytes) -> tuple[str, ...] | None:
        """The top-level keys remembered for this master's exact bytes (None: not known).

        An entry is a checksum line and the keys, one per line; one that does not match its
        checksum (torn, edited) is not used."""
        entry = self._entry(master, _KEYS)
        try:
            with open(entry or "", "rb") as handle:
                checksum, _, body = handle.read().partition(b"\n")
        except OSError:
            return None
        if checksum != blake2b(body, digest_size=16).hexdigest().encode():
            return None
        return tuple(body.decode("utf-8").split("\n")) if body else ()

    def remember_master_keys(self, master: bytes, keys: Sequence[str]) -> None:
        entry = self._entry(master, _KEYS)
        if entry is None or any("\n" in key for key in keys):
            return  # a key with a line break (a quoted YAML key) is not worth a format for it
        from ...core.files import (
            write_atomic,  # deferred: not on the commit hook's usual path (start-up)
        )

        body = "\n".join(keys).encode("utf-8")
        checksum = blake2b(body, digest_size=16).hexdigest().encode()
        try:
            os.makedirs(os.path.dirname(entry), exist_ok=True)
            write_atomic(entry, checksum + b"\n" + body)
        except OSError:
            pass  # as in `remember`: no cache, same verdicts

    def known(self, base: bytes) -> bool:
        entry = self._entry(base)
        return entry is not None and os.path.isfile(entry)

    def remember(self, base: bytes) -> None:
        entry = self._entry(base)
        if entry is None:
            return
        try:
            os.makedirs(os.path.dirname(entry), exist_ok=True)
            with open(entry, "ab"):
                pass
        except OSError:
            pass  # a read-only home: the next commit scans the base again, nothing else changes
