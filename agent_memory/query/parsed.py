"""A search's query, read once: what every part of a search reads of the text.

``read`` lexes the text once (query.lexer) and from that one list takes the cost bounds
(query.cost), whether it is plain language, its tree (query.parser) or, when FTS5 would refuse
it, its plain-language retry. Both engines' keyword legs, the relevance of its words and the
explanation of a page take the ``ParsedQuery`` it gives; none reads the text again.

A query is searched as words (decisions.md, "Plain-language keyword queries") when it is plain
language of two words or more, or when FTS5 would refuse it (the retry): the rows holding
every word first (``every_word``), then the rows holding its informative words
(query.bm25.plan), all scored by the OR of its words (``tree``, one leaf per word, in the
words' order, repeats kept). Runs of scripts written without spaces are rewritten as the
index holds them (query.bigrams), in every tree.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent_memory.query import cost
from agent_memory.query.bigrams import rewrite
from agent_memory.query.lexemes import tokens
from agent_memory.query.lexer import Lexed, lex
from agent_memory.query.parser import is_special, parse_lexed
from agent_memory.query.tree import And, Near, Node, Or, Phrase, QuerySyntaxError, Term

# The words of a plain-language query and of the retry: runs of letters, digits and "_".
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class ParsedQuery:
    """A query as a search reads it.

    ``words``: the text's words, the retry's; ``by_words``: the query is searched as words
    (then ``tree`` is the OR of ``leaves``, one per word, made when first asked for).
    ``syntax``: FTS5's reading of the text when it is searched as FTS5 syntax;
    ``syntax_error``: why FTS5 refuses the text; ``special``: an FTS5 special query;
    ``plain``: plain language (barewords only).
    """

    text: str
    words: tuple[str, ...]
    by_words: bool
    syntax: Node | None = None
    syntax_error: QuerySyntaxError | None = None
    special: bool = False
    plain: bool = False

    @property
    def matches_nothing(self) -> bool:
        """No row can match: an FTS5 special query, or words searched and none found."""
        return self.special or (self.by_words and not self.words)

    @property
    def several_words(self) -> bool:
        """Searched as two or more distinct words: the rows holding all of them go first."""
        return self.by_words and len(set(self.words)) >= 2

    @property
    def as_words(self) -> bool:
        """Whether a memory's relevance is what it holds of the query's words
        (ranking.relevance): a query searched as words, or one plain word; FTS5 syntax
        means exactly what it says, and its matches are weighed by bm25 alone."""
        return bool(self.words) and (self.by_words or self.plain)

    @functools.cached_property
    def _leaf_of(self) -> dict[str, Near]:
        return {word: word_leaf(word) for word in dict.fromkeys(self.words)}

    @functools.cached_property
    def leaves(self) -> tuple[Node, ...]:
        """One leaf per word, in the words' order (repeats kept)."""
        return tuple(self._leaf_of[word] for word in self.words)

    @functools.cached_property
    def tree(self) -> Node | None:
        """What the keyword leg searches: FTS5's reading of the text, or the OR of its words;
        None when no row can match."""
        if self.matches_nothing:
            return None
        return any_word(self.leaves) if self.by_words else self.syntax

    def leaf(self, word: str) -> Node:
        """The leaf of a word (of the query's, made once)."""
        found = self._leaf_of.get(word)
        return word_leaf(word) if found is None else found

    def every_word(self) -> Node:
        """The rows holding every word: FTS5's implicit AND of the words' leaves."""
        return every_word(self.leaves)


def read(text: str, *, bounded: bool = False) -> ParsedQuery:
    """The query ``text`` as a search reads it, once (the store takes what this returns);
    ``bounded``: refuse (InvalidArgument) a query past the cost bounds (query.cost), before
    it is parsed."""
    lexed = lex(text, cost.MAX_QUERY_WORDS if bounded else None)
    if bounded:
        cost.check(lexed)
    words = tuple(_WORD.findall(text))
    if is_special(text):
        return ParsedQuery(text, words, False, special=True)
    error = None
    plain = _plain(text, lexed)
    if not (plain and len(set(words)) >= 2):
        try:
            return ParsedQuery(text, words, False, rewrite(parse_lexed(text, lexed)), plain=plain)
        except QuerySyntaxError as exc:
            error = exc
    return ParsedQuery(text, words, True, syntax_error=error, plain=plain)


def _plain(text: str, lexed: Lexed) -> bool:
    """Plain language: barewords only (no operator, quote, prefix star, column filter, NEAR
    group or parenthesis), which FTS5 accepts."""
    return (
        lexed.error is None
        and not text.startswith("*")
        and all(
            lexeme.kind == "STRING" and not lexeme.text.startswith('"')
            for lexeme in lexed.lexemes[: lexed.end]
        )
    )


def word_leaf(word: str) -> Near:
    """One word as the retry searches it, the phrase ``"word"`` (its tokens; none: a leaf
    that matches nothing), rewritten as the index holds text."""
    found = tuple(Term(token) for token in tokens(word))
    leaf = Near((Phrase(found),) if found else ())
    rewritten = rewrite(leaf)
    assert isinstance(rewritten, Near)
    return rewritten


def any_word(leaves: Sequence[Node]) -> Node:
    """The OR of the leaves (one leaf alone is itself)."""
    return leaves[0] if len(leaves) == 1 else Or(tuple(leaves))


def every_word(leaves: Sequence[Node]) -> Node:
    """FTS5's implicit AND of the leaves: the word-less ones dropped, unless all are."""
    kept = [leaf for leaf in leaves if not (isinstance(leaf, Near) and not leaf.phrases)]
    if not kept:
        return leaves[-1]
    return kept[0] if len(kept) == 1 else And(tuple(kept))
