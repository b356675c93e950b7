"""The history store's schema: one SQL file per migration, applied in name order (0001_, ...).

Each file is written in the SQL that SQLite and PostgreSQL both accept, so one schema serves both.
"""
