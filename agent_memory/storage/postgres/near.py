"""The keyword signal's candidates for a near-duplicate hint, on PostgreSQL (storage/near.py
plans which rows): the GIN index of ``terms``, no ranking. Each word's rows come from
lexeme_rows and the totals log (exact statistics, read, never written here)."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy

from agent_memory.search import Term, lexeme
from agent_memory.storage.near import NEAR_MAX_ROWS, NearPlan
from agent_memory.storage.postgres.totals import LEXEME_ROWS
from agent_memory.storage.postgres.tsquery import MAX_LEXEME_BYTES, tsquery_lexeme

_COUNTS = f"SELECT {LEXEME_ROWS} FROM unnest(%s::text[]) WITH ORDINALITY AS w(x, i) ORDER BY w.i"
# The rows holding one of the words first (the GIN index), then the scope, and a rare word
# or at least %s of the words (an array of tsqueries; the rare ones, OR-ed): a plan on the
# primary key, newest first, would walk the table looking for matches.
_ROWS = (
    "WITH c AS MATERIALIZED (SELECT id, content, scope, terms FROM memories"
    " WHERE terms @@ ANY(%s::tsquery[]))"
    " SELECT id, content FROM c WHERE scope IS NOT DISTINCT FROM %s"
    " AND ((SELECT count(*) FROM unnest(%s::tsquery[]) q WHERE c.terms @@ q) >= %s"
    " OR c.terms @@ %s::tsquery) ORDER BY id DESC LIMIT %s"
)


def _storable(word: str) -> bool:
    """Whether PostgreSQL can hold the word's lexeme (a longer one matches nothing)."""
    return 0 < len(lexeme(word).encode()) <= MAX_LEXEME_BYTES


def counts(conn: sqlalchemy.Connection, words: Sequence[str]) -> list[int]:
    """How many rows hold each word's lexeme."""
    found = conn.exec_driver_sql(_COUNTS, ([lexeme(word) for word in words],))
    return [int(n) for (n,) in found]


def rows(conn: sqlalchemy.Connection, plan: NearPlan, scope: str | None) -> list[tuple[int, str]]:
    """(id, content) of the rows of ``scope`` the plan names, at most NEAR_MAX_ROWS."""
    words = [tsquery_lexeme(Term(w)) for w in plan.words if _storable(w)]
    if not words:
        return []
    rare = " | ".join(
        tsquery_lexeme(Term(w)) for w in plan.words if w in plan.rare and _storable(w)
    )
    params = (words, scope, words, plan.bound, rare or None, NEAR_MAX_ROWS)
    return [(memory_id, content) for memory_id, content in conn.exec_driver_sql(_ROWS, params)]
