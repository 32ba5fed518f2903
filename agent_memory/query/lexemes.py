"""Tokens and lexemes as FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer makes them.

Why here and not in a database: the PostgreSQL backend must store and query FTS5's own
lexemes for bm25 parity (see agent_memory.query), so unicode61's tables (taken from
SQLite, agent_memory/query/unicode61.py) and FTS5's porter stemmer, step for step on UTF-8 bytes,
are reproduced in Python.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence

from agent_memory.query import unicode61

# Where FTS5 cuts a token, in UTF-8 bytes.
MAX_TOKEN_BYTES = 32_768
# The porter stemmer leaves tokens outside these lengths (in UTF-8 bytes) as they are.
PORTER_MIN_BYTES = 3
PORTER_MAX_BYTES = 64
# Distinct tokens whose lexemes are kept (a few MiB at most).
LEXEME_CACHE_TOKENS = 65_536


def token_ranges(runs: tuple[int, ...] = unicode61.TOKEN_RUNS) -> list[tuple[int, int]]:
    """unicode61's token characters as (first, last) code point ranges."""
    return [
        (runs[i], runs[i + 1] - 1 if i + 1 < len(runs) else 0x10FFFF)
        for i in range(0, len(runs), 2)
    ]


def _char_class(runs: tuple[int, ...], extra: frozenset[int] = frozenset()) -> str:
    ranges = token_ranges(runs) + [(cp, cp) for cp in sorted(extra)]
    return "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)


# A token starts at a token character and goes on through token characters and diacritics.
_STARTS = _char_class(unicode61.TOKEN_RUNS)
_TOKEN = re.compile(f"[{_STARTS}][{_STARTS}{_char_class((), unicode61.DIACRITICS)}]*")
# The same in ASCII text, where the token characters are letters and digits and no character
# is a diacritic: a plain class, which the regex engine matches far faster than the whole
# one (the near-duplicate check tokenizes every candidate's text).
_ASCII_TOKEN = re.compile("[0-9A-Za-z]+")


def tokens(text: str) -> list[str]:
    """The tokens unicode61 finds in ``text``, as written (``sqlite_vec 2.0`` -> 4 tokens)."""
    return _ASCII_TOKEN.findall(text) if text.isascii() else _TOKEN.findall(text)


def tag_text(tags: Sequence[str]) -> str:
    """A memory's tags as the SQLite store keeps them and the keyword index reads them: a
    JSON array. Its quotes, brackets and commas are no token characters, so each tag keeps
    its own tokens, in order; only a control character, written as an escape (``\\n``),
    joins its letter to the token after it, alike on both engines."""
    return json.dumps(list(tags), ensure_ascii=False)


@functools.lru_cache(maxsize=LEXEME_CACHE_TOKENS)
def fold(token: str) -> str:
    """unicode61's case folding and diacritic removal of one token (cached as ``lexeme``
    is: the near-duplicate check folds every token of its candidates)."""
    out = []
    for char in token:
        code = ord(char)
        if code in unicode61.DIACRITICS:
            continue
        out.append(chr(unicode61.FOLD.get(code, code)))
    return "".join(out)


@functools.lru_cache(maxsize=LEXEME_CACHE_TOKENS)
def lexeme(token: str) -> str:
    """What FTS5's ``porter unicode61 remove_diacritics 2`` indexes for ``token`` (cached:
    words repeat across memories, and the stemmer in Python is a large share of a PostgreSQL
    store's time)."""
    raw = fold(token).encode()
    if PORTER_MIN_BYTES <= len(raw) <= PORTER_MAX_BYTES:
        raw = _porter(raw)
    return raw[:MAX_TOKEN_BYTES].decode(errors="ignore")


def _is_vowel(char: int, y_is_vowel: bool) -> bool:
    return char in b"aeiou" or (y_is_vowel and char == ord("y"))


def _gobble_vc(stem: bytes, previous_consonant: bool) -> int:
    """The length of the stem's first vowels-then-consonant run (0: there is none)."""
    consonant = previous_consonant
    i = 0
    while i < len(stem):
        consonant = not _is_vowel(stem[i], consonant)
        if not consonant:
            break
        i += 1
    i += 1
    while i < len(stem):
        consonant = not _is_vowel(stem[i], consonant)
        if consonant:
            return i + 1
        i += 1
    return 0


