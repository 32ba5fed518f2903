"""PostgreSQL: a memory's tags are searched as well as its content, as SQLite's 0009 does.

FTS5's index has a second column, the tags; here a memory's keyword columns take in the
tags' lexemes (storage/postgres/keyword.py): the tsvector after the content's, ``tf`` and
``doc_len`` counting both, and ``tag_tf``, new, counting the tags alone (bm25 weighs a tag
hit apart, bm25.TAG_WEIGHT). The rows that have tags are tokenized again here, a batch per
statement; the keyword totals log (migrations/postgres/0007) takes in their changed counts
through its update trigger, as for any rewrite. A row without tags keeps its columns.

The GIN index over the tsvector is made again after the rewrite: updating it row by row
(fastupdate is off) cost most of the revision's time.

A process still running code older than this revision writes no tags into these columns:
a row it stores or retags is found by its tags once this version next writes it.

Revision ID: 0010
Revises: 0009
"""

from alembic import op

from agent_memory.storage.postgres.keyword import document

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

BATCH_ROWS = 10_000

_REWRITE = (
    "UPDATE memories AS m SET terms = v.terms::tsvector, doc_len = v.doc_len, tf = v.tf::jsonb,"
    " tag_tf = v.tag_tf::jsonb FROM unnest(%s::bigint[], %s::text[], %s::integer[], %s::text[],"
    " %s::text[]) AS v(id, terms, doc_len, tf, tag_tf) WHERE m.id = v.id"
)


def upgrade() -> None:
    op.execute("ALTER TABLE memories ADD COLUMN tag_tf jsonb NOT NULL DEFAULT '{}'")
    op.execute("DROP INDEX memories_terms")
    conn = op.get_bind().connection.driver_connection
    last = 0
    while True:
        rows = conn.execute(
            "SELECT id, content, tags FROM memories WHERE id > %s AND tags <> '[]'::jsonb"
            " ORDER BY id LIMIT %s",
            (last, BATCH_ROWS),
        ).fetchall()
        if not rows:
            break
        found = [document(content, tags) for _, content, tags in rows]
        conn.execute(
            _REWRITE,
            ([row[0] for row in rows], *(list(column) for column in zip(*found, strict=True))),
        )
        last = rows[-1][0]
    op.execute("CREATE INDEX memories_terms ON memories USING gin (terms) WITH (fastupdate = off)")


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrates forward only")
