"""PostgreSQL, memory hygiene: the content hash is of the whitespace-normalised
text, as SQLite's 0011 makes it.

A store whose content equals an existing memory's once whitespace is normalised, with the
same type and scope, is an exact duplicate (decisions, "Content"), looked up by
memories.content_hash (agent_memory.contract.models.content_hash). Every row is hashed again.

Revision ID: 0012
Revises: 0011
"""

from alembic import op

from agent_memory.contract.models import content_hash

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

BATCH_ROWS = 10_000

_REHASH = (
    "UPDATE memories AS m SET content_hash = v.h FROM unnest(%s::bigint[], %s::bigint[])"
    " AS v(id, h) WHERE m.id = v.id AND m.content_hash <> v.h"
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
        conn.execute(_REHASH, ([r[0] for r in rows], [content_hash(r[1]) for r in rows]))
        last = rows[-1][0]


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrates forward only")
