"""The keyword search's ranking statements (storage.sqlite.keyword), built with SQLAlchemy
once and run as SQLite text on the driver's connection.

Through SQLAlchemy, a statement's execution adds its events, parameter and result
processing and Row objects to SQLite's own work: on a small database as much as the
statement, and a search runs four or five. The memories table's columns are INTEGER, REAL
and TEXT, for which SQLAlchemy converts nothing, so the rows are the same either way.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import sqlalchemy
from sqlalchemy import bindparam, func, literal_column, select
from sqlalchemy.dialects import sqlite

from agent_memory.query import bm25
from agent_memory.ranking import MAX_DECAY
from agent_memory.storage.base import MEMORY_COLUMNS
from agent_memory.storage.sqlite import rows
from agent_memory.storage.sqlite.rows import SELECT_MEMORY, FilterKey
from agent_memory.storage.sqlite.schema import memories

# Statements are compiled for parameters by name (:match, :limit, ...), which the driver
# binds from the search's dict.
_DIALECT = sqlite.dialect(paramstyle="named")

_FTS = sqlalchemy.table("memories_fts", sqlalchemy.column("rowid"))
# The index's columns are content and tags (migrations/versions/0009); a hit in the tags
# weighs bm25.TAG_WEIGHT, one in the content 1.
_BM25 = sqlalchemy.literal_column(f"bm25(memories_fts, 1.0, {bm25.TAG_WEIGHT!r})")
# A query "within" another MATCH expression scores only the rows that match it too. The
# unary + keeps SQLite from handing the IN to FTS5 as a rowid constraint, which FTS5
# answers with one seek per id, far slower for thousands of ids; as a filter, bm25() runs
# for those rows only.
_WITHIN = sqlalchemy.text(
    "+memories_fts.rowid IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH :within)"
)

# A page's row: the memory's columns (SELECT_MEMORY), then its decay as of :now, its score,
# and, from the candidates statement, how many candidates there were and the worst bm25.
DECAY = len(MEMORY_COLUMNS)
SCORE, CANDIDATES, WORST = DECAY + 1, DECAY + 2, DECAY + 3


# A statement as the driver runs it: its text, and the values SQLAlchemy binds itself (the
# dialect writes a LIMIT with "OFFSET :param_1", bound to 0).
Compiled = tuple[str, dict[str, Any]]


def _text(statement: sqlalchemy.Select[Any]) -> Compiled:
    compiled = statement.compile(dialect=_DIALECT)
    fixed = {name: bind.value for bind, name in compiled.bind_names.items() if not bind.required}
    return str(compiled), fixed


def _matching(within: bool) -> list[Any]:
    """WHERE clauses: the rows matching :match (and :within, when ``within``)."""
    match = literal_column("memories_fts").op("MATCH")(bindparam("match"))
    return [match, _WITHIN] if within else [match]


@functools.cache
def page_sql(key: FilterKey, within: bool) -> Compiled:
    """The keyword page: memories by decay - bm25 (best first, ties by id), filtered."""
    current = rows.decay_sql()
    score = (current - _BM25).label("score")
    return _text(
        select(*SELECT_MEMORY, current.label("current_decay"), score)
        .select_from(_FTS.join(memories, memories.c.id == _FTS.c.rowid))
        .where(*_matching(within), *rows.filter_clauses(key))
        .order_by(score.desc(), memories.c.id.asc())
        .limit(bindparam("limit"))
    )


@functools.cache
def leg_sql(key: FilterKey, within: bool) -> Compiled:
    """(id, bm25) by bm25 alone (best first, ties by id): the keyword leg of a hybrid search.

    With no filter, the index alone answers: no join to memories for every match.
    """
    if not any(key):
        return _text(
            select(_FTS.c.rowid, _BM25)
            .where(*_matching(within))
            .order_by(_BM25.asc(), _FTS.c.rowid.asc())
            .limit(bindparam("limit"))
        )
    return _text(
        select(memories.c.id, _BM25)
        .select_from(_FTS.join(memories, memories.c.id == _FTS.c.rowid))
        .where(*_matching(within), *rows.filter_clauses(key))
        .order_by(_BM25.asc(), memories.c.id.asc())
        .limit(bindparam("limit"))
    )


@functools.cache
def candidates_sql(within: bool) -> Compiled:
    """The best :cut rows by bm25 from the index alone, then decay blended into those only.

    Each row also carries how many candidates there were and the last one's bm25, which
    tell whether the page is decided (see keyword.Run._candidates_page); joining every
    match to its row would cost more than the ranking.

    Only candidates within MAX_DECAY of the :limit-th best bm25 are joined to their rows:
    decay lies in (0, MAX_DECAY], so the best :limit by bm25 each score above minus the
    :limit-th's bm25 (subtraction rounds monotonically), and a candidate whose MAX_DECAY -
    bm25 falls below that scores below all of them. The page is the same; the join reads
    tens of rows instead of KEYWORD_CANDIDATES.
    """
    ranked = (
        select(_FTS.c.rowid.label("rid"), _BM25.label("b"))
        .where(*_matching(within))
        .order_by(_BM25.asc(), _FTS.c.rowid.asc())
        .limit(bindparam("cut"))
        .cte("ranked")  # used three times: SQLite materializes it once
    )
    kth = (
        select(ranked.c.b)
        .order_by(ranked.c.b, ranked.c.rid)
        .limit(1)
        .offset(bindparam("limit") - 1)
        .scalar_subquery()
    )
    reach = literal_column(repr(MAX_DECAY)) - ranked.c.b
    current = rows.decay_sql()
    score = (current - ranked.c.b).label("score")
    return _text(
        select(
            *SELECT_MEMORY,
            current.label("current_decay"),
            score,
            select(func.count()).select_from(ranked).scalar_subquery().label("candidates"),
            select(func.max(ranked.c.b)).scalar_subquery().label("worst"),
        )
        .select_from(ranked.join(memories, memories.c.id == ranked.c.rid))
        .where(sqlalchemy.or_(kth.is_(None), reach >= -kth))
        .order_by(score.desc(), memories.c.id.asc())
        .limit(bindparam("limit"))
    )


def memory(row: tuple[Any, ...]) -> dict[str, Any]:
    """A page row's memory as the wire shows it, decay_score as of the query (rows.with_decay
    for a driver's tuple)."""
    out = dict(zip(MEMORY_COLUMNS, row, strict=False))
    out["tags"] = json.loads(out["tags"])
    out["decay_score"] = row[DECAY]
    return out
