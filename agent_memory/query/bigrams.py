"""Scripts written without spaces between words, indexed as overlapping bigrams.

unicode61 ends a token only at a character that is not a letter or a digit, so a Chinese or
Japanese sentence is one token (``我们选择了数据库PostgreSQL``): neither ``数据库`` nor
``PostgreSQL`` finds it, and a Korean word is one token with its particle
(``데이터베이스를``). So the keyword index reads such text rewritten (``indexed_text``): each
run of these scripts' characters becomes one token per character, that character and the
next one (the run's last character alone), set apart by spaces: ``数据库`` -> ``数据 据库 库``.
Every character starts exactly one token, so positions still count characters and phrases,
NEAR and ``^`` keep their meaning.

A query's runs are rewritten the same way, once, on the parsed tree (``rewrite``), so that
both engines search alike: a run becomes its bigrams in a phrase (``数据库`` -> ``"数据 据库"``),
which matches wherever those characters stand in a row, inside any longer run. A run that
something follows in its phrase ends with its last character alone (the token a run ends
with); a single character is the prefix ``数 *``, the one token each of its occurrences starts.

Bigrams, not FTS5's ``trigram`` tokenizer: most Chinese words are two characters, which
trigrams cannot match, and a trigram index would hold every three letters of Latin text
too. Text without these scripts is indexed and searched unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent_memory.query.lexemes import tag_text, token_ranges, tokens
from agent_memory.query.tree import Near, Node, Not, Phrase, Term

# Unicode blocks of scripts written without spaces between words (Korean has spaces, but
# particles join the word before them). Only their letters and digits (unicode61's token
# characters) are rewritten; their punctuation already ends a token.
UNSEGMENTED_BLOCKS = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x1780, 0x17FF),  # Khmer
    (0x2E80, 0x2FDF),  # CJK and Kangxi radicals
    (0x3000, 0x31FF),  # CJK symbols (々 〆 〇), kana, Bopomofo, Hangul letters, strokes
    (0x3400, 0x4DBF),  # CJK ideographs, extension A
    (0x4E00, 0x9FFF),  # CJK ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xAC00, 0xD7FF),  # Hangul syllables, Jamo extended B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFFDC),  # halfwidth katakana and Hangul
    (0x1B000, 0x1B16F),  # kana supplement and extensions
    (0x20000, 0x3FFFF),  # CJK ideographs, extensions B and later
)


def _run_class() -> str:
    """The regex class of the characters rewritten: token characters in those blocks."""
    ranges = []
    for lo, hi in token_ranges():
        for block_lo, block_hi in UNSEGMENTED_BLOCKS:
            if lo <= block_hi and block_lo <= hi:
                ranges.append((max(lo, block_lo), min(hi, block_hi)))
    return "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in sorted(ranges))


_RUN = re.compile(f"[{_run_class()}]+")


def unsegmented(text: str) -> bool:
    """Whether ``text`` holds a character of these scripts (then its index text differs)."""
    return _RUN.search(text) is not None


def _grams(run: str) -> list[str]:
    """A run's tokens in the index: each character with the next, the last one alone."""
    return [run[i : i + 2] for i in range(len(run))]


def indexed_text(text: str) -> str | None:
    """The text the keyword index reads for ``text``: each run of these scripts written out
    as its bigrams between spaces; None when there is none (the index reads ``text``)."""
    if not unsegmented(text):
        return None
    return _RUN.sub(lambda run: " " + " ".join(_grams(run.group())) + " ", text)


def indexed_tags(tags: Sequence[str]) -> str | None:
    """What the keyword index reads for ``tags`` instead of their text (lexemes.tag_text),
    as ``indexed_text`` for content; None when it reads their text."""
    return indexed_text(tag_text(tags))


def _pieces(token: str) -> list[tuple[str, bool]]:
    """(text, is a run) in order: the runs of a token, and the tokens of the rest."""
    out: list[tuple[str, bool]] = []
    at = 0
    for run in _RUN.finditer(token):
        out += [(word, False) for word in tokens(token[at : run.start()])]
        out.append((run.group(), True))
        at = run.end()
    out += [(word, False) for word in tokens(token[at:])]
    return out


def _phrase(phrase: Phrase) -> Phrase:
    """The phrase with each run of its terms as the index holds it (see the module)."""
    if not any(unsegmented(term.token) for term in phrase.terms):
        return phrase
    pieces: list[tuple[str, bool, bool]] = []  # text, is a run, prefix
    for term in phrase.terms:
        found = _pieces(term.token)
        last = len(found) - 1
        pieces += [(text, run, term.prefix and i == last) for i, (text, run) in enumerate(found)]
    terms: list[Term] = []
    for i, (text, run, prefix) in enumerate(pieces):
        if not run:
            terms.append(Term(text, prefix))
            continue
        terms += [Term(gram) for gram in _grams(text)[:-1]]
        if i + 1 < len(pieces):
            terms.append(Term(text[-1], prefix))  # where the run ends (or, with *, goes on)
        elif len(text) == 1:
            terms.append(Term(text, prefix=True))
    return Phrase(tuple(terms), phrase.first)


def rewrite(node: Node) -> Node:
    """``node`` with every run of these scripts in its terms as a phrase of the index's
    bigrams; the same node when it holds none."""
    if isinstance(node, Near):
        phrases = tuple(_phrase(phrase) for phrase in node.phrases)
        if phrases == node.phrases:
            return node
        return Near(phrases, node.distance, node.columns)
    if isinstance(node, Not):
        left, right = rewrite(node.left), rewrite(node.right)
        return node if (left, right) == (node.left, node.right) else Not(left, right)
    children = tuple(rewrite(child) for child in node.children)
    return node if children == node.children else type(node)(children)
