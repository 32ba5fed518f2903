"""The tree an FTS5 query parses into: what both backends render (see agent_memory.query)."""

from __future__ import annotations

from dataclasses import dataclass

# FTS5's NEAR distance when none is given (fts5_expr.c).
NEAR_DEFAULT = 10
# The columns of the keyword index, in FTS5's order (migrations/versions/0009): a column
# filter names them (``tags:redis``), and the PostgreSQL backend keeps both apart.
COLUMNS = ("content", "tags")


class QuerySyntaxError(ValueError):
    """FTS5 would refuse this query (the message follows FTS5's)."""


@dataclass(frozen=True)
class Term:
    """One token as written (unfolded, unstemmed); ``prefix`` for ``abc*``."""

    token: str
    prefix: bool = False


@dataclass(frozen=True)
class Phrase:
    """Tokens that must follow one another; ``first``: at a column's first token (``^``)."""

    terms: tuple[Term, ...]
    first: bool = False


@dataclass(frozen=True)
class Near:
    """A leaf: one phrase, or a NEAR group of phrases within ``distance`` tokens.

    No phrases: a string without a single token (``""``, ``—``), which FTS5 keeps as a leaf
    that matches nothing. ``columns`` is the column filter (None: every column); an empty
    one matches nothing.
    """

    phrases: tuple[Phrase, ...]
    distance: int = NEAR_DEFAULT
    columns: frozenset[str] | None = None


@dataclass(frozen=True)
class And:
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    """Rows matching ``left`` and not ``right``."""

    left: Node
    right: Node


Node = Near | And | Or | Not


def phrase_paths(
    node: Node, above: tuple[Node, ...] = ()
) -> list[tuple[Phrase, Near, tuple[Node, ...]]]:
    """Every phrase in FTS5's order, with its leaf and the nodes above the leaf (root last)."""
    if isinstance(node, Near):
        return [(phrase, node, above) for phrase in node.phrases]
    children = (node.left, node.right) if isinstance(node, Not) else node.children
    return [found for child in children for found in phrase_paths(child, (node, *above))]
