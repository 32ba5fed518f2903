"""Many real processes write one file at once, and nothing is lost or doubled.

Five ``agent-memory serve`` processes (each driven by the official MCP client) and one
``agent-memory serve-rest`` daemon, all with a sweep every second, run a seeded mix of
store, update, link and forget at the same time. Every acknowledged write must then be in
the file exactly once with its last acknowledged content, every acknowledged forget gone,
no client may have seen an error, and SQLite's and FTS5's integrity checks must pass.
"""

from __future__ import annotations

import sqlean

from tests.support.many_writers import write_at_once


def test_six_processes_write_at_once_and_nothing_is_lost(db_path):
    done = write_at_once(str(db_path))
    expected, forgotten, links = done.contents, done.forgotten, done.links

    conn = sqlean.connect(str(db_path))
    try:
        rows = dict(conn.execute("SELECT id, content FROM memories").fetchall())
        assert rows == expected  # every acknowledged write once, with its last content
        assert not forgotten & set(rows)
        stored_links = set(conn.execute("SELECT from_id, to_id, kind FROM memory_links"))
        assert links <= stored_links
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
        for memory_id, content in list(expected.items())[:: max(1, len(expected) // 40)]:
            word = content.split()[0]  # the worker's name: found through the index
            hits = conn.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (f'"{word}"',)
            ).fetchall()
            assert (memory_id,) in hits
    finally:
        conn.close()
