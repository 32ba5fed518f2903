"""Rendering a query tree as a PostgreSQL tsquery, bound as one parameter.

Why not ``websearch_to_tsquery`` or ``to_tsquery`` on the raw text: the first loses prefixes
and parentheses, the second raises on raw input. The tree (agent_memory.query) is FTS5's
reading of the text, so both backends match the same rows.

Why one tsquery text and not one ``%s::tsquery`` per term joined by SQL operators: a query
may hold 10,000 words (query.cost.MAX_QUERY_WORDS), and a chain of 10,000 ``||`` is deeper than
PostgreSQL's stack allows, copies the tsquery at every step, and binds a parameter per word.
The text is data for tsquery's own parser: each lexeme is quoted and escaped, never SQL.
"""

from __future__ import annotations

from agent_memory.query import COLUMNS, And, Near, Node, Not, Phrase, Term, lexeme

# The weights a memory's tsvector gives its tokens (storage/postgres/keyword.py): a column's
# first token (what ``^`` asks) and its other tokens, for each of FTS5's columns.
FIRST_WEIGHT = {"content": "A", "tags": "B"}
OTHER_WEIGHT = {"content": "D", "tags": "C"}

# A NEAR group's tsquery spells out every allowed distance; past this one it is only an AND
# of its phrases (looser than FTS5: see to_tsquery).
NEAR_SPELLED_MAX = 32
# PostgreSQL's longest lexeme, in bytes: tsvector.h's MAXSTRLEN is 2,047 and both tsvector
# and tsquery input refuse a word of that length or more ("word is too long"). Longer words
# are not stored, so a term that long matches nothing there (FTS5 keeps tokens up to
# MAX_TOKEN_BYTES).
MAX_LEXEME_BYTES = 2_046


def weights(columns: frozenset[str] | None, first: bool = False) -> str:
    """The tsquery weights of a term in ``columns`` (None: every column), at a column's first
    token when ``first``: ``""`` where any token of the row will do."""
    chosen = COLUMNS if columns is None else [c for c in COLUMNS if c in columns]
    if first:
        return "".join(FIRST_WEIGHT[c] for c in chosen)
    if len(chosen) == len(COLUMNS):
        return ""
    return "".join(FIRST_WEIGHT[c] + OTHER_WEIGHT[c] for c in chosen)


def tsquery_lexeme(term: Term, first: bool = False, columns: frozenset[str] | None = None) -> str:
    """The tsquery of one term, as tsquery input text: ``'lexeme'``, with ``:*`` for a prefix
    and the weights of its columns, and of their first token for a phrase's first term
    under ``^`` (see ``weights`` and storage/postgres/keyword.py). Lexemes are letters and
    digits only; quotes and backslashes are escaped anyway."""
    return _tsquery_text(lexeme(term.token), term.prefix, weights(columns, first))


def _tsquery_text(word: str, prefix: bool = False, weights: str = "") -> str:
    text = word.replace("\\", "\\\\").replace("'", "''")
    flags = ("*" if prefix else "") + weights
    return f"'{text}'" + (f":{flags}" if flags else "")


def to_tsquery(node: Node) -> tuple[str, list[str]]:
    """A PostgreSQL tsquery expression for ``node``: ``%s::tsquery`` and its one parameter,
    the tsquery text.

    Each term is FTS5's lexeme (see ``lexeme``), prefixes as ``:*``, phrases joined by
    ``<->``, AND / OR / NOT as ``&`` / ``|`` / ``& !``. A column filter asks each term at
    its columns' weights; a ``^`` phrase asks its first lexeme at the weight of a column's
    first token (``weights``).

    Where it differs from FTS5: a NEAR group of two phrases is spelled out as every order and
    distance FTS5 allows (``A <k> B``: B starts k - 1 tokens after A ends), except overlaps of
    more than one token; a group of three or more phrases is the AND of its pairs, which also
    matches rows where each pair is near in a different place; past NEAR_SPELLED_MAX tokens a
    group is the AND of its phrases. When nothing can match (a word-less leaf under AND, an
    excluding column filter), the fragment is ``NULL::tsquery``, which matches no row.
    """
    rendered = tsquery_text(node)
    return ("%s::tsquery", [rendered]) if rendered is not None else ("NULL::tsquery", [])


