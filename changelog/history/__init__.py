"""The results history: a store of benchmark and eval results per series, point, metric and image
(store.py, SQLite by default, PostgreSQL for a team), ingest of result files (ingest.py:
dashboards.py, inferencex.py) and per-point regressions against it (regressions.py)."""
