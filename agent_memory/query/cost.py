"""The bounds on a query's cost, read from its lexemes before it runs.

A few hundred bytes of FTS5 can keep a search running far past any budget (``m* OR m* ...``,
a NEAR group of 200 words, a phrase of 2,000 words), so a query whose shape is past these
bounds is refused before it runs; the search's time budget (service.SEARCH_BUDGET_SECS) stops
whatever costs more anyway. Each bound sits below the size at which its shape alone takes
a large share of that budget.

The bounds are read on the lexemes as FTS5 would read them, whether or not FTS5 accepts the
text: a text FTS5 refuses is searched for its words, which the word bound covers, and its
other bounds are asked of it as well.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_memory.contract.errors import InvalidArgument
from agent_memory.query.lexer import Lexed

# Tokens in the whole query: a long pasted question fits; what many words cost past that is
# the search's time budget's to stop.
MAX_QUERY_WORDS = 10_000
# Prefix terms (``vec*``) per query, and the characters a prefix needs: ``m*`` expands to
# every indexed word starting with m.
MAX_PREFIX_TERMS = 8
MIN_PREFIX_CHARS = 2
# Tokens in one phrase (``"a b c"``, ``a+b``) and in one NEAR group.
MAX_PHRASE_WORDS = 32
MAX_NEAR_WORDS = 10


def too_expensive(what: str, limit: str, got: object) -> InvalidArgument:
    return InvalidArgument(f"query is too expensive: {what} {limit} (got {got})")


@dataclass
class _Walk:
    """What the walk over the lexemes has seen so far."""

    prefixes: int = 0
    phrase: int = 0
    near: int = 0
    in_near: bool = False
    after_near: bool = False
    joined: bool = False
    last: tuple[str, ...] | None = None  # the tokens of the string just read


def check(lexed: Lexed) -> None:
    """Refuse (InvalidArgument) a query past the bounds: the word bound first, then the first
    bound broken in the text's order, then the prefix count."""
    if lexed.words > MAX_QUERY_WORDS:
        raise too_expensive("it must have at most", f"{MAX_QUERY_WORDS} words", lexed.words)
    walk = _Walk()
    for lexeme in lexed.lexemes:
        kind = lexeme.kind
        if kind == "STAR" and walk.last is not None:
            walk.prefixes += 1
            prefix = walk.last[-1] if walk.last else ""
            if len(prefix) < MIN_PREFIX_CHARS:
                limit = f"{MIN_PREFIX_CHARS} characters"
                raise too_expensive("a prefix must have at least", limit, f"{prefix}*")
        if kind == "PLUS":
            walk.joined = True
            continue
        if kind == "LP" and walk.after_near:
            walk.in_near, walk.near = True, 0
        elif kind == "RP":
            walk.in_near = False
        walk.after_near = kind == "STRING" and lexeme.text == "NEAR"
        walk.last = lexeme.tokens if kind in ("STRING", "OR", "AND", "NOT") else None
        if walk.last is not None:
            _phrase(walk, len(walk.last))
        walk.joined = False
    if walk.prefixes > MAX_PREFIX_TERMS:
        raise too_expensive("it must have at most", f"{MAX_PREFIX_TERMS} prefixes", walk.prefixes)


def _phrase(walk: _Walk, tokens: int) -> None:
    """Counts a string's tokens into its phrase and its NEAR group."""
    walk.phrase = (walk.phrase if walk.joined else 0) + tokens
    if walk.phrase > MAX_PHRASE_WORDS:
        raise too_expensive("a phrase must have at most", f"{MAX_PHRASE_WORDS} words", walk.phrase)
    walk.near += tokens if walk.in_near else 0
    if walk.near > MAX_NEAR_WORDS:
        raise too_expensive("a NEAR group must have at most", f"{MAX_NEAR_WORDS} words", walk.near)
