"""The keyword signal's candidates for a near-duplicate hint, on SQLite (storage/near.py plans
which rows): FTS5's word lists, no bm25. Nothing here reads or fills the word counts the
keyword search caches for its pruning (keyword.KeywordIndex): a count made at store time
would be reused by later searches."""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy

from agent_memory.storage.near import NEAR_MAX_ROWS, NEAR_RARE_ROWS, NearPlan
from agent_memory.storage.sqlite.keyword import any_of

# A common word's rows are counted among the newest this many ids only: enough to order the
# common words by how common they are, at a cost that does not grow with the store.
NEAR_SAMPLE_ROWS = 2_048

# Per MATCH expression of the JSON array ?3, in its order: its rows counted up to ?1 (FTS5
# stops reading the word's list there), and for a word with that many, its rows among the
# newest ?2 ids (a range of rowids: FTS5 seeks to its start); a rare word's is not counted.
_COUNTS = (
    "WITH w AS MATERIALIZED (SELECT j.key AS k, j.value AS v, (SELECT count(*) FROM"
    " (SELECT 1 FROM memories_fts WHERE memories_fts MATCH j.value LIMIT ?1)) AS c"
    " FROM json_each(?3) AS j)"
    " SELECT c, CASE WHEN c < ?1 THEN 0 ELSE (SELECT count(*) FROM memories_fts"
    " WHERE memories_fts MATCH w.v AND rowid > (SELECT coalesce(max(id), 0) FROM memories) - ?2)"
    " END FROM w ORDER BY k"
)
# The rows of a scope (``IS``: NULL is a scope too) matching a MATCH expression, newest first.
_ROWS = (
    "SELECT m.id, m.content FROM memories_fts f JOIN memories m ON m.id = f.rowid"
    " WHERE memories_fts MATCH ? AND m.scope IS ? ORDER BY f.rowid DESC LIMIT ?"
)


def counts(conn: sqlalchemy.Connection, words: Sequence[str]) -> list[int]:
    """Each word's rows when fewer than NEAR_RARE_ROWS; else NEAR_RARE_ROWS plus its rows
    among the newest NEAR_SAMPLE_ROWS (what orders the common words)."""
    phrases = json.dumps([any_of([word]) for word in words])
    found = conn.exec_driver_sql(_COUNTS, (NEAR_RARE_ROWS, NEAR_SAMPLE_ROWS, phrases))
    return [rows if rows < NEAR_RARE_ROWS else NEAR_RARE_ROWS + newest for rows, newest in found]


def match(plan: NearPlan) -> str:
    """The plan as one MATCH expression: words and conjunctions, OR-ed (in any column: the
    candidates are a superset of the rows holding them in the content)."""
    parts = [f"({any_of([word])})" for word in plan.any_of]
    parts += ["(" + " AND ".join(f"({any_of([w])})" for w in words) + ")" for words in plan.all_of]
    return " OR ".join(parts)


def rows(conn: sqlalchemy.Connection, plan: NearPlan, scope: str | None) -> list[tuple[int, str]]:
    """(id, content) of the rows of ``scope`` the plan names, at most NEAR_MAX_ROWS: those
    holding a rare word first (a near duplicate almost always does), then the others."""
    found: dict[int, str] = {}
    for part in (NearPlan(plan.any_of, ()), NearPlan((), plan.all_of)):
        if part.any_of or part.all_of:
            left = NEAR_MAX_ROWS - len(found)
            for memory_id, content in conn.exec_driver_sql(_ROWS, (match(part), scope, left)):
                found.setdefault(memory_id, content)
    return list(found.items())
