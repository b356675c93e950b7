"""Where pins live: relpipe's state (the results store's `pins` table), and, only for a team that
opts in with `[tool.relpipe] lock = "images.lock.yaml"` in `.relpipe.toml`, also a lock file in
the benchmark repository.

InferenceX has no lock file: a release changes the config lines and appends the changelog entry,
nothing else. The verified digest, platform, times, probe facts and archive of each pinned image
are state, read by `revert` (the previous image), `images archive`, the retention warning of
`relpipe nightly`, the baseline of a qualification and a release's "nothing to do". The store is
the one qualifications write their results to (`comparison.history_url`: `$RELPIPE_HISTORY`, else
`STATE/history.sqlite`). Reading never creates a store: a dry run writes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..changelog.errors import ChangelogError
from ..changelog.results import pins as table
from ..changelog.results import store
from ..core import instant
from ..core.pin import Pin
from ..images import lock
from ..images.registry import Pinned
from .comparison import history_url
from .errors import PipelineError
from .workspace import Workspace


def where(ws: Workspace | None, state: Path) -> str:
    """Where the pins are, for messages: the store, and the opt-in lock file."""
    url = history_url(state)
    shown = "relpipe's PostgreSQL store" if store.is_postgres(url) else url  # never a password
    opted = ws.lock if ws is not None else None
    return f"the pins in {shown}" + (f" and {opted}" if opted is not None else "")


def _exists(url: str) -> bool:
    return store.is_postgres(url) or Path(url.removeprefix("sqlite:///")).is_file()


def load(ws: Workspace | None, state: Path) -> dict[str, Pin]:
    """Every pin: the store's, then the opt-in lock file's (which wins for a reference it has)."""
    url = history_url(state)
    out: dict[str, Pin] = {}
    if _exists(url):
        try:
            with store.open_store(url) as db:
                out = table.load(db)
        except ChangelogError as exc:
            raise PipelineError(str(exc)) from None
    if ws is not None and ws.lock is not None and (ws.root / ws.lock).is_file():
        out.update(lock.load(ws.root / ws.lock))
    return out


def lookup(ws: Workspace | None, state: Path, ref: str) -> Pin | None:
    return lock.lookup(load(ws, state), ref)


def _save(ws: Workspace | None, state: Path, entries: Iterable[Pin]) -> None:
    rows = list(entries)
    url = history_url(state)
    if not store.is_postgres(url):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    try:
        with store.open_store(url) as db:
            table.save(db, rows)
    except ChangelogError as exc:
        raise PipelineError(str(exc)) from None


def record(
    ws: Workspace | None,
    state: Path,
    pinned: Iterable[Pinned],
    facts: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Pin]:
    """Record verified pins (and probe facts by reference, merged in): in the store, and in the
    opt-in lock file. Facts survive a re-pin only when the digest is unchanged."""
    known = load(ws, state)
    written: dict[str, Pin] = {}
    for pin in pinned:
        new = lock.entry_from_pin(pin)
        old = known.get(new.key)
        if old is not None and old.digest == new.digest:
            new = replace(new, facts=old.facts, archive=old.archive)
        more = (facts or {}).get(new.key)
        if more:
            new = replace(new, facts={**new.facts, **more})
        written[new.key] = new
    _save(ws, state, written.values())
    if ws is not None and ws.lock is not None:
        path = ws.root / ws.lock
        lock.update(path, pinned)
        for key, entry in written.items():
            if entry.facts:
                lock.merge_facts(path, key, entry.digest, entry.facts)
    return written


def set_archive(ws: Workspace | None, state: Path, ref: str, digest: str, registry: str) -> Pin:
    """Record that `ref`'s pinned `digest` is kept byte for byte on `registry`."""
    entry = lookup(ws, state, ref)
    if entry is None:
        raise PipelineError(f"{ref}: not pinned; run `relpipe images pin {ref}` first")
    if entry.digest != digest:
        raise PipelineError(f"{ref} is pinned to {entry.digest}, not the archived {digest}")
    archived = replace(
        entry, archive={"registry": registry, "archived-at": instant.text(instant.now())}
    )
    _save(ws, state, [archived])
    if ws is not None and ws.lock is not None and (ws.root / ws.lock).is_file():
        lock.set_archive(ws.root / ws.lock, ref, digest, registry)
    return archived


def state_is_inside(ws: Workspace, state: Path) -> bool:
    """Whether `state` (or the store) is under the checkout (what a dry run must not write)."""
    root = os.path.realpath(ws.root)
    url = history_url(state)
    paths = [os.path.realpath(state)]
    if not store.is_postgres(url):
        paths.append(os.path.realpath(url.removeprefix("sqlite:///")))
    return any(p == root or p.startswith(root + os.sep) for p in paths)
