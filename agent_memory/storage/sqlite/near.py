"""The keyword signal's candidates for a near-duplicate hint, on SQLite (storage/near.py plans
which rows): FTS5's word lists, no bm25. Nothing here reads or fills the word counts the
keyword search caches for its pruning (keyword.KeywordIndex): a count made at store time
would be reused by later searches."""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy

from agent_memory.storage.near import NEAR_COUNT_ROWS, NEAR_MAX_ROWS, NearPlan
from agent_memory.storage.sqlite.keyword import any_of

# Each word's rows, counted up to :cap (FTS5 stops reading the word's list there), in the
# order of the JSON array of MATCH expressions.
_COUNTS = (
    "SELECT (SELECT count(*) FROM (SELECT 1 FROM memories_fts"
    " WHERE memories_fts MATCH j.value LIMIT ?)) FROM json_each(?) j ORDER BY j.key"
)
# The rows of a scope (``IS``: NULL is a scope too) that hold a rare word or at least :bound
# of the words, newest first: :words is a JSON array of [MATCH expression, rare (0/1)].
_ROWS = (
    "SELECT m.id, m.content FROM (SELECT f.rowid AS r FROM json_each(?) j, memories_fts f"
    " WHERE f.memories_fts MATCH json_extract(j.value, '$[0]') GROUP BY f.rowid"
    " HAVING count(*) >= ? OR max(json_extract(j.value, '$[1]')) = 1) c"
    " JOIN memories m ON m.id = c.r WHERE m.scope IS ? ORDER BY m.id DESC LIMIT ?"
)


def counts(conn: sqlalchemy.Connection, words: Sequence[str]) -> list[int]:
    """How many rows hold each word, up to NEAR_COUNT_ROWS."""
    phrases = json.dumps([any_of([word]) for word in words])
    return [n for (n,) in conn.exec_driver_sql(_COUNTS, (NEAR_COUNT_ROWS, phrases))]


def rows(conn: sqlalchemy.Connection, plan: NearPlan, scope: str | None) -> list[tuple[int, str]]:
    """(id, content) of the rows of ``scope`` the plan names, at most NEAR_MAX_ROWS. The
    words match in any column: a superset of the rows holding them in the content."""
    words = json.dumps([[any_of([w]), int(w in plan.rare)] for w in plan.words])
    found = conn.exec_driver_sql(_ROWS, (words, plan.bound, scope, NEAR_MAX_ROWS))
    return [(memory_id, content) for memory_id, content in found]
