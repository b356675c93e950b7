"""The pins table of the results store: each image reference relpipe pinned, with its verified
digest, times, probe facts and archive (migration 0003_pins.sql).

A row is a `core.pin.Pin` (the one record of a pinned image, the lock file's too); its archive is
two columns. A write replaces a reference's row whole (`save`, one transaction,
`ON CONFLICT ... DO UPDATE` on both databases); times are stored as `core.instant` writes them
and read back through it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from ...core import instant, jsonload
from ...core.pin import Pin
from ..errors import ChangelogError
from .store import Store

COLUMNS = (
    "ref digest platform platform_digest media_type resolved_at created facts archive_registry "
    "archived_at"
).split()


def _stored_time(value: str | None, what: str, ref: str) -> str | None:
    if value is None:
        return None
    try:
        return instant.normalise(value)
    except instant.InstantError:
        raise ChangelogError(f"pin {ref}: {what} {value!r} is not a time with a zone") from None


def save(store: Store, pins: Iterable[Pin]) -> int:
    """Insert or replace the rows of their references; returns how many were written."""
    values = [
        (
            r.key,
            r.digest,
            r.platform,
            r.platform_digest,
            r.media_type,
            _stored_time(r.resolved_at, "resolved-at", r.key),
            _stored_time(r.created, "created", r.key),
            json.dumps(dict(r.facts), sort_keys=True),
            (r.archive or {}).get("registry"),
            _stored_time((r.archive or {}).get("archived-at"), "archived-at", r.key),
        )
        for r in pins
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


def load(store: Store) -> dict[str, Pin]:
    """Every pin, by reference."""
    cur = store.conn.cursor()
    try:
        cur.execute(f"SELECT {', '.join(COLUMNS)} FROM pins ORDER BY ref")
        rows = cur.fetchall()
    finally:
        cur.close()
    out: dict[str, Pin] = {}
    for row in rows:
        f = dict(zip(COLUMNS, row, strict=True))
        try:
            facts = jsonload.loads(f["facts"] or "{}")
        except ValueError:
            facts = None
        if not isinstance(facts, dict):
            raise ChangelogError(f"{store.where}: pin {f['ref']}: facts are not a JSON object")
        registry, archived_at = f.pop("archive_registry"), f.pop("archived_at")
        archive = {"registry": registry, "archived-at": archived_at} if registry else None
        ref = f.pop("ref")
        out[ref] = Pin(key=ref, **{**f, "facts": facts}, archive=archive)
    return out
