"""The keyword index reads scripts written without spaces as bigrams.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-05

unicode61 made a Chinese or Japanese sentence one token, so a word inside it could not be
found (agent_memory/query/bigrams.py). The index now reads the view ``memories_fts_source``:
a memory's ``keyword_text`` (its content with each run of those scripts written out as
bigrams, query.indexed_text) where it has one, else its content. Rows holding such text get
theirs here; every other row keeps NULL and is indexed exactly as before. FTS5 keeps its
content table's name in the table's definition, so the index is made again and rebuilt.

A process still running code older than this revision writes no keyword_text: a row it
inserts is indexed as before (found by its whole runs only) until its content is next
written; when it rewrites a row's content, ``memories_keyword_text_stale`` drops the
keyword_text of the old content, so that the index never keeps the old meaning.
"""

from alembic import op

from agent_memory.query import indexed_text

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

BATCH_ROWS = 10_000

STATEMENTS = (
    "CREATE VIEW memories_fts_source AS"
    " SELECT id, coalesce(keyword_text, content) AS content FROM memories",
    """
    CREATE VIRTUAL TABLE memories_fts USING fts5(
        content,
        content = 'memories_fts_source',
        content_rowid = 'id',
        tokenize = 'porter unicode61 remove_diacritics 2'
    )
    """,
    "INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')",
    """
    CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, content)
        VALUES (new.id, coalesce(new.keyword_text, new.content));
    END
    """,
    """
    CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content)
        VALUES ('delete', old.id, coalesce(old.keyword_text, old.content));
    END
    """,
    # Not for an old process's rewrite of content that left keyword_text as it was: the
    # stale trigger below first clears it, which fires this one.
    """
    CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, keyword_text ON memories
    WHEN NOT (new.keyword_text IS NOT NULL AND new.keyword_text IS old.keyword_text
              AND new.content IS NOT old.content)
    BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content)
        VALUES ('delete', old.id, coalesce(old.keyword_text, old.content));
        INSERT INTO memories_fts (rowid, content)
        VALUES (new.id, coalesce(new.keyword_text, new.content));
    END
    """,
    """
    CREATE TRIGGER memories_keyword_text_stale AFTER UPDATE OF content ON memories
    WHEN new.keyword_text IS NOT NULL AND new.keyword_text IS old.keyword_text
         AND new.content IS NOT old.content
    BEGIN
        UPDATE memories SET keyword_text = NULL WHERE id = new.id;
    END
    """,
)


def upgrade() -> None:
    for trigger in ("insert", "delete", "update"):
        op.execute(f"DROP TRIGGER memories_fts_{trigger}")
    op.execute("DROP TABLE memories_fts")
    op.execute("ALTER TABLE memories ADD COLUMN keyword_text TEXT")
    conn = op.get_bind().connection.driver_connection
    last = 0
    while True:
        rows = conn.execute(
            "SELECT id, content FROM memories WHERE id > ? ORDER BY id LIMIT ?", (last, BATCH_ROWS)
        ).fetchall()
        if not rows:
            break
        rewritten = [(indexed_text(content), memory_id) for memory_id, content in rows]
        conn.executemany(
            "UPDATE memories SET keyword_text = ? WHERE id = ?",
            [row for row in rewritten if row[0] is not None],
        )
        last = rows[-1][0]
    for statement in STATEMENTS:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
