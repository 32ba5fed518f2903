"""Rendering a query tree as a PostgreSQL tsquery built from bound parameters only.

Why not ``websearch_to_tsquery`` or ``to_tsquery`` on the raw text: the first loses prefixes
and parentheses, the second raises on raw input. The tree (agent_memory.query) is FTS5's
reading of the text, so both backends match the same rows.
"""

from __future__ import annotations

from agent_memory.query import COLUMNS, And, Near, Node, Not, Phrase, Term, lexeme

# A NEAR group's tsquery spells out every allowed distance; past this one it is only an AND
# of its phrases (looser than FTS5: see to_tsquery).
NEAR_SPELLED_MAX = 32
# PostgreSQL's longest lexeme (tsvector.h), in bytes: longer words are not stored, so a term
# that long matches nothing there (FTS5 keeps tokens up to MAX_TOKEN_BYTES).
MAX_LEXEME_BYTES = 2_047


# A tsquery fragment and its parameters; None where FTS5 would match no row at all.
_Sql = tuple[str, list[str]] | None


def tsquery_lexeme(term: Term, first: bool = False) -> str:
    """The tsquery of one term, as tsquery input text: ``'lexeme'``, with ``:*`` for a prefix
    and weight A for a phrase's first term under ``^`` (the document's first token carries
    weight A, see storage/postgres/keyword.py). Lexemes are letters and digits only; quotes
    and backslashes are escaped anyway."""
    return _tsquery_text(lexeme(term.token), term.prefix, first)


def _tsquery_text(word: str, prefix: bool = False, first: bool = False) -> str:
    text = word.replace("\\", "\\\\").replace("'", "''")
    flags = ("*" if prefix else "") + ("A" if first else "")
    return f"'{text}'" + (f":{flags}" if flags else "")


def to_tsquery(node: Node, column: str = COLUMNS[0]) -> tuple[str, list[str]]:
    """A PostgreSQL tsquery expression for ``node``, from bound parameters only.

    Each term is a ``%s::tsquery`` parameter holding FTS5's lexeme (see ``lexeme``), prefixes
    as ``:*``, phrases joined by ``<->``, AND / OR / NOT as ``&&`` / ``||`` / ``&& !!``. A
    ``^`` phrase asks its first lexeme at weight A, which only the document's first token has.

    Where it differs from FTS5: a NEAR group of two phrases is spelled out as every order and
    distance FTS5 allows (``A <k> B``: B starts k - 1 tokens after A ends), except overlaps of
    more than one token; a group of three or more phrases is the AND of its pairs, which also
    matches rows where each pair is near in a different place; past NEAR_SPELLED_MAX tokens a
    group is the AND of its phrases. When nothing can match (a word-less leaf under AND, an
    excluding column filter), the fragment is ``NULL::tsquery``, which matches no row.
    """
    rendered = _tsq(node, column)
    return rendered if rendered is not None else ("NULL::tsquery", [])


def _tsq(node: Node, column: str) -> _Sql:
    if isinstance(node, Near):
        return _tsq_leaf(node, column)
    if isinstance(node, Not):
        left, right = _tsq(node.left, column), _tsq(node.right, column)
        if left is None or right is None:
            return left
        return f"({left[0]} && !!{right[0]})", left[1] + right[1]
    parts = [_tsq(child, column) for child in node.children]
    if isinstance(node, And):
        if any(part is None for part in parts):
            return None
        kept = [part for part in parts if part is not None]
        joiner = " && "
    else:
        kept = [part for part in parts if part is not None]
        if not kept:
            return None
        joiner = " || "
    return "(" + joiner.join(sql for sql, _ in kept) + ")", [p for _, ps in kept for p in ps]


def phrase_tsquery(phrase: Phrase) -> tuple[str, list[str]]:
    """One phrase as a tsquery: its lexemes joined by ``<->``."""
    params = [
        tsquery_lexeme(term, first=phrase.first and i == 0) for i, term in enumerate(phrase.terms)
    ]
    return "(" + " <-> ".join(["%s::tsquery"] * len(params)) + ")", params


def storable(phrase: Phrase) -> bool:
    """Whether PostgreSQL can hold every lexeme of the phrase (else it matches nothing)."""
    return all(len(lexeme(term.token).encode()) <= MAX_LEXEME_BYTES for term in phrase.terms)


def _tsq_leaf(node: Near, column: str) -> _Sql:
    if not node.phrases or (node.columns is not None and column not in node.columns):
        return None
    if not all(storable(phrase) for phrase in node.phrases):
        return None
    if len(node.phrases) == 1:
        return phrase_tsquery(node.phrases[0])
    if not 0 <= node.distance <= NEAR_SPELLED_MAX:
        rendered = [phrase_tsquery(phrase) for phrase in node.phrases]
        return "(" + " && ".join(sql for sql, _ in rendered) + ")", [
            p for _, ps in rendered for p in ps
        ]
    pairs = []
    for i in range(len(node.phrases)):
        for j in range(i + 1, len(node.phrases)):
            pairs.append(_near_pair(node.phrases[i], node.phrases[j], node.distance))
    return "(" + " && ".join(sql for sql, _ in pairs) + ")", [p for _, ps in pairs for p in ps]


def _near_pair(a: Phrase, b: Phrase, distance: int) -> tuple[str, list[str]]:
    """``A`` and ``B`` at most ``distance`` tokens apart, in either order, overlaps included.

    ``A <k> B``: B starts k - 1 tokens after A ends (k = 0: on A's last token). B starting
    further inside A (or A inside B) is the one phrase of both, where their lexemes agree.
    """
    alternatives, params = [], []
    first, second = phrase_tsquery(a), phrase_tsquery(b)
    for k in range(distance + 2):
        for (left, lp), (right, rp) in ((first, second), (second, first)):
            alternatives.append(f"tsquery_phrase({left}, {right}, {k})")
            params += lp + rp
    for offset in range(2 - len(b.terms), len(a.terms) - 1):  # where B starts, from A's start
        merged = _overlap(a, b, offset)
        if merged is not None:
            alternatives.append("(" + " <-> ".join(["%s::tsquery"] * len(merged)) + ")")
            params += merged
    return "(" + " || ".join(alternatives) + ")", params


def _overlap(a: Phrase, b: Phrase, offset: int) -> list[str] | None:
    """The tsquery terms of A and B laid over each other with B ``offset`` tokens after A's
    start; None where their lexemes cannot both stand on a token."""
    slots: dict[int, list[Term]] = {}
    for at, term in enumerate(a.terms):
        slots.setdefault(at, []).append(term)
    for at, term in enumerate(b.terms):
        slots.setdefault(offset + at, []).append(term)
    out = []
    for at in sorted(slots):
        terms = [(lexeme(t.token), t.prefix) for t in slots[at]]
        exact = {lex for lex, prefix in terms if not prefix}
        prefixes = [lex for lex, prefix in terms if prefix]
        if len(exact) > 1:
            return None
        if exact:
            word = exact.pop()
            if not all(word.startswith(p) for p in prefixes):
                return None
            out.append(_tsquery_text(word))
        else:
            longest = max(prefixes, key=len)
            if not all(longest.startswith(p) for p in prefixes):
                return None
            out.append(_tsquery_text(longest, prefix=True))
    return out
