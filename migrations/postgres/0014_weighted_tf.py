"""PostgreSQL: a word's bm25 frequency in one lookup.

A memory's ``tf`` map held each lexeme's hits in its content and tags together, and bm25's
frequency (a tag hit weighs bm25.TAG_WEIGHT) took a second lookup in ``tag_tf`` for every
word of a query in every row it scores. Its values are now that frequency itself (content
hits + TAG_WEIGHT x tag hits; storage/postgres/document.py); its keys, which the keyword
totals count, are the same. ``tag_tf`` keeps the tags' hits, for column filters.

Rows without tags hold the same map either way and are left as they are; the others are
tokenized again, a batch per statement (their keys do not change, so the totals log's
update trigger appends nothing). The GIN index over the tsvector is made again after the
rewrite, as in 0010: updating it row by row cost most of the revision's time.

A process still running code older than this revision writes a row with tags unweighted: its
tag hits then count 1 instead of TAG_WEIGHT until this version next writes it.

Revision ID: 0014
Revises: 0013
"""

from alembic import op

from agent_memory.storage.postgres.document import document

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

BATCH_ROWS = 10_000

_REWRITE = (
    "UPDATE memories AS m SET tf = v.tf::jsonb FROM unnest(%s::bigint[], %s::text[])"
    " AS v(id, tf) WHERE m.id = v.id"
)


def upgrade() -> None:
    op.execute("DROP INDEX memories_terms")
    conn = op.get_bind().connection.driver_connection
    last = 0
    while True:
        rows = conn.execute(
            "SELECT id, content, tags FROM memories WHERE id > %s AND tag_tf <> '{}'::jsonb"
            " ORDER BY id LIMIT %s",
            (last, BATCH_ROWS),
        ).fetchall()
        if not rows:
            break
        counts = [document(content, tags).tf for _, content, tags in rows]
        conn.execute(_REWRITE, ([row[0] for row in rows], counts))
        last = rows[-1][0]
    op.execute("CREATE INDEX memories_terms ON memories USING gin (terms) WITH (fastupdate = off)")


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrates forward only")
