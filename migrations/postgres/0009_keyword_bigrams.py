"""PostgreSQL: scripts written without spaces are indexed as bigrams, as SQLite's 0008 does.

A memory's keyword columns (doc_len, terms, tf) are FTS5's lexemes of its content, and
FTS5's index now reads each run of Chinese, Japanese, Korean, Thai, ... characters as its
bigrams (agent_memory/query/bigrams.py). The rows holding such text are tokenized again
here, a batch per statement; the keyword totals log (migrations/postgres/0007) takes in
their changed counts through its update trigger, as for any rewrite of content. Every other
row is left as it is: its lexemes are the same.

Revision ID: 0009
Revises: 0008
"""

from alembic import op

from agent_memory.query import unsegmented
from agent_memory.storage.postgres.keyword import document

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

BATCH_ROWS = 10_000

_REWRITE = (
    "UPDATE memories AS m SET doc_len = v.doc_len, terms = v.terms::tsvector, tf = v.tf::jsonb"
    " FROM unnest(%s::bigint[], %s::integer[], %s::text[], %s::text[]) AS v(id, doc_len, terms, tf)"
    " WHERE m.id = v.id"
)


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    last = 0
    while True:
        rows = conn.execute(
            "SELECT id, content FROM memories WHERE id > %s ORDER BY id LIMIT %s",
            (last, BATCH_ROWS),
        ).fetchall()
        if not rows:
            break
        ids, lengths, terms, counts = [], [], [], []
        for memory_id, content in rows:
            if unsegmented(content):
                text, length, tf, _ = document(content)  # tags: revision 0010
                ids.append(memory_id)
                lengths.append(length)
                terms.append(text)
                counts.append(tf)
        if ids:
            conn.execute(_REWRITE, (ids, lengths, terms, counts))
        last = rows[-1][0]


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrates forward only")
