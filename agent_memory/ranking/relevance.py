"""How relevant a memory is to a query on each leg of a search, on scales that mean the same
for every query, store and model (ranking.py fuses them and ends the page on them).

Keyword: the share of the query's information a memory holds. Each word of a plain query
carries ``information(rows, hits)``, bm25's IDF without its floor: rare words much, a word
held by every memory little but never nothing, so that in a store of two memories a word
both hold still matches. A memory scores bm25 with these weights (FTS5's k1, b, average
length and tag weight) plus, for each pair of words typed next to each other that it holds
next to each other in the same order, the information of the pair's rarer word (a phrase is
at least as rare as its rarest word); divided by the sum of the words' information (what a
memory of average length holding each word once scores), and held to 1. A memory holding
only a question's small words, or one word of many, gets a small share; one holding the
words the way they were typed, the most.

The memory's text is read here, in Python, as FTS5's tokenizer reads it (query.lexemes):
both engines get the same shares from the same text.

Meaning: how many standard deviations a memory's similarity stands above the query's
similarity to texts about nothing a memory store holds (embedders/calibration.py), which
puts every model's cosine on one scale.
"""

from __future__ import annotations

import collections
import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from agent_memory.contract.models import Noise
from agent_memory.query.bigrams import indexed_text
from agent_memory.query.bm25 import BM25_B, BM25_K1, TAG_WEIGHT
from agent_memory.query.lexemes import lexeme, tag_text, tokens
from agent_memory.query.parsed import word_leaf

# A word as the index holds it: its terms' lexemes, each with whether it is a prefix (the
# last character of a run of a script written without spaces, query.bigrams).
Phrase = tuple[tuple[str, bool], ...]
# Texts read into lexemes are kept, this many, when at most TEXT_CACHE_CHARS long.
TEXT_CACHE_ENTRIES = 8_192
TEXT_CACHE_CHARS = 4_096


def information(rows: int, hits: int) -> float:
    """What a word held by ``hits`` of ``rows`` memories tells: ln(1 + (N - n + 0.5) /
    (n + 0.5)), above 0 however common the word (FTS5's IDF floors at 1e-6 instead)."""
    hits = min(max(hits, 0), rows)
    return math.log(1.0 + (rows - hits + 0.5) / (hits + 0.5))


@functools.lru_cache(maxsize=TEXT_CACHE_ENTRIES)
def phrase(word: str) -> Phrase:
    """A query word as the engines search it (query.parsed.word_leaf): its terms' lexemes,
    in order, a word of a script written without spaces as its bigrams."""
    leaf = word_leaf(word)
    if not leaf.phrases:
        return ()
    return tuple((lexeme(term.token), term.prefix) for term in leaf.phrases[0].terms)


class Text:
    """A text as the keyword index reads it: its lexemes, in order, and how often each
    occurs (read once per text: the same memories come back search after search)."""

    __slots__ = ("_pairs", "lexemes", "seq", "vocabulary")

    def __init__(self, seq: list[str]) -> None:
        self.seq = seq
        self.vocabulary: dict[str, int] = collections.Counter(seq)
        self.lexemes = frozenset(self.vocabulary)
        self._pairs: frozenset[tuple[str, str]] | None = None

    def holds(self, wanted: Phrase) -> bool:
        """Whether ``wanted`` occurs: two whole lexemes (a pair of words typed together,
        the usual case) are looked up among the text's pairs of neighbours."""
        if len(wanted) == 2 and not wanted[0][1] and not wanted[1][1]:
            if self._pairs is None:
                self._pairs = frozenset(itertools.pairwise(self.seq))
            return (wanted[0][0], wanted[1][0]) in self._pairs
        return self.count(wanted) > 0

    def count(self, wanted: Phrase) -> int:
        """How often ``wanted`` occurs (list searches, not a loop over every lexeme)."""
        seq = self.seq
        first, prefix = wanted[0]
        if not prefix and first not in self.vocabulary:
            return 0
        if len(wanted) == 1 and not prefix:
            return self.vocabulary.get(first, 0)
        found, size = 0, len(seq)
        for i in self._starts(first, prefix):
            found += all(
                i + k < size and (seq[i + k].startswith(term) if open_ else seq[i + k] == term)
                for k, (term, open_) in enumerate(wanted[1:], start=1)
            )
        return found

    def _starts(self, first: str, prefix: bool) -> list[int]:
        seq = self.seq
        if prefix:
            return [i for i, item in enumerate(seq) if item.startswith(first)]
        out, at = [], -1
        while True:
            try:
                at = seq.index(first, at + 1)
            except ValueError:
                return out
            out.append(at)


@functools.lru_cache(maxsize=TEXT_CACHE_ENTRIES)
def _read(text: str) -> Text:
    return Text([lexeme(t) for t in tokens(indexed_text(text) or text)])


@functools.lru_cache(maxsize=TEXT_CACHE_ENTRIES)
def _read_tags(tags: tuple[str, ...]) -> Text:
    return read_text(tag_text(tags))


def read_text(text: str) -> Text:
    """``text`` as the keyword index reads it (cached for texts of up to TEXT_CACHE_CHARS:
    the same memories come back search after search)."""
    return _read(text) if len(text) <= TEXT_CACHE_CHARS else _read.__wrapped__(text)


