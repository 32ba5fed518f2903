"""How many rows hold each phrase of a query (bm25's n), in SQL, on PostgreSQL.

A plain word's count comes from lexeme_rows and the totals log (totals.LEXEME_ROWS, exact in
any snapshot, without visiting the rows); a phrase, a prefix or a column filter is counted
from the GIN index (up to COUNTS_BY_INDEX_MAX of them) or in one pass over the table. The
ranking statement (keyword.py) takes these counts for its IDFs; the search of a query's words
(ranked.py) takes them first, to plan which words to score (query.bm25).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_memory import query
from agent_memory.query import Near, Node, Phrase
from agent_memory.storage.postgres import tsquery
from agent_memory.storage.postgres.totals import LEXEME_ROWS, TOTALS

# A phrase's row count (bm25's n) reads the GIN index, which visits the heap page of every
# row holding it; a single word's count instead comes from lexeme_rows plus the changes the
# totals log still holds (totals.LEXEME_ROWS, exact in any snapshot). Up to this many other
# phrases, each one's count is read from the GIN index; past it, all are counted in one pass
# over the table.
COUNTS_BY_INDEX_MAX = 4


class Sql:
    """SQL text with its parameters, in order."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.params: list[Any] = []

    def add(self, text: str, params: Sequence[Any] = ()) -> Sql:
        self.parts.append(text)
        self.params.extend(params)
        return self

    def text(self) -> str:
        return "".join(self.parts)


def _plain_word(phrase: Phrase, columns: frozenset[str] | None) -> bool:
    """A word whose row count lexeme_rows keeps (not a prefix, a phrase, ``^`` or in some
    columns only)."""
    return (
        len(phrase.terms) == 1
        and not phrase.terms[0].prefix
        and not phrase.first
        and not tsquery.weights(columns)
    )


def phrase_rows(phrases: Sequence[tuple[Phrase, frozenset[str] | None]], out: Sql) -> None:
    """SELECT h: how many rows hold each phrase in its columns (bm25's n), an array in the
    phrases' order.

    The plain words' counts come from one array of their lexemes (``unnest``), however many
    there are; the other phrases' each from the GIN index, or, past COUNTS_BY_INDEX_MAX of
    them, all in one pass over the table. Each count is tagged with its phrase's position,
    and the array is put together in that order.
    """
    words = [
        (i, phrase) for i, (phrase, cols) in enumerate(phrases, 1) if _plain_word(phrase, cols)
    ]
    others = [
        (i, phrase, cols)
        for i, (phrase, cols) in enumerate(phrases, 1)
        if not _plain_word(phrase, cols)
    ]
    parts = []
    if words:
        lexemes = [query.lexeme(phrase.terms[0].token) for _, phrase in words]
        parts.append(
            (
                f"SELECT w.i, {LEXEME_ROWS} AS c FROM unnest(%s::text[], %s::int[]) w(x, i)",
                [lexemes, [i for i, _ in words]],
            )
        )
    if others:
        by_index = len(others) <= COUNTS_BY_INDEX_MAX
        counts, params = [], []
        for _, phrase, cols in others:
            rendered, args = tsquery.phrase_tsquery(phrase, cols)
            params += args
            if by_index:
                counts.append(f"(SELECT count(*) FROM memories WHERE terms @@ {rendered})")
            else:
                counts.append(f"count(*) FILTER (WHERE terms @@ {rendered})")
        listed = "ARRAY[" + ", ".join(counts) + "]::bigint[]"
        if by_index:
            counted = f"unnest(%s::int[], {listed}) o(i, c)"
            params = [[i for i, _, _ in others], *params]
        else:
            counted = f"(SELECT {listed} AS c FROM memories) a, unnest(%s::int[], a.c) o(i, c)"
            params = [*params, [i for i, _, _ in others]]
        parts.append((f"SELECT o.i, o.c FROM {counted}", params))
    if not parts:
        out.add("SELECT '{}'::bigint[] AS h")
        return
    out.add("SELECT array_agg(s.c ORDER BY s.i) AS h FROM (")
    for n, (text, params) in enumerate(parts):
        out.add(" UNION ALL " if n else "")
        out.add(text, params)
    out.add(") s")


def word_rows_sql(leaves: Sequence[Node], tokens: bool = False) -> tuple[str, list[Any]]:
    """(SQL, parameters) giving one row: bm25's N, and an array of how many rows match each
    of ``leaves`` (the retry's words: a leaf of one phrase, or of none, which matches none);
    with ``tokens``, then the tokens of every row (bm25's average length times N)."""
    phrases = [
        leaf.phrases[0]
        if isinstance(leaf, Near) and len(leaf.phrases) == 1 and tsquery.storable(leaf.phrases[0])
        else None
        for leaf in leaves
    ]
    counted = [phrase for phrase in phrases if phrase is not None]
    at, positions = 0, []  # each leaf's phrase's position in hits.h (1-based), or null
    for phrase in phrases:
        at += phrase is not None
        positions.append(at if phrase is not None else None)
    sql = Sql().add("WITH hits AS (")
    phrase_rows([(phrase, None) for phrase in counted], sql)
    sql.add(f") SELECT (SELECT n FROM {TOTALS} totals), ARRAY(SELECT coalesce(hits.h[u.k], 0)")
    sql.add(" FROM unnest(%s::int[]) WITH ORDINALITY u(k, i) ORDER BY u.i)", [positions])
    sql.add(f", (SELECT tokens FROM {TOTALS} totals)" if tokens else "")
    sql.add(" FROM hits")
    return sql.text(), sql.params
