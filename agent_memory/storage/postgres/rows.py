"""How the PostgreSQL store's statements read and write memories: the columns, the
statements, the filters (shared by the store and the export, so that a memory has one shape
wherever it is read).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent_memory.contract import fields
from agent_memory.contract.models import Filters
from agent_memory.contract.vocabulary import SQLITE_INT_MAX
from agent_memory.storage.base import MEMORY_COLUMNS
from agent_memory.storage.postgres import keyword

EXPORT_BATCH_ROWS = 1_000

SELECT = ", ".join(MEMORY_COLUMNS)
# A new row's columns: the fields table's, then the store's own (keyword.Document's last,
# in its order), each with the cast its value needs.
_CASTS = {"tags": "::jsonb", "terms": "::tsvector", "tf": "::jsonb", "tag_tf": "::jsonb"}
_OWN_COLUMNS = ("base_weight", "embedding_status", "content_hash", "terms", "doc_len", "tf")
_ALL_COLUMNS = (*fields.column_names(), *_OWN_COLUMNS, "tag_tf")
ROW_COLUMNS = ", ".join(_ALL_COLUMNS)
ROW_VALUES = ", ".join(f"%s{_CASTS.get(name, '')}" for name in _ALL_COLUMNS)
INSERT = f"INSERT INTO memories ({ROW_COLUMNS}) VALUES ({ROW_VALUES}) RETURNING id"
# The keyword columns an update writes (keyword.Document, in its order), and what it reads
# to make them when only the content or only the tags change (locked until it writes).
KEYWORD_SETS = ("terms = %s::tsvector", "doc_len = %s", "tf = %s::jsonb", "tag_tf = %s::jsonb")
CONTENT_AND_TAGS = "SELECT content, tags FROM memories WHERE id = %s FOR UPDATE"
INSERT_WITH_ID = f"INSERT INTO memories (id, {ROW_COLUMNS}) VALUES (%s, {ROW_VALUES})"
# A use: access_count + 1, saturating at the largest 64-bit integer (as on SQLite).
USED = f"access_count = least(access_count, {SQLITE_INT_MAX - 1}) + 1"
# Uses of search results, {id: (uses, at)} as three arrays; the rows are locked first in id
# order, so that two processes bumping the same memories never deadlock.
BUMP_LOCK = "SELECT id FROM memories WHERE id = ANY(%s) ORDER BY id FOR UPDATE"
BUMP = f"""UPDATE memories AS m SET last_accessed = greatest(m.last_accessed, u.at),
  access_count = least(m.access_count, {SQLITE_INT_MAX} - u.n) + u.n
FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS u(id, n, at) WHERE m.id = u.id"""
GET = f"SELECT {SELECT}, access_count, embedding_status FROM memories WHERE id = %s"
RECENT = f"""
SELECT * FROM (
  SELECT {SELECT} FROM memories AS m
  WHERE m.scope IS NOT DISTINCT FROM %(scope)s AND m.type = ANY(%(types)s)
    AND (m.expires_at IS NULL OR m.expires_at > %(now)s)
    AND NOT EXISTS (
      SELECT 1 FROM memory_links AS l WHERE l.to_id = m.id AND l.kind = 'supersedes'
        AND (m.scope IS NULL
          OR (SELECT f.scope FROM memories AS f WHERE f.id = l.from_id) = m.scope))
  ORDER BY m.created_at DESC, m.id DESC
  LIMIT %(window)s
) AS newest
ORDER BY last_accessed DESC, created_at DESC, id DESC
LIMIT %(limit)s
"""
DELETE_EXPIRED = """
DELETE FROM memories WHERE id IN (
  SELECT id FROM memories WHERE expires_at IS NOT NULL AND expires_at <= %s
  ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED)
"""
DECAY_WINDOW = (
    f"UPDATE memories AS m SET decay_score = {keyword.decay_sql('m')}"
    " WHERE m.id > %s AND m.id <= %s"
)
LINK = (
    "INSERT INTO memory_links (from_id, to_id, kind, created_at) VALUES (%s, %s, %s, %s)"
    " ON CONFLICT DO NOTHING"
)


def field_values(values: dict[str, Any]) -> tuple[Any, ...]:
    """A new row's field columns (storage.common's, in their order) as the driver takes them:
    tags as a JSON text."""
    encoded = {**values, "tags": json.dumps(list(values["tags"]), ensure_ascii=False)}
    return tuple(encoded.values())


def memory(row: Sequence[Any]) -> dict[str, Any]:
    return dict(zip(MEMORY_COLUMNS, row, strict=False))


def filters_sql(filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
    """SQL conditions (each starting with AND) and their parameters: type and scope equal,
    a tag equal to one whole tag, ``by`` either writer."""
    sql, params = "", []
    if filters.memory_type is not None:
        sql += f" AND {alias}.type = %s"
        params.append(filters.memory_type)
    if filters.scope is not None:
        sql += f" AND {alias}.scope = %s"
        params.append(filters.scope)
    if filters.tag is not None:
        sql += f" AND {alias}.tags @> jsonb_build_array(%s::text)"
        params.append(filters.tag)
    if filters.by is not None:
        sql += f" AND (%s IN ({alias}.created_by, {alias}.updated_by))"
        params.append(filters.by)
    if filters.created_until is not None:
        sql += f" AND {alias}.created_at <= %s"
        params.append(filters.created_until)
    return sql, params
