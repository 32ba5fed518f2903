"""History and as-of: every earlier version of a memory, in memory_history.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-05

An update (and a store that duplicates a memory, which merges into it) first copies the
memory as it stood into a row here: its content, tags, scope and expiry, who wrote that
version and when, and when and by whom it was replaced (``change``: update or duplicate;
``change_source``: the source a duplicate store sent). A row goes with its memory (ON
DELETE CASCADE): forgetting a memory, or the sweep deleting an expired one, deletes its
history. Existing memories start with no history.
"""

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE memory_history (
            id            INTEGER PRIMARY KEY,
            memory_id     INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
            content       TEXT    NOT NULL,
            tags          TEXT    NOT NULL,
            scope         TEXT,
            expires_at    INTEGER,
            written_by    TEXT    NOT NULL,
            written_at    INTEGER NOT NULL,
            replaced_at   INTEGER NOT NULL,
            replaced_by   TEXT    NOT NULL,
            change        TEXT    NOT NULL CHECK (change IN ('update', 'duplicate')),
            change_source TEXT
        )
        """
    )
    op.execute("CREATE INDEX memory_history_memory ON memory_history (memory_id, replaced_at)")
    op.execute("CREATE INDEX memory_history_replaced ON memory_history (replaced_at)")


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
