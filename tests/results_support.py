"""The results-history stores the tests run against: SQLite, and a throwaway PostgreSQL cluster
(Debian's postgresql, initdb + pg_ctl on 127.0.0.1, started by relpipe.images.services).

`RELPIPE_HISTORY_PG` names a running server instead (each test gets a database of its own).
Without PostgreSQL the PostgreSQL half skips with one line; under CI=true it fails.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from corpus import unavailable

from relpipe.images import services as svc

PG_ENV = "RELPIPE_HISTORY_PG"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    if os.environ.get(PG_ENV):
        yield os.environ[PG_ENV]
        return
    state = Path(tempfile.mkdtemp(prefix="relpipe-pg-"))
    state.chmod(0o711)  # the cluster's owner (nobody, when root) must reach its data folder
    try:
        url, data = svc.start_postgres(state)
    except (svc.ServiceError, OSError) as exc:
        unavailable(f"PostgreSQL not available: {exc}")
    try:
        yield url
    finally:
        svc.stop_postgres(data)


def fresh_database(server: str) -> str:
    """A new empty database on `server`; its URL."""
    import psycopg

    name = f"h_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    base, _, _ = server.rpartition("/")
    return f"{base}/{name}"


@pytest.fixture(params=["sqlite", "postgresql"])
def history_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / ".relpipe" / "history.sqlite")
    return fresh_database(request.getfixturevalue("pg_server"))
