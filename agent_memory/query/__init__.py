"""The FTS5 query language, parsed once into a tree and rendered for each storage backend.

Modules: ``parsed`` (a search's query, read once: ``read`` gives the ``ParsedQuery`` every
part of a search reads), ``lexer`` (FTS5's lexemes), ``cost`` (the bounds on a query's cost),
``parser`` (fts5parse.y), ``tree`` (the nodes), ``lexemes`` (FTS5's tokens and porter lexemes),
``bigrams`` (scripts written without spaces, as the index holds them), ``fts5`` (back to a
MATCH string), ``bm25`` (the score and which words carry information); the PostgreSQL tsquery
renderer is agent_memory/storage/postgres/tsquery.py (SQL stays under storage/).

Why a parser of our own: the SQLite backend hands the raw text to FTS5, but PostgreSQL has no
FTS5. ``websearch_to_tsquery`` loses prefixes and parentheses and ``to_tsquery`` raises on raw
input, so the PostgreSQL backend needs the query as FTS5 understood it, and the choice between
the query and its plain-language retry (decisions.md, "FTS query handling") must not depend on
the backend. So ``parse`` accepts exactly the texts FTS5 accepts (the grammar of fts5parse.y
with its precedences, the checks FTS5 makes while building the tree, its parser's 100-entry
stack and its 256-deep tree limit) and raises ``QuerySyntaxError`` where FTS5 raises; the tests
hold it to SQLite's own answers on many hand-written and generated queries. The one deliberate
difference: ``*reads`` and ``*id`` are FTS5 "special queries" (a counter row, not a search);
``parse`` refuses them too, and ``read`` gives them no tree, as the SQLite app finds
nothing for them.

Terms keep the token text as written; ``lexeme`` turns a token into what FTS5's ``porter
unicode61 remove_diacritics 2`` tokenizer stores (unicode61's character tables are taken from
SQLite, see agent_memory/query/unicode61.py; the porter stemmer is FTS5's, step for step, on UTF-8
bytes). A PostgreSQL text search configuration (unaccent + snowball porter) came close but not
equal: it gives other lexemes for some words (numbers such as ``1e10`` and
hex ids dropped or split by PostgreSQL's parser, ``as``/``is`` stemmed, ``assembly`` ->
``assembli``, ligatures expanded). bm25 parity needs FTS5's lexemes, so both documents and
queries get theirs from here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_memory.query.bigrams import indexed_tags, indexed_text, rewrite, unsegmented
    from agent_memory.query.fts5 import indexed_match, to_fts5
    from agent_memory.query.lexemes import fold, lexeme, tag_text, tokens
    from agent_memory.query.parsed import ParsedQuery, any_word, every_word, read, word_leaf
    from agent_memory.query.parser import is_special, parse
    from agent_memory.query.tree import (
        COLUMNS,
        NEAR_DEFAULT,
        And,
        Near,
        Node,
        Not,
        Or,
        Phrase,
        QuerySyntaxError,
        Term,
        phrase_paths,
    )


# Each name's module, imported when the name is first asked for: the lexeme tables are
# loaded only by what searches, not by `serve` before its first answer.
_HOMES = {
    "indexed_tags": "bigrams",
    "indexed_text": "bigrams",
    "rewrite": "bigrams",
    "unsegmented": "bigrams",
    "indexed_match": "fts5",
    "to_fts5": "fts5",
    "fold": "lexemes",
    "lexeme": "lexemes",
    "tag_text": "lexemes",
    "tokens": "lexemes",
    "ParsedQuery": "parsed",
    "any_word": "parsed",
    "every_word": "parsed",
    "read": "parsed",
    "word_leaf": "parsed",
    "is_special": "parser",
    "parse": "parser",
    "COLUMNS": "tree",
    "NEAR_DEFAULT": "tree",
    "And": "tree",
    "Near": "tree",
    "Node": "tree",
    "Not": "tree",
    "Or": "tree",
    "Phrase": "tree",
    "QuerySyntaxError": "tree",
    "Term": "tree",
    "phrase_paths": "tree",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "COLUMNS",
    "NEAR_DEFAULT",
    "And",
    "Near",
    "Node",
    "Not",
    "Or",
    "ParsedQuery",
    "Phrase",
    "QuerySyntaxError",
    "Term",
    "any_word",
    "every_word",
    "fold",
    "indexed_match",
    "indexed_tags",
    "indexed_text",
    "is_special",
    "lexeme",
    "parse",
    "phrase_paths",
    "read",
    "rewrite",
    "tag_text",
    "to_fts5",
    "tokens",
    "unsegmented",
    "word_leaf",
]
