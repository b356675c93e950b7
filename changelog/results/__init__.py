"""The results store: benchmark and eval results per series, point, metric and run (store.py,
SQLite by default, PostgreSQL for a team), ingest of result files (ingest.py: dashboards.py,
inferencex.py) and per-point regressions against it (regressions.py). The CLI that reads and
writes it is `relpipe history` (pipeline/commands/history.py)."""
