"""The keyword columns of a memory on PostgreSQL, as FTS5 would index its text.

Why lexemes come from Python and not from a text search configuration: bm25 counts tokens,
and PostgreSQL's parser does not split text where unicode61 does (``1e10``, ``v1.2``, paths,
hex ids), its snowball porter is not FTS5's porter, and unaccent is not remove_diacritics 2.
``document`` stores FTS5's own lexemes (agent_memory.query.lexeme): a tsvector for matching
(GIN) and phrase positions (FTS5's token positions + 1, the first token at weight A for
``^``), a jsonb map of each lexeme's count (a word's frequency in one lookup), and FTS5's
token count as the row's length.

FTS5's index has two columns, content and tags (migrations/versions/0009). The tags' tokens
follow the content's in the one tsvector, TAG_GAP positions after its last token (so no
phrase, and no NEAR group tsquery spells out, spans the two), at weight C, their first at
weight B (``^`` there); a column filter asks its columns' weights (tsquery.weights). The
count maps are ``tf``, both columns together: its keys are the lexemes a row holds, whatever
the column, and each value is the lexeme's frequency as bm25 counts it, a tag hit weighing
bm25.TAG_WEIGHT (FTS5's column weights), so that a word's frequency is one lookup
(migrations/postgres/0014); and ``tag_tf``, the tags' hits alone, for column filters. The
length counts both columns, as FTS5's does. Positions read for NEAR groups carry their
column (COLUMN_SPAN).

What a tsvector cannot hold (PostgreSQL's limits; they only touch very long memories): a
lexeme of 2,047 bytes or more (left out: not searchable), a position past 16,383 (clamped:
phrases and NEAR past there match by chance), more than 256 positions of one lexeme (cut), and 1 MiB
of lexemes and positions in all. Prose of that size fits well within it, but as much text of
distinct words, hex ids or base64 does not, and PostgreSQL
refuses it; ``document`` then indexes the lexemes of the first tokens that fit and still
counts every token in ``tf`` and ``doc_len``, so single words keep their exact scores.
Exact phrases at any size would take an inverted index table (memory, lexeme, positions[])
instead of a tsvector.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import NamedTuple

from agent_memory import query
from agent_memory.query import bm25
from agent_memory.storage.postgres import tsquery

# PostgreSQL's tsvector limits (tsvector.h): largest position, positions kept per lexeme,
# and the bytes of lexemes plus positions in one tsvector (for lexeme bytes see
# tsquery.MAX_LEXEME_BYTES).
MAX_POSITION = 16_383
MAX_POSITIONS = 256
TSVECTOR_MAX_BYTES = 1_048_575
# Positions between the content's last token and the tags' first: more than any NEAR group
# tsquery spells out (tsquery.NEAR_SPELLED_MAX) reaches, so that no tsquery matches across
# the two columns.
TAG_GAP = tsquery.NEAR_SPELLED_MAX + 2


def _quote(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


class Document(NamedTuple):
    """A memory's keyword columns, as text to bind: ``%s::tsvector``, ``%s``, ``%s::jsonb``,
    ``%s::jsonb``."""

    terms: str
    length: int
    tf: str
    tag_tf: str


def document(content: str, tags: Sequence[str] = ()) -> Document:
    """The keyword columns of a memory: the tsvector input text of the FTS5 lexemes of
    ``content`` and then of ``tags`` (see the module), FTS5's token count of both, and the
    count maps: bm25's frequencies over both columns, and the tags' hits alone.

    Once the tsvector is full (TSVECTOR_MAX_BYTES), later tokens are still counted (tf and
    the token count) but no longer indexed. Runs of scripts written without spaces count as
    their bigrams, as in FTS5's index (query.bigrams).
    """
    found = query.tokens(query.indexed_text(content) or content)
    tagged = query.tokens(query.indexed_tags(tags) or query.tag_text(tags))
    positions: dict[str, list[str]] = {}  # lexeme -> its positions, each with its weight
    last: dict[str, int] = {}  # lexeme -> its last position kept
    counts: dict[str, float] = {}  # lexeme -> content hits + TAG_WEIGHT x tag hits
    tag_counts: dict[str, int] = {}
    lexemes: dict[str, str] = {}  # token -> lexeme: a long memory repeats its words
    size = 0  # PostgreSQL's count (tsvectorin): each lexeme padded to 2 bytes, a position
    full = False  # count, 2 bytes a position
    start = len(found) + TAG_GAP
    placed = [
        (position, token, "A" if position == 1 else "") for position, token in enumerate(found, 1)
    ]
    placed += [(start + i, token, "B" if i == 1 else "C") for i, token in enumerate(tagged, 1)]
    for position, token, weight in placed:
        lexeme = lexemes.get(token)
        if lexeme is None:
            lexeme = lexemes[token] = query.lexeme(token)
        length = len(lexeme.encode())
        if not lexeme or length > tsquery.MAX_LEXEME_BYTES:
            continue
        in_tags = weight in ("B", "C")
        counts[lexeme] = counts.get(lexeme, 0) + (bm25.TAG_WEIGHT if in_tags else 1)
        if in_tags:
            tag_counts[lexeme] = tag_counts.get(lexeme, 0) + 1
        if full:
            continue
        kept = positions.get(lexeme)
        cost = 2 if kept is not None else length + length % 2 + 4
        clamped = min(position, MAX_POSITION)
        if kept is not None and (len(kept) == MAX_POSITIONS or last[lexeme] == clamped):
            continue
        if size + cost > TSVECTOR_MAX_BYTES:
            full = True
            continue
        size += cost
        positions.setdefault(lexeme, []).append(f"{clamped}{weight}")
        last[lexeme] = clamped
    text = " ".join(_quote(lexeme) + ":" + ",".join(kept) for lexeme, kept in positions.items())
    weighted = {lexeme: int(n) if n == int(n) else n for lexeme, n in counts.items()}
    return Document(
        text,
        len(found) + len(tagged),
        json.dumps(weighted, ensure_ascii=False),
        json.dumps(tag_counts, ensure_ascii=False),
    )