def _m_gt0(stem: bytes) -> bool:
    return _gobble_vc(stem, False) != 0


def _m_gt1(stem: bytes) -> bool:
    n = _gobble_vc(stem, False)
    return bool(n) and _gobble_vc(stem[n:], True) != 0


def _m_eq1(stem: bytes) -> bool:
    n = _gobble_vc(stem, False)
    return bool(n) and _gobble_vc(stem[n:], True) == 0


def _o_star(stem: bytes) -> bool:
    if stem[-1:] in (b"w", b"x", b"y"):
        return False
    mask, consonant = 0, False
    for char in stem:
        consonant = not _is_vowel(char, consonant)
        mask = (mask << 1) + consonant
    return (mask & 7) == 5


def _vowel(stem: bytes) -> bool:
    return any(_is_vowel(char, i > 0) for i, char in enumerate(stem))


def _m_gt1_s_or_t(stem: bytes) -> bool:
    return stem[-1:] in (b"s", b"t") and _m_gt1(stem)


_Rule = tuple[bytes, object, bytes]
# FTS5's steps 2, 3 and 4 (fts5_tokenize.c): the first suffix that ends the word decides,
# whether or not its condition holds.
_STEP2: tuple[_Rule, ...] = tuple(
    (suffix.encode(), _m_gt0, out.encode())
    for suffix, out in (
        ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"),
        ("izer", "ize"), ("logi", "log"), ("bli", "ble"), ("alli", "al"), ("entli", "ent"),
        ("eli", "e"), ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"), ("ator", "ate"),
        ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"),
        ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
    )
)  # fmt: skip
_STEP3: tuple[_Rule, ...] = tuple(
    (suffix.encode(), _m_gt0, out.encode())
    for suffix, out in (
        ("ical", "ic"), ("ness", ""), ("icate", "ic"), ("iciti", "ic"), ("ful", ""),
        ("ative", ""), ("alize", "al"),
    )
)  # fmt: skip
_STEP4: tuple[_Rule, ...] = tuple(
    (suffix.encode(), _m_gt1_s_or_t if suffix == "ion" else _m_gt1, b"")
    for suffix in (
        "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
        "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
    )
)  # fmt: skip


def _apply(word: bytes, rules: tuple[_Rule, ...]) -> bytes:
    for suffix, condition, out in rules:
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + out if condition(stem) else word  # type: ignore[operator]
    return word


def _porter(word: bytes) -> bytes:
    """FTS5's porter stemmer (fts5PorterCb), on the folded token's UTF-8 bytes."""
    # Step 1a.
    if word.endswith(b"s"):
        if word[-2:-1] == b"e":
            if (len(word) > 4 and word[-4:-2] == b"ss") or (len(word) > 3 and word[-3] == ord("i")):
                word = word[:-2]
            else:
                word = word[:-1]
        elif word[-2:-1] != b"s":
            word = word[:-1]
    # Step 1b.
    removed = False
    if len(word) > 3 and word.endswith(b"eed"):
        if _m_gt0(word[:-3]):
            word = word[:-1]
    elif len(word) > 2 and word.endswith(b"ed"):
        if _vowel(word[:-2]):
            word, removed = word[:-2], True
    elif len(word) > 3 and word.endswith(b"ing") and _vowel(word[:-3]):
        word, removed = word[:-3], True
    if removed:
        for suffix, out in ((b"at", b"ate"), (b"bl", b"ble"), (b"iz", b"ize")):
            if len(word) > 2 and word.endswith(suffix):
                word = word[:-2] + out
                break
        else:
            last = word[-1]
            if (
                len(word) > 1
                and not _is_vowel(last, False)
                and last not in b"lsz"
                and last == word[-2]
            ):
                word = word[:-1]
            elif _m_eq1(word) and _o_star(word):
                word += b"e"
    # Step 1c.
    if word.endswith(b"y") and _vowel(word[:-1]):
        word = word[:-1] + b"i"
    word = _apply(_apply(_apply(word, _STEP2), _STEP3), _STEP4)
    # Step 5a.
    if word.endswith(b"e") and (
        _m_gt1(word[:-1]) or (_m_eq1(word[:-1]) and not _o_star(word[:-1]))
    ):
        word = word[:-1]
    # Step 5b.
    if len(word) > 1 and word.endswith(b"ll") and _m_gt1(word[:-1]):
        word = word[:-1]
    return word
