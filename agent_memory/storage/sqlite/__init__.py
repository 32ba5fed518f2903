"""The SQLite engine: one file, WAL, FTS5 for keywords and sqlite-vec for vectors.

database.py opens the file (pragmas, migrations behind a backup), store.py is the Store,
keyword.py and vectors.py the two rankings, portable.py the import/export statements.
"""

# How long a connection waits for another's lock (BEGIN IMMEDIATE, a migration, the
# pre-migration copy): long enough that a writer waiting behind another process's migration
# or import waits instead of reporting "database is locked".
BUSY_TIMEOUT_MS = 30_000
