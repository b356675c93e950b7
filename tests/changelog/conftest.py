"""Fixtures of the changelog tests: the results-history stores (SQLite, PostgreSQL)."""

from results_support import history_url, pg_server  # noqa: F401 - fixtures
