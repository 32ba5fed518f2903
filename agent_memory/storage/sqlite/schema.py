"""SQLAlchemy Core definitions of the plain tables, as the newest migration leaves them.

The FTS5 index (``memories_fts``: content and tags, reading ``memories_fts_source``), the
vector tables and their triggers are raw SQL in the migrations and the store; SQLAlchemy
has no notion of virtual tables. The migrations do not import this module: a revision
must keep describing the schema of its own day.
"""

from __future__ import annotations

from sqlalchemy import Column, Float, ForeignKey, Integer, MetaData, Table, Text

metadata = MetaData()

memories = Table(
    "memories",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("type", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("tags", Text, nullable=False),  # a JSON array of strings (query.tag_text)
    Column("source", Text),
    Column("scope", Text),
    Column("base_weight", Float, nullable=False),
    Column("decay_score", Float, nullable=False),
    Column("access_count", Integer, nullable=False),
    Column("created_at", Integer, nullable=False),
    Column("last_accessed", Integer, nullable=False),
    Column("expires_at", Integer),
    Column("embedding_status", Integer, nullable=False),  # 1: vector made from this content
    Column("content_hash", Integer, nullable=False),  # models.content_hash(content)
    # What the keyword index reads instead of content (query.indexed_text), or NULL
    Column("keyword_text", Text),
    # What the keyword index reads instead of tags (query.indexed_tags), or NULL
    Column("keyword_tags", Text),
)

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
