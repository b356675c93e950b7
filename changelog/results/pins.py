"""The pins table of the results store: each image reference relpipe pinned, with its verified
digest, times, probe facts and archive (migration 0003_pins.sql).

Rows are plain values (`PinRow`); the pipeline turns them into the images layer's records. A
write replaces a reference's row whole (`save`, one transaction, `ON CONFLICT ... DO UPDATE` on
both databases); times are stored as `core.instant` writes them and read back through it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core import instant, jsonload
from ..errors import ChangelogError
from .store import Store

COLUMNS = (
    "ref digest platform platform_digest media_type resolved_at created facts archive_registry "
    "archived_at"
).split()


@dataclass(frozen=True, kw_only=True)
class PinRow:
    ref: str  # registry/repository:tag (or @digest), as images.lock keys it
    digest: str
    platform: str | None
    platform_digest: str
    media_type: str
    resolved_at: str
    created: str | None
    facts: Mapping[str, Any] = field(default_factory=dict)
    archive_registry: str | None = None
    archived_at: str | None = None


def _stored_time(value: str | None, what: str, ref: str) -> str | None:
    if value is None:
        return None
    try:
        return instant.normalise(value)
    except instant.InstantError:
        raise ChangelogError(f"pin {ref}: {what} {value!r} is not a time with a zone") from None


def save(store: Store, rows: Iterable[PinRow]) -> int:
    """Insert or replace the rows of their references; returns how many were written."""
    values = [
        (
            r.ref,
            r.digest,
            r.platform,
            r.platform_digest,
            r.media_type,
            _stored_time(r.resolved_at, "resolved-at", r.ref),
            _stored_time(r.created, "created", r.ref),
            json.dumps(dict(r.facts), sort_keys=True),
            r.archive_registry,
            _stored_time(r.archived_at, "archived-at", r.ref),
        )
        for r in rows
    ]
    if not values:
        return 0
    updates = ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[1:])
    sql = store._sql(
        f"INSERT INTO pins ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))}) "
        f"ON CONFLICT (ref) DO UPDATE SET {updates}"
    )
    with store._transaction() as cur:
        cur.executemany(sql, values)
    return len(values)


def load(store: Store) -> dict[str, PinRow]:
    """Every pin, by reference."""
    cur = store.conn.cursor()
    try:
        cur.execute(f"SELECT {', '.join(COLUMNS)} FROM pins ORDER BY ref")
        rows = cur.fetchall()
    finally:
        cur.close()
    out: dict[str, PinRow] = {}
    for row in rows:
        f = dict(zip(COLUMNS, row, strict=True))
        try:
            facts = jsonload.loads(f["facts"] or "{}")
        except ValueError:
            facts = None
        if not isinstance(facts, dict):
            raise ChangelogError(f"{store.where}: pin {f['ref']}: facts are not a JSON object")
        out[f["ref"]] = PinRow(**{**f, "facts": facts})
    return out
