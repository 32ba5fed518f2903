"""The keyword index holds a memory's tags as well as its content.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-06

``database`` did not find a memory tagged ``database`` whose content does not say it. The
index gets a second column, ``tags``: the tags' JSON text (query.tag_text: quotes,
brackets and commas are no token characters, so it holds the tags' own tokens), or, where
the tags hold a script written without spaces, ``keyword_tags``, that text with those runs
as bigrams (query.indexed_tags), as ``keyword_text`` is for content. A second column, not
tags appended to content: bm25 can then weigh a tag hit apart from a content hit
(storage/sqlite/keyword.py), and ``content:word`` keeps its meaning. Rows whose tags hold
such scripts get their keyword_tags here; the index is made again and rebuilt in one
statement.

A process still running code older than this revision writes no keyword_tags: a row it
stores is indexed from its tags' JSON text (their whole runs only, as before 0008 for
content) until its tags are next written; when it rewrites a row's tags,
``memories_keyword_tags_stale`` drops the keyword_tags of the old tags, as 0008's trigger
does for content.
"""

from alembic import op

from agent_memory.query import indexed_text, unsegmented

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

BATCH_ROWS = 10_000


def _tags_text(row: str) -> str:
    """What the index reads for the tags of ``row`` (``new`` or ``old`` in a trigger)."""
    return f"coalesce({row}.keyword_tags, {row}.tags)"


_CONTENT_STALE = (
    "new.keyword_text IS NOT NULL AND new.keyword_text IS old.keyword_text"
    " AND new.content IS NOT old.content"
)
_TAGS_STALE = (
    "new.keyword_tags IS NOT NULL AND new.keyword_tags IS old.keyword_tags"
    " AND new.tags IS NOT old.tags"
)
_OLD = f"old.id, coalesce(old.keyword_text, old.content), {_tags_text('old')}"
_NEW = f"new.id, coalesce(new.keyword_text, new.content), {_tags_text('new')}"

STATEMENTS = (
    "CREATE VIEW memories_fts_source AS"
    " SELECT id, coalesce(keyword_text, content) AS content,"
    " coalesce(keyword_tags, tags) AS tags FROM memories",
    """
    CREATE VIRTUAL TABLE memories_fts USING fts5(
        content,
        tags,
        content = 'memories_fts_source',
        content_rowid = 'id',
        tokenize = 'porter unicode61 remove_diacritics 2'
    )
    """,
    "INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')",
    f"""
    CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, content, tags) VALUES ({_NEW});
    END
    """,
    f"""
    CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content, tags) VALUES ('delete', {_OLD});
    END
    """,
    # Not for an old process's rewrite of content or tags that left their keyword text as it
    # was: a stale trigger below first clears it, which fires this one.
    f"""
    CREATE TRIGGER memories_fts_update
    AFTER UPDATE OF content, keyword_text, tags, keyword_tags ON memories
    WHEN NOT ({_CONTENT_STALE}) AND NOT ({_TAGS_STALE})
    BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content, tags) VALUES ('delete', {_OLD});
        INSERT INTO memories_fts (rowid, content, tags) VALUES ({_NEW});
    END
    """,
    f"""
    CREATE TRIGGER memories_keyword_tags_stale AFTER UPDATE OF tags ON memories
    WHEN {_TAGS_STALE}
    BEGIN
        UPDATE memories SET keyword_tags = NULL WHERE id = new.id;
    END
    """,
)


def upgrade() -> None:
    for trigger in ("insert", "delete", "update"):
        op.execute(f"DROP TRIGGER memories_fts_{trigger}")
    op.execute("DROP TABLE memories_fts")
    op.execute("DROP VIEW memories_fts_source")
    op.execute("ALTER TABLE memories ADD COLUMN keyword_tags TEXT")
    conn = op.get_bind().connection.driver_connection
    last = 0
    while True:
        rows = conn.execute(
            "SELECT id, tags FROM memories WHERE id > ? ORDER BY id LIMIT ?", (last, BATCH_ROWS)
        ).fetchall()
        if not rows:
            break
        conn.executemany(
            "UPDATE memories SET keyword_tags = ? WHERE id = ?",
            [
                (indexed_text(tags), memory_id)
                for memory_id, tags in rows
                if unsegmented(tags)  # the stored JSON text, its runs as bigrams
            ],
        )
        last = rows[-1][0]
    for statement in STATEMENTS:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
