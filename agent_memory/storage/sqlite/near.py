"""The keyword signal's candidates for a near-duplicate hint, on SQLite
(storage/hygiene/near.py plans which rows): FTS5's word lists, no bm25, read on the driver's
connection (SQLAlchemy's result rows cost more than the statements here). Nothing here reads
or fills the word counts the keyword search caches for its pruning (keyword.KeywordIndex): a
count made at store time would be reused by later searches."""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy

from agent_memory.storage.hygiene.near import NEAR_MAX_ROWS, NEAR_RARE_ROWS, NearPlan
from agent_memory.storage.sqlite.keyword import any_of, driver

# A common word's rows are counted among the newest this many ids only: enough to order the
# common words by how common they are, at a cost that does not grow with the store.
NEAR_SAMPLE_ROWS = 2_048

# Per MATCH expression of the JSON array ?2, in its order, from one walk of its newest ?1
# rows (FTS5 reads the word's list from its end and stops there): fewer than ?1, and that is
# its count; else ?1 plus about how many of the newest ?3 ids hold it, from how far back its
# ?1 newest rows reach (what orders the common words, at a cost that does not grow with the
# store).
_COUNTS = (
    "WITH top AS (SELECT coalesce(max(id), 0) AS id FROM memories)"
    " SELECT (SELECT CASE WHEN count(*) < ?1 THEN count(*)"
    " ELSE ?1 + ?3 * count(*) / (top.id - min(w.rowid) + 1) END"
    " FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH j.value"
    " ORDER BY rowid DESC LIMIT ?1) AS w)"
    " FROM json_each(?2) AS j, top ORDER BY j.key"
)
# The rows of a scope (``IS``: NULL is a scope too) matching a MATCH expression, newest first.
_ROWS = (
    "SELECT m.id, m.content FROM memories_fts f JOIN memories m ON m.id = f.rowid"
    " WHERE memories_fts MATCH ? AND m.scope IS ? ORDER BY f.rowid DESC LIMIT ?"
)


def counts(conn: sqlalchemy.Connection, words: Sequence[str]) -> list[int]:
    """Each word's rows when fewer than NEAR_RARE_ROWS; else NEAR_RARE_ROWS plus an estimate
    of its rows among the newest NEAR_SAMPLE_ROWS ids (what orders the common words)."""
    phrases = json.dumps([any_of([word]) for word in words])
    found = driver(conn).execute(_COUNTS, (NEAR_RARE_ROWS, phrases, NEAR_SAMPLE_ROWS))
    return [rows for (rows,) in found]


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
            for memory_id, content in driver(conn).execute(_ROWS, (match(part), scope, left)):
                found.setdefault(memory_id, content)
    return list(found.items())
