"""A search's query, read once: what every part of a search reads of the text.

``read`` lexes the text once (query.lexer) and from that one list takes the cost bounds
(query.cost), whether it is plain language, its tree (query.parser) or, when FTS5 would refuse
it, its plain-language retry. Both engines' keyword legs, bm25's scale and the explanation of a
hybrid page take the ``ParsedQuery`` it gives; none reads the text again.

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
from dataclasses import dataclass, field

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

    ``tree``: what the keyword leg searches (FTS5's reading of the text, or the OR of its
    words), None when no row can match (no words, or an FTS5 special query). ``words``: the
    text's words, the retry's; ``by_words``: the query is searched as words (then ``tree``
    is the OR of ``leaves``, one per word). ``syntax_error``: why FTS5 refuses the text.
    """

    text: str
    tree: Node | None
    words: tuple[str, ...]
    by_words: bool
    syntax_error: QuerySyntaxError | None = None
    leaves: tuple[Node, ...] = field(default=(), repr=False)

    @property
    def several_words(self) -> bool:
        """Searched as two or more distinct words: the rows holding all of them go first,
        and bm25's scale (query.bm25.scale) weighs the keyword leg of a hybrid search."""
        return self.by_words and len(set(self.words)) >= 2

    @functools.cached_property
    def _leaf_of(self) -> dict[str, Node]:
        return dict(zip(self.words, self.leaves, strict=False))  # none unless by words

    def leaf(self, word: str) -> Node:
        """The leaf of a word (of the query's, already made)."""
        found = self._leaf_of.get(word)
        return word_leaf(word) if found is None else found

    def every_word(self) -> Node:
        """The rows holding every word: FTS5's implicit AND of the words' leaves."""
        return every_word([self.leaf(word) for word in self.words])


def read(text: str | ParsedQuery, *, bounded: bool = False) -> ParsedQuery:
    """The query ``text`` as a search reads it (a query already read is itself);
    ``bounded``: refuse (InvalidArgument) a query past the cost bounds (query.cost), before
    it is parsed."""
    if isinstance(text, ParsedQuery):
        return text
    lexed = lex(text, cost.MAX_QUERY_WORDS if bounded else None)
    if bounded:
        cost.check(lexed)
    words = tuple(_WORD.findall(text))
    if is_special(text):
        return ParsedQuery(text, None, words, False)
    error = None
    if not (_plain(text, lexed) and len(set(words)) >= 2):
        try:
            return ParsedQuery(text, rewrite(parse_lexed(text, lexed)), words, False)
        except QuerySyntaxError as exc:
            error = exc
    made = {word: word_leaf(word) for word in dict.fromkeys(words)}  # a leaf per distinct word
    leaves = tuple(made[word] for word in words)
    tree = any_word(leaves) if leaves else None
    return ParsedQuery(text, tree, words, True, error, leaves)


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
