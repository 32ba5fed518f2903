"""Memories, their FTS5 keyword index with its sync triggers, and the meta table.

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE memories (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,
            type          TEXT    NOT NULL CHECK (type IN ('DECISION', 'PATTERN', 'ERROR',
                                                           'TODO', 'ARCHITECTURE', 'CONSTRAINT')),
            content       TEXT    NOT NULL,
            tags          TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(tags)),
            source        TEXT,
            scope         TEXT,
            base_weight   REAL    NOT NULL,
            decay_score   REAL    NOT NULL DEFAULT 1.0,
            access_count  INTEGER NOT NULL DEFAULT 0,
            created_at    INTEGER NOT NULL,
            last_accessed INTEGER NOT NULL,
            expires_at    INTEGER
        )
        """
    )
    op.execute("CREATE INDEX memories_created ON memories (created_at DESC, id DESC)")
    op.execute("CREATE INDEX memories_type ON memories (type, created_at DESC, id DESC)")
    op.execute("CREATE INDEX memories_scope ON memories (scope, created_at DESC, id DESC)")
    op.execute(
        "CREATE INDEX memories_expires ON memories (expires_at) WHERE expires_at IS NOT NULL"
    )
    op.execute(
        """
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            content,
            content = 'memories',
            content_rowid = 'id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        )
        """
    )
    op.execute(
        """
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts (rowid, content) VALUES (new.id, new.content);
        END
        """
    )
    op.execute(
        """
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, content)
            VALUES ('delete', old.id, old.content);
        END
        """
    )
    op.execute(
        """
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, content)
            VALUES ('delete', old.id, old.content);
            INSERT INTO memories_fts (rowid, content) VALUES (new.id, new.content);
        END
        """
    )
    op.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


def downgrade() -> None:
    raise NotImplementedError("agent-memory migrations are forward-only; restore a backup instead")
