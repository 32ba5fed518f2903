"""How SQLite statements read memories: the columns, the filters, decay in SQL, and the
reads built from them (a list, rows by id, relations).

Shared by the store and the keyword search, so that a memory has one shape and one decay
wherever it is read.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import sqlalchemy
from sqlalchemy import bindparam, func, literal_column, or_, select

from agent_memory import ranking
from agent_memory.contract.models import Filters
from agent_memory.contract.vocabulary import PINNED_TYPES
from agent_memory.storage.base import MEMORY_COLUMNS
from agent_memory.storage.sqlite.schema import memories

SELECT_MEMORY = [memories.c[name] for name in MEMORY_COLUMNS]


def decay_sql() -> sqlalchemy.ColumnElement[float]:
    """ranking.decay at ``:now``, evaluated per row by SQLite.

    Written as ``exp(age * rate)`` with the rate folded into a constant per type: a search
    computes it for every matching row, and a division per row is a measurable share of a
    question that matches many rows.
    """
    pinned = sorted(PINNED_TYPES)
    rate = sqlalchemy.case(
        (
            memories.c.type.in_([literal_column(f"'{t}'") for t in pinned]),
            literal_column(repr(ranking.decay_rate(pinned[0]))),
        ),
        else_=literal_column(repr(ranking.decay_rate("TODO"))),
    )
    age = func.max(bindparam("now") - memories.c.last_accessed, literal_column("0"))
    return func.exp(age * rate)


def memory(row: sqlalchemy.Row[Any]) -> dict[str, Any]:
    """A memory as the wire shows it, from a row selected with SELECT_MEMORY first."""
    out = dict(zip(MEMORY_COLUMNS, row, strict=False))
    out["tags"] = json.loads(out["tags"])
    return out


def with_decay(row: sqlalchemy.Row[Any]) -> dict[str, Any]:
    """A memory whose decay_score is the row's ``current_decay`` (decay as of the query)."""
    out = memory(row)
    out["decay_score"] = row.current_decay
    return out


FilterKey = tuple[bool, bool, bool, bool, bool]


def filter_key(filters: Filters) -> FilterKey:
    """Which filters are set: statements are built (and cached) per combination."""
    return (
        filters.memory_type is not None,
        filters.tag is not None,
        filters.scope is not None,
        filters.by is not None,
        filters.created_until is not None,
    )


def filter_params(filters: Filters) -> dict[str, Any]:
    params = {"type": filters.memory_type, "tag": filters.tag, "scope": filters.scope}
    params["by"] = filters.by
    params["created_until"] = filters.created_until
    return {name: value for name, value in params.items() if value is not None}


@functools.cache
def filter_clauses(key: FilterKey) -> tuple[Any, ...]:
    """WHERE clauses bound to :type, :tag, :scope, :by and :created_until; a tag matches a
    whole tag exactly, :by either writer."""
    by_type, by_tag, by_scope, by_writer, by_time = key
    clauses: list[Any] = []
    if by_type:
        clauses.append(memories.c.type == bindparam("type"))
    if by_scope:
        clauses.append(memories.c.scope == bindparam("scope"))
    if by_writer:
        writer = bindparam("by")
        clauses.append(or_(memories.c.created_by == writer, memories.c.updated_by == writer))
    if by_time:
        clauses.append(memories.c.created_at <= bindparam("created_until"))
    if by_tag:
        each = func.json_each(memories.c.tags).table_valued("value")
        clauses.append(select(1).select_from(each).where(each.c.value == bindparam("tag")).exists())
    return tuple(clauses)


@functools.cache
def list_statement(key: FilterKey, limited: bool, after: bool = False) -> sqlalchemy.Select[Any]:
    """The list, newest first; ``after``: only past (:before_created, :before_id) in that
    order. The row-value comparison is a range on the (created_at, id) indexes, so a page
    deep in the list reads no more rows than the first one."""
    stmt = (
        select(*SELECT_MEMORY)
        .where(*filter_clauses(key))
        .order_by(memories.c.created_at.desc(), memories.c.id.desc())
    )
    if after:
        point = sqlalchemy.tuple_(bindparam("before_created"), bindparam("before_id"))
        stmt = stmt.where(sqlalchemy.tuple_(memories.c.created_at, memories.c.id) < point)
    return stmt.limit(bindparam("limit")) if limited else stmt


@functools.cache
def candidates_statement(key: FilterKey) -> sqlalchemy.Select[Any]:
    """(id, decay as of :now, content, tags) of the ids of the JSON array :ids that pass the
    filters (a JSON array: an expanding IN of hundreds of ids costs more to compile than to
    run)."""
    listed = func.json_each(bindparam("ids")).table_valued("value")
    columns = (memories.c.id, decay_sql(), memories.c.content, memories.c.tags)
    return select(*columns).where(memories.c.id.in_(select(listed.c.value)), *filter_clauses(key))


@functools.cache
def rows_statement(key: FilterKey) -> sqlalchemy.Select[Any]:
    """The rows among :ids that pass the filters, with their decay as of :now."""
    return select(*SELECT_MEMORY, decay_sql().label("current_decay")).where(
        memories.c.id.in_(bindparam("ids", expanding=True)), *filter_clauses(key)
    )
