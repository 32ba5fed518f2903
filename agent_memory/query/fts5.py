"""Rendering a query tree back as an FTS5 MATCH expression (the SQLite backend's language)."""

from __future__ import annotations

from agent_memory.query.bigrams import rewrite, unsegmented
from agent_memory.query.parser import parse
from agent_memory.query.tree import COLUMNS, And, Near, Node, Not, Or, Phrase, QuerySyntaxError

_LEVEL = {Or: 1, And: 2, Not: 3}


def indexed_match(text: str) -> str:
    """A MATCH expression as the index must read it: ``text`` itself unless it holds a run
    of a script written without spaces, which is rewritten as the index holds it
    (query.bigrams). Text FTS5 refuses stays as it is, for FTS5 to refuse."""
    if not unsegmented(text):
        return text
    try:
        return to_fts5(rewrite(parse(text)))
    except QuerySyntaxError:
        return text


def to_fts5(node: Node) -> str:
    """A MATCH expression FTS5 reads as this tree (same rows, same phrases, same bm25)."""
    if isinstance(node, Near):
        return _fts5_leaf(node)
    level = _LEVEL[type(node)]
    if isinstance(node, Not):
        parts = [_fts5_operand(node.left, level, False), _fts5_operand(node.right, level, True)]
        return " NOT ".join(parts)
    word = " AND " if isinstance(node, And) else " OR "
    return word.join(_fts5_operand(child, level, True) for child in node.children)


def _fts5_operand(node: Node, level: int, right: bool) -> str:
    text = to_fts5(node)
    if isinstance(node, Near):
        return text
    inner = _LEVEL[type(node)]
    return f"({text})" if inner < level or (right and inner == level) else text


def _fts5_leaf(node: Near) -> str:
    if not node.phrases:
        return '""'
    rendered = [_fts5_phrase(phrase) for phrase in node.phrases]
    text = (
        rendered[0]
        if len(rendered) == 1
        else f"NEAR({' '.join(rendered)}, {node.distance % (1 << 32)})"
    )
    if node.columns is None:
        return text
    if node.columns:
        return "{" + " ".join(f'"{c}"' for c in sorted(node.columns)) + "} : " + text
    return "-{" + " ".join(f'"{c}"' for c in COLUMNS) + "} : " + text


def _fts5_phrase(phrase: Phrase) -> str:
    text = " + ".join(f'"{term.token}"' + (" *" if term.prefix else "") for term in phrase.terms)
    return "^" + text if phrase.first else text
