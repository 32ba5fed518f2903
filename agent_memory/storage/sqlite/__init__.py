"""The SQLite engine: one file, WAL, FTS5 for keywords and sqlite-vec for vectors.

database.py opens the file (pragmas, migrations behind a backup), store.py is the Store,
keyword.py and vectors.py the two rankings, portable.py the import/export statements.
"""
