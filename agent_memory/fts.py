"""FTS5 query text: the bounds on a query's cost, and the rewrite used when a query is not
valid FTS5 syntax.

Agents send plain questions ("what vector store do we use?"), hyphenated names
("sqlite-vec") and labels ("TODO: auth"). FTS5 rejects those, so the search runs the raw
query first (keeping the exact meaning of valid FTS5 such as ``sqlite AND vec`` or
``vec*``) and, only when FTS5 cannot parse it, once more as its words quoted and OR-ed.

A few hundred bytes of FTS5 can cost a minute of CPU (issue 18: ``m* OR m* ...``, a NEAR
group of 200 words, a phrase of 2,000 words at 100,000 memories), so ``check_cost``
refuses a query whose shape is past these bounds before it runs; the search's time budget
(service.SEARCH_BUDGET_SECS) stops whatever costs more anyway.
"""

from __future__ import annotations

import re

from agent_memory.errors import InvalidArgument

# Words (runs of letters and digits, as FTS5's tokenizer splits them) in the whole query:
# a long pasted question (tests/test_fts_query.py asks one of 5,001 words) fits; what many
# words cost past that is the search's time budget's to stop.
MAX_QUERY_WORDS = 10_000
# Prefix terms (``vec*``) per query, and the characters a prefix needs: ``m*`` expands to
# every indexed word starting with m (0.16 s at 100,000 memories, per occurrence).
MAX_PREFIX_TERMS = 8
MIN_PREFIX_CHARS = 2
# Words in one phrase (``"a b c"``, ``a+b``) and in one NEAR group: at 100,000 memories a
# phrase of 64 "the" took 0.42 s, a NEAR group of 16 0.5 s (and of 200, 14 s).
MAX_PHRASE_WORDS = 32
MAX_NEAR_WORDS = 10

_WORD = re.compile(r"\w+")
_TOKEN = re.compile(r"[^\W_]+")  # unicode61 splits at "_" too: "a_b" is the phrase "a b"
# FTS5's lexemes: a string (possibly unterminated), a one-character operator, blanks, and
# a bareword (everything else up to the next of those).
_LEXEME = re.compile(r'"(?:[^"]|"")*"?|[()*+:^{},]|\s+|[^\s"()*+:^{},]+')
_OPERATORS = frozenset("()*+:^{},")


def words(query: str) -> list[str]:
    return _WORD.findall(query)


def or_of(found: list[str]) -> str:
    """``["what", "s", "vec"]`` -> ``"what" OR "s" OR "vec"`` (\\w matches no quote)."""
    return " OR ".join(f'"{w}"' for w in found)


def and_of(found: list[str]) -> str:
    """``["port", "busy"]`` -> ``"port" "busy"``: the rows holding every word (FTS5's implicit
    AND; query.and_of_words is the same text as a tree)."""
    return " ".join(f'"{w}"' for w in found)


def or_of_words(query: str) -> str | None:
    """``what's sqlite-vec?`` -> ``"what" OR "s" OR "sqlite" OR "vec"``; None when wordless."""
    found = words(query)
    return or_of(found) if found else None


def _too_expensive(what: str, limit: str, got: object) -> InvalidArgument:
    return InvalidArgument(f"query is too expensive: {what} {limit} (got {got})")


def check_cost(query: str) -> None:
    """Refuse (InvalidArgument) a query past the bounds, read as FTS5 would read it.

    Loosely: a query FTS5 would refuse is searched for its words, which the word count
    bounds too, so its other bounds are asked of it as well.
    """
    count = len(_TOKEN.findall(query))
    if count > MAX_QUERY_WORDS:
        raise _too_expensive("it must have at most", f"{MAX_QUERY_WORDS} words", count)
    prefixes = phrase = near = 0
    in_near = after_near = joined = False
    last: list[str] | None = None  # the words of the string or bareword just read
    for lexeme in _LEXEME.findall(query):
        if lexeme.isspace():
            continue
        if lexeme == "*" and last is not None:
            prefixes += 1
            prefix = last[-1] if last else ""
            if len(prefix) < MIN_PREFIX_CHARS:
                limit = f"{MIN_PREFIX_CHARS} characters"
                raise _too_expensive("a prefix must have at least", limit, f"{prefix}*")
        if lexeme == "+":
            joined = True
            continue
        if lexeme == "(" and after_near:
            in_near, near = True, 0
        elif lexeme == ")":
            in_near = False
        after_near = lexeme == "NEAR"
        last = None
        if lexeme not in _OPERATORS:
            last = _TOKEN.findall(lexeme)
            phrase = (phrase if joined else 0) + len(last)
            if phrase > MAX_PHRASE_WORDS:
                limit = f"{MAX_PHRASE_WORDS} words"
                raise _too_expensive("a phrase must have at most", limit, phrase)
            near += len(last) if in_near else 0
            if near > MAX_NEAR_WORDS:
                raise _too_expensive(
                    "a NEAR group must have at most", f"{MAX_NEAR_WORDS} words", near
                )
        joined = False
    if prefixes > MAX_PREFIX_TERMS:
        raise _too_expensive("it must have at most", f"{MAX_PREFIX_TERMS} prefixes", prefixes)
