"""The history store: SQLite (standard library) by default, PostgreSQL for a team's shared history.

Both run the same schema from `migrations/*.sql`, applied in name order and recorded in
`schema_migrations`. A sample's primary key is a hash of its identity (records.Sample.id), and
every write is `INSERT ... ON CONFLICT (id) DO NOTHING` in one transaction, so re-ingesting a file
adds nothing and concurrent writers lose nothing: SQLite serialises them with its write lock (WAL,
busy timeout), PostgreSQL with row-level uniqueness; migrations run under an exclusive lock
(`BEGIN IMMEDIATE`, or a PostgreSQL advisory lock).

Where: `--history URL_OR_PATH`, else `$RELPIPE_HISTORY`, else `REPO/.relpipe/history.sqlite`.
A `postgresql://` URL needs the `history` extra (psycopg 3).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ...core import collector
from ...core.errors import require
from ...core.redact import redact
from ...core.state import trusted
from ..errors import ChangelogError
from .records import (
    AMBIGUOUS,
    FAILED,
    OK,
    WORDS,
    Image,
    Measurement,
    Sample,
)

HISTORY_ENV = "RELPIPE_HISTORY"
DEFAULT_PATH = Path(".relpipe") / "history.sqlite"
MIGRATIONS = Path(__file__).parent / "migrations"
COLUMNS = (
    "id series point metric kind better unit image tag digest engine_version engine_commit run seq "
    "status value se threshold note source"
).split()
PG_LOCK_ID = 0x72656C70  # "relp": the advisory lock migrations take on PostgreSQL
SQLITE_BUSY_S = 60.0


def locate(url: str | None, repo: Path | None = None) -> str:
    """The store the user named (`--history`, then $RELPIPE_HISTORY), else the repo's default."""
    chosen = url or os.environ.get(HISTORY_ENV)
    if chosen:
        return chosen
    root = repo or Path.cwd()
    # In the work tree: only where this user put it (no link, not tracked by git; core.state).
    return str(trusted(root / DEFAULT_PATH, root=root))


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


@dataclass(frozen=True, kw_only=True)
class StoredSample:
    """A row as read back: the sample plus its stored id."""

    id: str
    sample: Sample


@dataclass(frozen=True, kw_only=True)
class SeriesInfo:
    series: str
    samples: int
    points: int
    metrics: int
    runs: int
    images: int
    first_seq: int  # run times, ms since the epoch
    last_seq: int


class Store:
    """One connection to the history; use as a context manager (`with open_store(url) as s`)."""

    def __init__(self, conn: Any, *, postgres: bool, where: str) -> None:
        self.conn = conn
        self.postgres = postgres
        self.where = where

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    def _sql(self, text: str) -> str:
        return text.replace("?", "%s") if self.postgres else text

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        # Both connections are in autocommit mode; the transaction is spelled out.
        cur = self.conn.cursor()
        try:
            cur.execute("BEGIN" if self.postgres else "BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")
        finally:
            cur.close()

    def migrate(self) -> None:
        """Apply the migrations this store has not seen yet, under an exclusive lock."""
        with self._transaction() as cur:
            if self.postgres:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (PG_LOCK_ID,))
            cur.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY)")
            cur.execute("SELECT name FROM schema_migrations")
            done = {row[0] for row in cur.fetchall()}
            for path in sorted(MIGRATIONS.glob("*.sql")):
                if path.name in done:
                    continue
                for statement in path.read_text(encoding="utf-8").split(";"):
                    body = "\n".join(
                        line for line in statement.splitlines() if not line.startswith("--")
                    )
                    if body.strip():
                        cur.execute(body)
                cur.execute(self._sql("INSERT INTO schema_migrations VALUES (?)"), (path.name,))

    def check_schema(self) -> None:
        """Refuse a store holding schema objects relpipe never creates: a trigger or a rule can
        drop or rewrite each ingested row behind the summary's back, a view can stand in for a
        table (issue 34.1). One line naming the first, exit 2. (A team's PostgreSQL database may
        hold views of its own: only one on relpipe's tables or named like them is refused.)"""
        if self.postgres:
            sql = (
                "SELECT 'trigger', t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "WHERE NOT t.tgisinternal AND c.relname IN ('results', 'schema_migrations') "
                "UNION ALL SELECT 'rule', rulename FROM pg_rules "
                "WHERE tablename IN ('results', 'schema_migrations') "
                "UNION ALL SELECT 'view', viewname FROM pg_views "
                "WHERE viewname IN ('results', 'schema_migrations')"
            )
        else:
            sql = "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view')"
        with self._transaction() as cur:
            cur.execute(sql)
            found = cur.fetchone()
        if found is not None:
            raise ChangelogError(
                f"the results store {self.where} holds a {found[0]} relpipe did not create "
                f"({str(found[1])[:60]!r}); it is not relpipe's store as written: remove it, or "
                "name another with --history",
                exit_code=2,
            )

    def add(self, samples: Iterable[Sample]) -> int:
        """Store `samples` in one transaction; returns how many were new."""
        rows = [_row(s) for s in samples]
        if not rows:
            return 0
        marks = ", ".join("?" * len(COLUMNS))
        sql = self._sql(
            f"INSERT INTO results ({', '.join(COLUMNS)}) VALUES ({marks}) "
            "ON CONFLICT (id) DO NOTHING"
        )
        with self._transaction() as cur:
            cur.executemany(sql, rows)
            return int(cur.rowcount)

    def count(self) -> int:
        cur = self.conn.cursor()
        try:
            return _count(cur)
        finally:
            cur.close()

    def samples(self, *, series: Sequence[str] = ()) -> list[Sample]:
        """Every stored sample (of `series` if given), ordered by series, point, metric, seq, id."""
        where = ""
        params: tuple[str, ...] = ()
        if series:
            where = f" WHERE series IN ({', '.join('?' * len(series))})"
            params = tuple(series)
        sql = self._sql(
            f"SELECT {', '.join(COLUMNS)} FROM results{where} "
            "ORDER BY series, point, metric, seq, id"
        )
        cur = self.conn.cursor()
        try:
            cur.execute(sql, params)
            return [_sample(row) for row in cur.fetchall()]
        finally:
            cur.close()

    def series(self) -> list[SeriesInfo]:
        """What is stored, per series: samples, points, metrics, runs, first and last run time."""
        sql = (
            "SELECT series, COUNT(*), COUNT(DISTINCT point), COUNT(DISTINCT metric), "
            "COUNT(DISTINCT run), COUNT(DISTINCT image), MIN(seq), MAX(seq) "
            "FROM results GROUP BY series ORDER BY series"
        )
        cur = self.conn.cursor()
        try:
            cur.execute(sql)
            return [
                SeriesInfo(
                    series=r[0],
                    samples=int(r[1]),
                    points=int(r[2]),
                    metrics=int(r[3]),
                    runs=int(r[4]),
                    images=int(r[5]),
                    first_seq=int(r[6]),
                    last_seq=int(r[7]),
                )
                for r in cur.fetchall()
            ]
        finally:
            cur.close()

    def measurements(self, *, series: Sequence[str] = ()) -> list[Measurement]:
        """The ok and failed samples as plain rows, in no order (what `regressions` reads)."""
        where = f"status IN ('{WORDS[OK]}', '{WORDS[FAILED]}')"
        if series:
            where += f" AND series IN ({', '.join('?' * len(series))})"
        # the stored word selected as its Status value: no Python pass over 100,000 rows
        columns = ", ".join(_STATUS_VALUE if f == "status" else f for f in Measurement._fields)
        cur = self.conn.cursor()
        try:
            # unordered: `regressions` orders by (seq, run) in Python, the same on both databases
            sql = f"SELECT {columns} FROM results WHERE {where}"
            cur.execute(self._sql(sql), tuple(series))
            # made as `Measurement._make` makes them, without its Python call per row; tuples of
            # strings and numbers: the collector would only walk them
            with collector.paused():
                return list(map(_MEASUREMENT, cur.fetchall()))
        finally:
            cur.close()


