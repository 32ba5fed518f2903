"""SQLAlchemy Core definitions of the plain tables, as the newest migration leaves them; a
memory's field columns are the fields table's.

The FTS5 index (``memories_fts``: content and tags, reading ``memories_fts_source``), the
vector tables and their triggers are raw SQL in the migrations and the store; SQLAlchemy
has no notion of virtual tables. The migrations do not import this module: a revision
must keep describing the schema of its own day.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, Float, ForeignKey, Integer, MetaData, Table, Text

from agent_memory.contract import fields

metadata = MetaData()

# A field's column type, by the JSON type of its value (tags: a JSON array of strings, as
# query.tag_text writes it).
_COLUMN_TYPES: dict[str, Any] = {"integer": Integer, "string": Text, "number": Float, "array": Text}


# The columns in the order the migrations made them (a test compares it with the migrated
# file); a field's column added later comes last, where ALTER TABLE ADD COLUMN puts it.
_ORDER = (
    *("id", "type", "content", "tags", "source", "scope", "base_weight", "decay_score"),
    *("access_count", "created_at", "last_accessed", "expires_at", "embedding_status"),
    *("content_hash", "keyword_text", "keyword_tags"),
)


def _columns() -> list[Column[Any]]:
    """A column per field of the fields table that a row is written with, and the
    store's own, in the table's order."""
    made = [
        Column(f.name, _COLUMN_TYPES[f.schema["type"]], nullable=f.nullable)
        for f in fields.FIELDS
        if f.column
    ]
    made += [
        Column("id", Integer, primary_key=True),
        Column("base_weight", Float, nullable=False),
        Column("embedding_status", Integer, nullable=False),  # 1: vector made from this content
        Column("content_hash", Integer, nullable=False),  # models.content_hash(content)
        # What the keyword index reads instead of content (query.indexed_text), or NULL
        Column("keyword_text", Text),
        # What the keyword index reads instead of tags (query.indexed_tags), or NULL
        Column("keyword_tags", Text),
    ]
    last = len(_ORDER)
    return sorted(made, key=lambda c: _ORDER.index(c.name) if c.name in _ORDER else last)


memories = Table("memories", metadata, *_columns())

memory_links = Table(
    "memory_links",
    metadata,
    Column("from_id", Integer, ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
    Column("to_id", Integer, ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
    Column("kind", Text, primary_key=True),
    Column("created_at", Integer, nullable=False),
)

meta = Table(
    "meta",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)

# Every earlier version of a memory (migration 0012; storage.history reads and writes it).
memory_history = Table(
    "memory_history",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("memory_id", Integer, ForeignKey("memories.id", ondelete="CASCADE"), nullable=False),
    Column("content", Text, nullable=False),
    Column("tags", Text, nullable=False),
    Column("scope", Text),
    Column("expires_at", Integer),
    Column("written_by", Text, nullable=False),
    Column("written_at", Integer, nullable=False),
    Column("replaced_at", Integer, nullable=False),
    Column("replaced_by", Text, nullable=False),
    Column("change", Text, nullable=False),
    Column("change_source", Text),
)

# OAuth's clients, rows in flight and grants (migration 0013; storage.oauth reads and writes them).
oauth_clients = Table(
    "oauth_clients",
    metadata,
    Column("client_id", Text, primary_key=True),
    Column("client", Text, nullable=False),
    Column("created_at", Integer, nullable=False),
    Column("used_at", Integer, nullable=False),
)

oauth_codes = Table(
    "oauth_codes",
    metadata,
    Column("key", Text, primary_key=True),
    Column("stage", Text, nullable=False),
    Column("client_id", Text, ForeignKey("oauth_clients.client_id", ondelete="CASCADE")),
    Column("request", Text, nullable=False),
    Column("token_name", Text),
    Column("token_digest", Text),
    Column("expires_at", Integer, nullable=False),
)

oauth_grants = Table(
    "oauth_grants",
    metadata,
    Column("id", Integer, primary_key=True),
    Column(
        "client_id",
        Text,
        ForeignKey("oauth_clients.client_id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("token_name", Text, nullable=False),
    Column("token_digest", Text, nullable=False),
    Column("resource", Text, nullable=False),
    Column("scopes", Text, nullable=False),
    Column("code_key", Text, nullable=False),
    Column("access_key", Text, nullable=False, unique=True),
    Column("access_expires_at", Integer, nullable=False),
    Column("refresh_key", Text, nullable=False, unique=True),
    Column("refresh_expires_at", Integer, nullable=False),
    Column("created_at", Integer, nullable=False),
    Column("used_at", Integer, nullable=False),
)

# Every refresh token a grant replaced, until it would have expired (migration 0014).
oauth_replaced = Table(
    "oauth_replaced",
    metadata,
    Column("key", Text, primary_key=True),
    Column("grant_id", Integer, ForeignKey("oauth_grants.id", ondelete="CASCADE"), nullable=False),
    Column("expires_at", Integer, nullable=False),
)
