"""What both engines must do alike, run on SQLite and on PostgreSQL (the suite starts a
PostgreSQL of its own: tests/support/pg_fixtures.py)."""