def tsquery_text(node: Node) -> str | None:
    """The tsquery input text of ``node``; None where FTS5 would match no row at all."""
    if isinstance(node, Near):
        return _tsq_leaf(node)
    if isinstance(node, Not):
        left, right = tsquery_text(node.left), tsquery_text(node.right)
        if left is None or right is None:
            return left
        return f"({left} & !{right})"
    parts = [tsquery_text(child) for child in node.children]
    if isinstance(node, And):
        if any(part is None for part in parts):
            return None
        joiner = " & "
    else:
        joiner = " | "
    kept = [part for part in parts if part is not None]
    return "(" + joiner.join(kept) + ")" if kept else None


def phrase_text(phrase: Phrase, columns: frozenset[str] | None = None) -> str:
    """One phrase as tsquery text, in ``columns`` (None: any): its lexemes joined by
    ``<->`` (in parentheses when more than one)."""
    words = [
        tsquery_lexeme(term, phrase.first and i == 0, columns)
        for i, term in enumerate(phrase.terms)
    ]
    return words[0] if len(words) == 1 else "(" + " <-> ".join(words) + ")"


def phrase_tsquery(phrase: Phrase, columns: frozenset[str] | None = None) -> tuple[str, list[str]]:
    """One phrase as a tsquery expression: ``%s::tsquery`` and its text (phrase_text)."""
    return "%s::tsquery", [phrase_text(phrase, columns)]


def storable(phrase: Phrase) -> bool:
    """Whether PostgreSQL can hold every lexeme of the phrase (else it matches nothing)."""
    return all(len(lexeme(term.token).encode()) <= MAX_LEXEME_BYTES for term in phrase.terms)


def _tsq_leaf(node: Near) -> str | None:
    if not node.phrases or (node.columns is not None and not node.columns):
        return None
    if not all(storable(phrase) for phrase in node.phrases):
        return None
    if len(node.phrases) == 1:
        return phrase_text(node.phrases[0], node.columns)
    if not 0 <= node.distance <= NEAR_SPELLED_MAX:
        texts = [phrase_text(phrase, node.columns) for phrase in node.phrases]
        return "(" + " & ".join(texts) + ")"
    pairs = []
    for i in range(len(node.phrases)):
        for j in range(i + 1, len(node.phrases)):
            pairs.append(_near_pair(node.phrases[i], node.phrases[j], node.distance, node.columns))
    return "(" + " & ".join(pairs) + ")"


def _near_pair(a: Phrase, b: Phrase, distance: int, columns: frozenset[str] | None) -> str:
    """``A`` and ``B`` at most ``distance`` tokens apart, in either order, overlaps included.

    ``A <k> B``: B starts k - 1 tokens after A ends (k = 0: on A's last token). B starting
    further inside A (or A inside B) is the one phrase of both, where their lexemes agree.
    """
    alternatives = []
    first, second = phrase_text(a, columns), phrase_text(b, columns)
    for k in range(distance + 2):
        for left, right in ((first, second), (second, first)):
            alternatives.append(f"{left} <{k}> {right}")
    for offset in range(2 - len(b.terms), len(a.terms) - 1):  # where B starts, from A's start
        merged = _overlap(a, b, offset, columns)
        if merged is not None:
            alternatives.append("(" + " <-> ".join(merged) + ")")
    return "(" + " | ".join(alternatives) + ")"


def _overlap(a: Phrase, b: Phrase, offset: int, columns: frozenset[str] | None) -> list[str] | None:
    """The tsquery terms of A and B laid over each other with B ``offset`` tokens after A's
    start, in ``columns``; None where their lexemes cannot both stand on a token."""
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
            out.append(_tsquery_text(word, weights=weights(columns)))
        else:
            longest = max(prefixes, key=len)
            if not all(longest.startswith(p) for p in prefixes):
                return None
            out.append(_tsquery_text(longest, prefix=True, weights=weights(columns)))
    return out
