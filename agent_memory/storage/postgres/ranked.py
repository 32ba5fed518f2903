"""PostgreSQL's keyword ranking as the store runs it: the query tree (agent_memory.query)
scored by FTS5's bm25 in SQL (the SQL: keyword.py), and a query of several words searched
as on SQLite (the rows holding every word first). Inside the caller's read snapshot.

A keyword page's statements bring the page's memories with their scores (``page``): the
memories are not read in a round trip of their own.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy

from agent_memory.contract.models import Filters, WordCounts
from agent_memory.query import Node, Or, ParsedQuery, any_word, bm25
from agent_memory.storage.base import MEMORY_COLUMNS
from agent_memory.storage.postgres import keyword

# A ranked row: (id, score, the memory as of the search when a page asked for it, else None).
Ranked = tuple[int, float, dict[str, Any] | None]
_MEMORY = ", ".join(f"m.{column}" for column in MEMORY_COLUMNS)


def counts(conn: sqlalchemy.Connection, parsed: ParsedQuery) -> WordCounts | None:
    """What the index says about a plain query's words (ranking.relevance): the rows and
    tokens indexed, and how many rows hold each word; None for FTS5 syntax."""
    if not parsed.as_words:
        return None
    statement, params = keyword.word_rows_sql(parsed.leaves, tokens=True)
    total, held, tokens = conn.exec_driver_sql(statement, tuple(params)).one()
    return WordCounts(int(total), int(tokens), dict(zip(parsed.words, map(int, held), strict=True)))


def scored(
    conn: sqlalchemy.Connection, parsed: ParsedQuery, limit: int, filters: Filters
) -> list[tuple[int, float]]:
    """(id, -bm25), best first, filters before the cut: the keyword leg of a hybrid search."""
    return [(i, score) for i, score, _ in _scored(conn, parsed, limit, filters, None)]


def page(
    conn: sqlalchemy.Connection, parsed: ParsedQuery, limit: int, filters: Filters, now: int
) -> list[tuple[dict[str, Any], float]]:
    """(memory, -bm25 plus decay as of ``now``), best first, filters before the cut; each
    memory's decay_score as of ``now``."""
    return [(memory, score) for _, score, memory in _scored(conn, parsed, limit, filters, now)]


def _scored(
    conn: sqlalchemy.Connection,
    parsed: ParsedQuery,
    limit: int,
    filters: Filters,
    now: int | None,
) -> list[Any]:
    if parsed.tree is None:
        return []
    # The GIN index for the phrases' row counts and the matching rows: on a table of a
    # few thousand rows the planner would scan it instead, far slower for a rare word
    # (common words cost the same either way).
    conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
    if not parsed.several_words:
        return _ranking(conn, parsed.tree, limit, filters, now)
    return _words(conn, parsed, limit, filters, now)


def _ranking(
    conn: sqlalchemy.Connection,
    tree: Node,
    limit: int,
    filters: Filters,
    now: int | None,
    scored: Node | None = None,
) -> list[Ranked]:
    """The ranking of ``tree`` (see keyword.keyword_ranking_sql); with ``now``, each row's
    memory in the same statement."""
    statement, params = keyword.keyword_ranking_sql(
        tree,
        limit=limit,
        memory_type=filters.memory_type,
        tag=filters.tag,
        scope=filters.scope,
        by=filters.by,
        until=filters.created_until,
        now=now,
        scored=scored,
    )
    if now is None:
        return [(int(i), float(s), None) for i, s in conn.exec_driver_sql(statement, tuple(params))]
    statement = (
        f"SELECT r.id, r.score, {_MEMORY}, {keyword.decay_sql('m')} FROM ({statement}) r"
        " JOIN memories m ON m.id = r.id ORDER BY r.score DESC, r.id"
    )
    found = []
    for row in conn.exec_driver_sql(statement, (now, *params)):
        memory = dict(zip(MEMORY_COLUMNS, row[2:-1], strict=True))
        memory["decay_score"] = row[-1]
        found.append((int(row[0]), float(row[1]), memory))
    return found


def _any_of(parsed: ParsedQuery, words: list[str], hits: dict[str, int]) -> Node:
    """The OR of the leaves of ``words`` that some row holds (each once)."""
    return Or(tuple(parsed.leaf(word) for word in dict.fromkeys(words) if hits[word]))


def _words(
    conn: sqlalchemy.Connection,
    parsed: ParsedQuery,
    limit: int,
    filters: Filters,
    now: int | None,
) -> list[Ranked]:
    """A query searched as words (as on SQLite): the rows holding every word first, then
    the rows holding one of its informative words (query.bm25.plan), every row with the
    whole score of the OR of the words (``parsed.tree``, one leaf per word).

    Past PRUNE_EXACT_ROWS, only the rows of the rarest words are scored first; as on
    SQLite, that is not exact (query.bm25).
    """
    tree, words = parsed.tree, parsed.words
    assert tree is not None
    first = _ranking(conn, parsed.every_word(), limit, filters, now)
    if len(first) >= limit:
        return first
    statement, params = keyword.word_rows_sql(parsed.leaves)
    total, counts = conn.exec_driver_sql(statement, tuple(params)).one()
    hits = dict(zip(words, counts, strict=True))
    planned = bm25.plan(words, total, hits, never_empty=now is not None)
    if not planned.kept:
        return first
    # A word no row holds adds 0 to every row's score and matches no row: it is left out of
    # the statements, which gives the same scores (x + 0.0 is x) for less work a row.
    present = [leaf for word, leaf in zip(words, parsed.leaves, strict=True) if hits[word]]
    if not present:
        return first
    tree = any_word(present)
    wanted = limit + len(first)  # the first rows come again: they hold the kept words
    found = None
    if planned.rarest is not None:
        scored = _any_of(parsed, planned.rarest, hits)
        found = _ranking(conn, tree, wanted, filters, now, scored)
        if len(found) < wanted:
            found = None  # the other kept words' rows are needed to fill the page
    if found is None:
        scored = _any_of(parsed, planned.kept, hits) if planned.left_out else None
        found = _ranking(conn, tree, wanted, filters, now, scored)
    seen = {memory_id for memory_id, _, _ in first}
    return first + [pair for pair in found if pair[0] not in seen][: limit - len(first)]
