"""FTS5's lexemes (fts5ExprGetToken), read once per query.

The parser (query.parser), the cost bounds (query.cost) and the plain-language test
(query.parsed) all read the one list ``lex`` makes. Unlike FTS5's lexer, ``lex`` goes on past
a character FTS5 refuses (an ``ERROR`` lexeme) so that the bounds and the words of the retry
are read from the whole text; the first error FTS5 would raise is kept in ``Lexed.error``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent_memory.query.lexemes import tokens
from agent_memory.query.tree import QuerySyntaxError

_SPACE = " \t\n\r"
_PUNCT = {
    "(": "LP", ")": "RP", "{": "LCP", "}": "RCP", ":": "COLON", ",": "COMMA", "+": "PLUS",
    "*": "STAR", "-": "MINUS", "^": "CARET",
}  # fmt: skip
KEYWORDS = {"OR": "OR", "AND": "AND", "NOT": "NOT"}
_BAREWORD = re.compile(r"[0-9A-Za-z_\x1a\x80-\U0010ffff]+")
_NUL = "\x00"


@dataclass(frozen=True)
class Lexeme:
    """One lexeme: ``kind`` (LP, STRING, OR, ..., ERROR, EOF), its ``text`` as written, and
    the tokens it holds (a STRING's, its quotes taken off; a keyword is one token)."""

    kind: str
    text: str
    tokens: tuple[str, ...] = ()


EOF = Lexeme("EOF", "")


@dataclass(frozen=True)
class Lexed:
    """The lexemes of a whole text, in order, ending with EOF.

    FTS5 reads a C string: it sees ``lexemes[:end]`` (up to the first NUL), then EOF.
    ``error``: the error FTS5's lexer raises in that part, else None. ``words``: the tokens
    of the whole text (what the word bound counts); when lexing stopped at ``max_words``,
    ``lexemes`` is cut short but ``words`` still counts every token.
    """

    lexemes: tuple[Lexeme, ...]
    end: int
    error: QuerySyntaxError | None
    words: int

    def fts5(self) -> list[Lexeme]:
        """What FTS5's parser reads: the lexemes before the first NUL, then EOF."""
        return [*self.lexemes[: self.end], EOF]


def _string(text: str, at: int) -> int:
    """Where the string starting at ``at`` ends (past its closing quote), or -1 when it is
    not terminated."""
    end = at + 1
    while True:
        end = text.find('"', end)
        if end < 0:
            return -1
        if text[end + 1 : end + 2] != '"':
            return end + 1
        end += 2


def dequote(text: str) -> str:
    return text[1:-1].replace('""', '"') if text.startswith('"') else text


def lex(text: str, max_words: int | None = None) -> Lexed:
    """The lexemes of ``text`` as fts5ExprGetToken cuts them, on through what it refuses.

    What follows a NUL is lexed on its own (FTS5 never reads it; the bounds and the retry's
    words do). With ``max_words``, lexing stops once the text has more tokens than that
    (the rest is only counted)."""
    head, nul, tail = text.partition(_NUL)
    out: list[Lexeme] = []
    error, words = _lex(head, out, max_words)
    end = len(out)
    if nul:
        words += _lex(tail, out, None if max_words is None else max_words - words)[1]
    return Lexed((*out, EOF), end, error, words)


def _lex(
    text: str, out: list[Lexeme], max_words: int | None
) -> tuple[QuerySyntaxError | None, int]:
    """Appends the lexemes of ``text`` to ``out``: (the first error FTS5 raises, the tokens
    counted)."""
    error: QuerySyntaxError | None = None
    words = at = 0
    while True:
        while at < len(text) and text[at] in _SPACE:
            at += 1
        if at == len(text):
            return error, words
        if max_words is not None and words > max_words:
            return error, words + len(tokens(text[at:]))
        char = text[at]
        lexeme, at = _next(text, at)
        if error is None and (lexeme.kind == "ERROR" or (char == '"' and at == -1)):
            message = "unterminated string" if char == '"' else f'fts5: syntax error near "{char}"'
            error = QuerySyntaxError(message)
        if at == -1:
            at = len(text)
        words += len(lexeme.tokens)
        out.append(lexeme)


def _next(text: str, at: int) -> tuple[Lexeme, int]:
    """The lexeme at ``at`` and where the next one starts; -1 for an unterminated string,
    which holds the rest of the text (and its tokens)."""
    char = text[at]
    if char in _PUNCT:
        return Lexeme(_PUNCT[char], char), at + 1
    if char == '"':
        end = _string(text, at)
        found = text[at:] if end < 0 else text[at:end]
        inside = found[1:] if end < 0 else dequote(found)
        return Lexeme("STRING", found, tuple(tokens(inside))), end
    word = _BAREWORD.match(text, at)
    if word is None:
        return Lexeme("ERROR", char), at + 1
    found = word.group()
    keyword = KEYWORDS.get(found)
    if keyword is not None:
        return Lexeme(keyword, found, (found,)), word.end()
    return Lexeme("STRING", found, tuple(tokens(found))), word.end()