class Match(NamedTuple):
    """What a memory holds of a query: its share of the query's information (0 to 1), the
    words it holds and the pairs it holds as they were typed (explain). A tuple: one is
    made for every candidate of every search."""

    share: float
    words: tuple[str, ...]
    together: tuple[str, ...]


@dataclass(frozen=True)
class Words:
    """A plain query's words as the keyword relevance weighs them: each distinct word (as
    typed) with its lexemes, its information and the memories holding it, the pairs typed
    next to each other, and the index's average memory length (bm25's avgdl)."""

    typed: tuple[str, ...]
    phrases: tuple[Phrase, ...]
    weights: tuple[float, ...]
    hits: tuple[int, ...]
    pairs: tuple[tuple[int, int], ...]
    average_length: float

    @classmethod
    def of(
        cls, words: Sequence[str], rows: int, hits: Mapping[str, int], average_length: float
    ) -> Words | None:
        """The words of a plain query over an index of ``rows`` memories, ``hits[word]`` of
        them holding each word; None when no word has a lexeme or the index is empty."""
        index: dict[Phrase, int] = {}
        typed, phrases, weights, held, order = [], [], [], [], []
        for word in words:
            lexed = phrase(word)
            if not lexed or not all(term for term, _ in lexed):
                order.append(None)
                continue
            if lexed not in index:
                index[lexed] = len(phrases)
                typed.append(word)
                phrases.append(lexed)
                weights.append(information(rows, hits.get(word, 0)))
                held.append(hits.get(word, 0))
            order.append(index[lexed])
        if not phrases or rows <= 0:
            return None
        pairs = dict.fromkeys(
            (a, b)
            for a, b in itertools.pairwise(order)
            if a is not None and b is not None and a != b
        )
        return cls(
            tuple(typed), tuple(phrases), tuple(weights), tuple(held), tuple(pairs), average_length
        )

    @functools.cached_property
    def _firsts(self) -> frozenset[str] | None:
        """The first lexeme of every word, which a text must hold to hold the word; None
        when a word ends in a prefix (any text may hold it)."""
        if any(prefix for p in self.phrases for _, prefix in p):
            return None
        return frozenset(p[0][0] for p in self.phrases)

    @functools.cached_property
    def _terms(self) -> tuple[tuple[int, str | None, Phrase, float], ...]:
        """Each word's index, its lexeme when it is one whole lexeme (most are: looked up,
        not searched for), its phrase and its information."""
        return tuple(
            (i, p[0][0] if len(p) == 1 and not p[0][1] else None, p, w)
            for i, (p, w) in enumerate(zip(self.phrases, self.weights, strict=True))
        )

    @functools.cached_property
    def weight_of(self) -> dict[str, float]:
        """Each word's information, by the word as typed."""
        return dict(zip(self.typed, self.weights, strict=True))

    @functools.cached_property
    def total(self) -> float:
        """The information of the whole query: what a memory holding each word once, of
        average length, scores."""
        return math.fsum(self.weights)

    def match(self, content: str, tags: Sequence[str]) -> Match:
        """What a memory of ``content`` and ``tags`` holds of these words."""
        text = _read(content) if len(content) <= TEXT_CACHE_CHARS else read_text(content)
        tagged = _read_tags(tuple(tags)) if tags else _EMPTY
        firsts = self._firsts
        if (
            firsts is not None
            and firsts.isdisjoint(text.lexemes)
            and firsts.isdisjoint(tagged.lexemes)
        ):
            return _NOTHING
        counts, tag_counts = text.vocabulary, tagged.vocabulary
        norm = BM25_K1 * (
            1 - BM25_B + BM25_B * (len(text.seq) + len(tagged.seq)) / self.average_length
        )
        score = 0.0
        held: list[int] = []
        for i, single, wanted, weight in self._terms:
            if single is not None:
                tf = counts.get(single, 0)
                if tag_counts:
                    tf += TAG_WEIGHT * tag_counts.get(single, 0)
            else:
                tf = text.count(wanted) + TAG_WEIGHT * tagged.count(wanted)
            if tf:
                held.append(i)
                score += weight * (tf * (BM25_K1 + 1)) / (tf + norm)
        if not held:
            return _NOTHING
        together = []
        if self.pairs and len(held) > 1:
            for a, b in self.pairs:
                if a in held and b in held:
                    joined = self.phrases[a] + self.phrases[b]
                    if text.holds(joined) or tagged.holds(joined):
                        together.append(f"{self.typed[a]} {self.typed[b]}")
                        score += max(self.weights[a], self.weights[b])
        total = self.total
        share = min(score / total, 1.0) if total > 0 else 0.0
        typed = self.typed
        return Match(share, tuple([typed[i] for i in held]), tuple(together))


_NOTHING = Match(0.0, (), ())
_EMPTY = Text([])


def sigmas(similarity: float, noise: Noise) -> float:
    """How many standard deviations ``similarity`` stands above ``noise``'s mean (0 when the
    noise has no spread)."""
    return (similarity - noise.mean) / noise.std if noise.std > 0 else 0.0