_STATUS_VALUE = (
    "CASE status "
    + " ".join(f"WHEN '{WORDS[s]}' THEN '{s.value}'" for s in (OK, FAILED))
    + " END AS status"
)
_STATUS_OF = {word: status for status, word in WORDS.items()}
_MEASUREMENT = partial(tuple.__new__, Measurement)


def _count(cur: Any) -> int:
    cur.execute("SELECT COUNT(*) FROM results")
    return int(cur.fetchone()[0])


def _row(s: Sample) -> tuple[object, ...]:
    img = s.image
    return (
        s.id,
        s.series,
        s.point,
        s.metric,
        s.kind,
        s.better,
        s.unit,
        img.ref,
        img.tag,
        img.digest,
        img.engine_version,
        img.engine_commit,
        s.run,
        s.seq,
        WORDS[s.status],
        s.value,
        s.se,
        s.threshold,
        s.note,
        s.source,
    )  # fmt: skip - one row in COLUMNS order reads best as one block


def _sample(row: Sequence[Any]) -> Sample:
    f = dict(zip(COLUMNS, row, strict=True))
    image = Image(
        ref=f["image"],
        tag=f["tag"],
        digest=f["digest"],
        engine_version=f["engine_version"],
        engine_commit=f["engine_commit"],
    )
    return Sample(
        series=f["series"],
        point=f["point"],
        metric=f["metric"],
        kind=f["kind"],
        better=f["better"],
        unit=f["unit"],
        image=image,
        run=f["run"],
        seq=int(f["seq"]),
        status=_STATUS_OF.get(f["status"], AMBIGUOUS),  # a word it does not know: never compared
        value=f["value"],
        se=f["se"],
        threshold=f["threshold"],
        note=f["note"],
        source=f["source"],
    )


def open_store(url: str, *, create: bool = True) -> Store:
    """Open (migrating as needed) the store at `url`: a path or a PostgreSQL URL. A SQLite store
    that does not exist is created only with `create` (ingest's job); otherwise exit 2."""
    if not create and not is_postgres(url) and not Path(url.removeprefix("sqlite:///")).is_file():
        raise ChangelogError(
            f"no results store at {redact(url)}; create it with `relpipe history ingest --history "
            f"{redact(url)} FILE...`, or name another with --history or ${HISTORY_ENV}",
            exit_code=2,
        )
    if is_postgres(url):
        psycopg = require("psycopg", "history")
        try:
            conn = psycopg.connect(url, connect_timeout=10, autocommit=True)
        except psycopg.Error as exc:
            raise ChangelogError(
                # the driver's message may echo the URL whole (a malformed one: issue 34.2)
                f"cannot connect to the history database: {redact(str(exc).splitlines()[0])}; "
                "check the --history URL or $RELPIPE_HISTORY"
            ) from None
        store = Store(conn, postgres=True, where=redact(url))
    else:
        path = Path(url.removeprefix("sqlite:///"))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, timeout=SQLITE_BUSY_S, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        except (OSError, sqlite3.Error) as exc:
            raise ChangelogError(
                f"cannot open the history store {redact(str(path))}: {exc}; check the path"
            ) from None
        store = Store(conn, postgres=False, where=redact(str(path)))
    store.check_schema()
    store.migrate()
    return store
