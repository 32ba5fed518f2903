"""The keyword signal's candidates for a near-duplicate hint, on PostgreSQL (storage/hygiene/near.py
plans which rows): the GIN index of ``terms``, no ranking. Each word's rows come from
lexeme_rows and the totals log (exact statistics, read, never written here)."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy

from agent_memory.query import Term, lexeme, unsegmented, word_leaf
from agent_memory.storage.hygiene.near import NEAR_MAX_ROWS, NearPlan
from agent_memory.storage.postgres import tsquery
from agent_memory.storage.postgres.totals import LEXEME_ROWS
from agent_memory.storage.postgres.tsquery import MAX_LEXEME_BYTES, tsquery_lexeme

_COUNTS = f"SELECT {LEXEME_ROWS} FROM unnest(%s::text[]) WITH ORDINALITY AS w(x, i) ORDER BY w.i"
# The matching rows first (the GIN index), then the scope: a plan on the primary key,
# newest first, would walk the table looking for matches.
_ROWS = (
    "WITH c AS MATERIALIZED (SELECT id, content, scope FROM memories WHERE terms @@ %s::tsquery)"
    " SELECT id, content FROM c WHERE scope IS NOT DISTINCT FROM %s ORDER BY id DESC LIMIT %s"
)


def _word(word: str) -> str | None:
    """The tsquery of one word, as the index holds it (a run of a script written without
    spaces: its bigrams, as a search asks it); None when it can match no row (a lexeme
    longer than PostgreSQL holds)."""
    if unsegmented(word):
        return tsquery.tsquery_text(word_leaf(word))
    return tsquery_lexeme(Term(word)) if len(lexeme(word).encode()) <= MAX_LEXEME_BYTES else None


def counts(conn: sqlalchemy.Connection, words: Sequence[str]) -> list[int]:
    """How many rows hold each word's lexeme."""
    found = conn.exec_driver_sql(_COUNTS, ([lexeme(word) for word in words],))
    return [int(n) for (n,) in found]


def tsquery_text(plan: NearPlan) -> str | None:
    """The plan as one tsquery: words and conjunctions, OR-ed; None when nothing can match."""
    parts = [text for text in map(_word, plan.any_of) if text is not None]
    for words in plan.all_of:
        texts = [_word(w) for w in words]
        if all(text is not None for text in texts):
            parts.append("(" + " & ".join(str(text) for text in texts) + ")")
    return " | ".join(parts) or None


def rows(conn: sqlalchemy.Connection, plan: NearPlan, scope: str | None) -> list[tuple[int, str]]:
    """(id, content) of the rows of ``scope`` the plan names, at most NEAR_MAX_ROWS: those
    holding a rare word first (a near duplicate almost always does), then the others."""
    found: dict[int, str] = {}
    for part in (NearPlan(plan.any_of, ()), NearPlan((), plan.all_of)):
        text = tsquery_text(part)
        if text is not None:
            left = NEAR_MAX_ROWS - len(found)
            for memory_id, content in conn.exec_driver_sql(_ROWS, (text, scope, left)):
                found.setdefault(memory_id, content)
    return list(found.items())
