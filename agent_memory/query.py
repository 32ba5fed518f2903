"""The FTS5 query language, parsed once into a tree and rendered for each storage backend.

Why a parser of our own: the SQLite backend hands the raw text to FTS5, but PostgreSQL has no
FTS5. ``websearch_to_tsquery`` loses prefixes and parentheses and ``to_tsquery`` raises on raw
input, so the PostgreSQL backend needs the query as FTS5 understood it, and the choice between
the query and its plain-language retry (decisions.md, "FTS query handling") must not depend on
the backend. So ``parse`` accepts exactly the texts FTS5 accepts (the grammar of fts5parse.y
with its precedences, the checks FTS5 makes while building the tree, its parser's 100-entry
stack and its 256-deep tree limit) and raises ``QuerySyntaxError`` where FTS5 raises; the tests
hold it to SQLite's own answers on many hand-written and generated queries. The one deliberate
difference: ``*reads`` and ``*id`` are FTS5 "special queries" (a counter row, not a search);
``parse`` refuses them too, and ``search_tree`` gives None for them, as the SQLite app finds
nothing for them.

Terms keep the token text as written; ``lexeme`` turns a token into what FTS5's ``porter
unicode61 remove_diacritics 2`` tokenizer stores (unicode61's character tables are measured from
SQLite, see agent_memory/unicode61.py; the porter stemmer is FTS5's, step for step, on UTF-8
bytes). A PostgreSQL text search configuration (unaccent + snowball porter) came close but not
equal: on 120,053 distinct words it gave other lexemes for 581 (numbers such as ``1e10`` and
hex ids dropped or split by PostgreSQL's parser, ``as``/``is`` stemmed, ``assembly`` ->
``assembli``, ligatures expanded). bm25 parity needs FTS5's lexemes, so both documents and
queries get theirs from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent_memory import unicode61

# FTS5's limits (fts5Int.h, fts5_expr.c, fts5parse.y): the NEAR distance when none is given,
# the deepest expression tree, the parser's stack, and where a token is cut.
NEAR_DEFAULT = 10
MAX_TREE_DEPTH = 256
PARSER_STACK = 100
MAX_TOKEN_BYTES = 32_768
# The porter stemmer leaves tokens outside these lengths (in UTF-8 bytes) as they are.
PORTER_MIN_BYTES = 3
PORTER_MAX_BYTES = 64
# A NEAR group's tsquery spells out every allowed distance; past this one it is only an AND
# of its phrases (looser than FTS5: see to_tsquery).
NEAR_SPELLED_MAX = 32
# The column the PostgreSQL backend searches (FTS5's table has this one column too).
COLUMNS = ("content",)
# PostgreSQL's longest lexeme (tsvector.h), in bytes: longer words are not stored, so a term
# that long matches nothing there (FTS5 keeps tokens up to MAX_TOKEN_BYTES).
MAX_LEXEME_BYTES = 2_047

_WORD = re.compile(r"\w+")


class QuerySyntaxError(ValueError):
    """FTS5 would refuse this query (the message follows FTS5's)."""


# -- The tree ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """One token as written (unfolded, unstemmed); ``prefix`` for ``abc*``."""

    token: str
    prefix: bool = False


@dataclass(frozen=True)
class Phrase:
    """Tokens that must follow one another; ``first``: at the column's first token (``^``)."""

    terms: tuple[Term, ...]
    first: bool = False


@dataclass(frozen=True)
class Near:
    """A leaf: one phrase, or a NEAR group of phrases within ``distance`` tokens.

    No phrases: a string without a single token (``""``, ``—``), which FTS5 keeps as a leaf
    that matches nothing. ``columns`` is the column filter (None: every column); an empty
    one matches nothing.
    """

    phrases: tuple[Phrase, ...]
    distance: int = NEAR_DEFAULT
    columns: frozenset[str] | None = None


@dataclass(frozen=True)
class And:
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    """Rows matching ``left`` and not ``right``."""

    left: Node
    right: Node


Node = Near | And | Or | Not


def phrase_paths(
    node: Node, above: tuple[Node, ...] = ()
) -> list[tuple[Phrase, Near, tuple[Node, ...]]]:
    """Every phrase in FTS5's order, with its leaf and the nodes above the leaf (root last)."""
    if isinstance(node, Near):
        return [(phrase, node, above) for phrase in node.phrases]
    children = (node.left, node.right) if isinstance(node, Not) else node.children
    return [found for child in children for found in phrase_paths(child, (node, *above))]


# -- Tokens and lexemes -----------------------------------------------------------------------


def _char_class(runs: tuple[int, ...], extra: frozenset[int] = frozenset()) -> str:
    ranges = [
        (runs[i], runs[i + 1] - 1 if i + 1 < len(runs) else 0x10FFFF)
        for i in range(0, len(runs), 2)
    ]
    ranges += [(cp, cp) for cp in sorted(extra)]
    return "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)


# A token starts at a token character and goes on through token characters and diacritics.
_STARTS = _char_class(unicode61.TOKEN_RUNS)
_TOKEN = re.compile(f"[{_STARTS}][{_STARTS}{_char_class((), unicode61.DIACRITICS)}]*")


def tokens(text: str) -> list[str]:
    """The tokens unicode61 finds in ``text``, as written (``sqlite_vec 2.0`` -> 4 tokens)."""
    return _TOKEN.findall(text)


def fold(token: str) -> str:
    """unicode61's case folding and diacritic removal of one token."""
    out = []
    for char in token:
        code = ord(char)
        if code in unicode61.DIACRITICS:
            continue
        out.append(chr(unicode61.FOLD.get(code, code)))
    return "".join(out)


def lexeme(token: str) -> str:
    """What FTS5's ``porter unicode61 remove_diacritics 2`` indexes for ``token``."""
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


# -- Parsing ----------------------------------------------------------------------------------

_SPACE = " \t\n\r"
_PUNCT = {
    "(": "LP", ")": "RP", "{": "LCP", "}": "RCP", ":": "COLON", ",": "COMMA", "+": "PLUS",
    "*": "STAR", "-": "MINUS", "^": "CARET",
}  # fmt: skip
_KEYWORDS = {"OR": "OR", "AND": "AND", "NOT": "NOT"}
_BAREWORD = re.compile(r"[0-9A-Za-z_\x1a\x80-\U0010ffff]+")
_BINARY = {"OR": 1, "AND": 2, "NOT": 3}


@dataclass
class _Lexeme:
    kind: str
    text: str


def _lex(text: str) -> list[_Lexeme]:
    """fts5ExprGetToken over the whole text; a trailing EOF lexeme."""
    out, at = [], 0
    while True:
        while at < len(text) and text[at] in _SPACE:
            at += 1
        if at == len(text):
            out.append(_Lexeme("EOF", ""))
            return out
        char = text[at]
        if char in _PUNCT:
            out.append(_Lexeme(_PUNCT[char], char))
            at += 1
        elif char == '"':
            end = at + 1
            while True:
                if end == len(text):
                    raise QuerySyntaxError("unterminated string")
                if text[end] == '"':
                    if text[end + 1 : end + 2] != '"':
                        break
                    end += 1
                end += 1
            out.append(_Lexeme("STRING", text[at : end + 1]))
            at = end + 1
        else:
            found = _BAREWORD.match(text, at)
            if found is None:
                raise QuerySyntaxError(f'fts5: syntax error near "{char}"')
            word = found.group()
            out.append(_Lexeme(_KEYWORDS.get(word, "STRING"), word))
            at = found.end()


def _dequote(text: str) -> str:
    return text[1:-1].replace('""', '"') if text.startswith('"') else text


class _Parser:
    """Recursive descent over fts5parse.y, counting what Lemon's stack would hold.

    ``base`` is the number of grammar symbols below the construct being read on the LR stack;
    ``_push`` raises, as Lemon does, when a shift would make it PARSER_STACK.
    """

    def __init__(self, text: str, columns: tuple[str, ...]) -> None:
        self.lexemes = _lex(text)
        self.at = 0
        self.columns = columns
        self.heights: dict[int, int] = {}  # id(node) -> its height, for the depth limit

    # Lexemes and the stack.

    def peek(self, ahead: int = 0) -> _Lexeme:
        return self.lexemes[min(self.at + ahead, len(self.lexemes) - 1)]

    def take(self, kind: str) -> _Lexeme:
        found = self.peek()
        if found.kind != kind:
            raise QuerySyntaxError(f'fts5: syntax error near "{found.text}"')
        self.at += 1
        return found

    @staticmethod
    def _push(depth: int) -> None:
        if depth >= PARSER_STACK:
            raise QuerySyntaxError("fts5: parser stack overflow")

    # expr

    def parse(self) -> Node:
        node = self.expr(0, 1)
        self.take("EOF")
        return node

    def expr(self, base: int, min_level: int) -> Node:
        left = self.primary(base)
        while self.peek().kind in _BINARY and _BINARY[self.peek().kind] >= min_level:
            op = self.take(self.peek().kind).kind
            self._push(base + 2)
            right = self.expr(base + 2, _BINARY[op] + 1)
            left = self.node(op, left, right)
        return left

    def primary(self, base: int) -> Node:
        kind = self.peek().kind
        if kind == "LP":
            self._push(base + 1)
            self.at += 1
            node = self.expr(base + 1, 1)
            self._push(base + 3)
            self.take("RP")
            return node
        if kind in ("MINUS", "LCP") or (kind == "STRING" and self.peek(1).kind == "COLON"):
            columns = self.colset(base)
            self._push(base + 2)
            self.take("COLON")
            if self.peek().kind == "LP":
                self._push(base + 3)
                self.at += 1
                node = self.expr(base + 3, 1)
                self._push(base + 5)
                self.take("RP")
                return _restrict(node, columns)
            first = _restrict(self.nearset(base + 2), columns)
            return self.exprlist(base, first)
        return self.exprlist(base, self.cnearset(base))

    def exprlist(self, base: int, first: Node) -> Node:
        """Adjacent strings: FTS5's implicit AND, which drops the word-less ones."""
        items = [first]
        while self.peek().kind in ("STRING", "MINUS", "LCP", "CARET"):
            items.append(self.cnearset(base + 1))
        kept = [item for item in items if not _is_empty(item)]
        if not kept:
            return items[-1]
        return kept[0] if len(kept) == 1 else self.node("AND", *kept)

    def cnearset(self, base: int) -> Node:
        lexeme = self.peek()
        if lexeme.kind in ("MINUS", "LCP") or (
            lexeme.kind == "STRING" and self.peek(1).kind == "COLON"
        ):
            columns = self.colset(base)
            self._push(base + 2)
            self.take("COLON")
            return _restrict(self.nearset(base + 2), columns)
        return self.nearset(base)

    def node(self, op: str, *operands: Node) -> Node:
        """AND/OR nodes take in the children of a same-kind operand (FTS5 flattens them)."""
        made: Node
        if op == "NOT":
            made = Not(*operands)
            children: list[Node] = list(operands)
        else:
            kind = And if op == "AND" else Or
            children = []
            for operand in operands:
                children.extend(operand.children if isinstance(operand, kind) else [operand])
            made = kind(tuple(children))
        height = 1 + max(self.heights.get(id(child), 0) for child in children)
        if height > MAX_TREE_DEPTH:
            raise QuerySyntaxError(
                f"fts5 expression tree is too large (maximum depth {MAX_TREE_DEPTH})"
            )
        self.heights[id(made)] = height
        return made

    # Column filters.

    def colset(self, base: int) -> frozenset[str]:
        invert = False
        depth = base
        if self.peek().kind == "MINUS":
            self._push(base + 1)
            self.at += 1
            invert, depth = True, base + 1
        if self.peek().kind == "LCP":
            self._push(depth + 1)
            self.at += 1
            self._push(depth + 2)
            names = {self.column(self.take("STRING").text)}
            while self.peek().kind == "STRING":
                self._push(depth + 3)
                names.add(self.column(self.take("STRING").text))
            self._push(depth + 3)
            self.take("RCP")
        else:
            self._push(depth + 1)
            names = {self.column(self.take("STRING").text)}
        chosen = frozenset(names)
        return frozenset(self.columns) - chosen if invert else chosen

    def column(self, text: str) -> str:
        name = _dequote(text)
        for column in self.columns:
            if column.lower() == name.lower() and name.isascii():
                return column
        raise QuerySyntaxError(f"no such column: {name}")

    # Near groups and phrases.

    def nearset(self, base: int) -> Near:
        kind = self.peek().kind
        if kind == "CARET":
            self._push(base + 1)
            self.at += 1
            phrase = self.phrase(base + 1)
            if phrase.terms:
                phrase = Phrase(phrase.terms, first=True)
            return _leaf([phrase])
        if kind == "STRING" and self.peek(1).kind == "LP":
            name = self.take("STRING").text
            self._push(base + 1)
            self._push(base + 2)
            self.take("LP")
            found = [self.phrase(base + 2)]
            while self.peek().kind == "STRING":
                found.append(self.phrase(base + 3))
            distance = NEAR_DEFAULT
            if self.peek().kind == "COMMA":
                self._push(base + 4)
                self.at += 1
                self._push(base + 5)
                digits = self.take("STRING").text
                if not digits.isascii() or not digits.isdigit():
                    raise QuerySyntaxError(f'expected integer, got "{digits}"')
                distance = _int32(digits)
            else:
                self._push(base + 4)
            self._push(base + 5)
            self.take("RP")
            if name != "NEAR":
                raise QuerySyntaxError(f'fts5: syntax error near "{name}"')
            return _leaf(found, distance)
        return _leaf([self.phrase(base)])

    def phrase(self, base: int) -> Phrase:
        """``a``, ``"a b"``, ``a + "b c" *``: the tokens of every string, one phrase."""
        terms: list[Term] = []
        self._push(base + 1)
        self.string(terms, self.take("STRING").text, base + 1)
        while self.peek().kind == "PLUS":
            self._push(base + 2)
            self.at += 1
            self._push(base + 3)
            self.string(terms, self.take("STRING").text, base + 3)
        return Phrase(tuple(terms))

    def string(self, terms: list[Term], text: str, depth: int) -> None:
        prefix = self.peek().kind == "STAR"
        self._push(depth + 1)  # the STAR, or the empty star_opt
        if prefix:
            self.at += 1
        terms.extend(Term(token) for token in tokens(_dequote(text)))
        if prefix and terms:
            terms[-1] = Term(terms[-1].token, prefix=True)


def _int32(digits: str) -> int:
    """The distance as FTS5's int arithmetic computes it (it wraps)."""
    value = 0
    for digit in digits:
        value = (value * 10 + int(digit)) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _leaf(found: list[Phrase], distance: int = NEAR_DEFAULT) -> Near:
    """FTS5 keeps a group's phrases that have tokens (a group of none: a word-less leaf)."""
    return Near(tuple(p for p in found if p.terms), distance)


def _is_empty(node: Node) -> bool:
    return isinstance(node, Near) and not node.phrases


def _restrict(node: Node, columns: frozenset[str]) -> Node:
    """A column filter on every leaf below (intersected with one a leaf already has)."""
    if isinstance(node, Near):
        if _is_empty(node):
            return node
        kept = columns if node.columns is None else node.columns & columns
        return Near(node.phrases, node.distance, kept)
    if isinstance(node, Not):
        return Not(_restrict(node.left, columns), _restrict(node.right, columns))
    return type(node)(tuple(_restrict(child, columns) for child in node.children))


def parse(text: str, columns: tuple[str, ...] = COLUMNS) -> Node:
    """The tree of an FTS5 MATCH expression; QuerySyntaxError where FTS5 raises."""
    text = text.split("\x00", 1)[0]  # FTS5 reads a C string
    if text.startswith("*"):
        directive = text[1:].lstrip(" ").split(" ", 1)[0]
        if is_special(text):
            raise QuerySyntaxError(f"special query: {directive} (not a search)")
        raise QuerySyntaxError(f"unknown special query: {directive}")
    return _Parser(text, columns).parse()


def is_special(text: str) -> bool:
    """FTS5 answers ``*reads`` and ``*id`` (any case, words after them ignored) with a counter
    row, not a search: the SQLite app's keyword search finds nothing for them."""
    text = text.split("\x00", 1)[0]
    directive = text[1:].lstrip(" ").split(" ", 1)[0].lower()
    return text.startswith("*") and directive in ("reads", "id")


def or_of_words(text: str) -> Node | None:
    """The plain-language retry: every ``\\w+`` word quoted, OR-ed; None when wordless.

    The same words, in the same order, as agent_memory.fts.or_of_words, so both backends
    score the retry alike.
    """
    words = _WORD.findall(text)
    if not words:
        return None
    return parse(" OR ".join(f'"{word}"' for word in words))


def search_tree(text: str) -> Node | None:
    """The query as FTS5 reads it or, when FTS5 would refuse it, its plain-language retry;
    None when nothing can match (no words, or an FTS5 special query)."""
    if is_special(text):
        return None
    try:
        return parse(text)
    except QuerySyntaxError:
        return or_of_words(text)


# -- Rendering: FTS5 --------------------------------------------------------------------------

_LEVEL = {Or: 1, And: 2, Not: 3}


def to_fts5(node: Node) -> str:
    """A MATCH expression FTS5 reads as this tree (same rows, same phrases, same bm25)."""
    if isinstance(node, Near):
        return _fts5_leaf(node)
    level = _LEVEL[type(node)]
    if isinstance(node, Not):
        parts = [_fts5_operand(node.left, level, False), _fts5_operand(node.right, level, True)]
        return " NOT ".join(parts)
    word = " AND " if isinstance(node, And) else " OR "
    return word.join(_fts5_operand(child, level, True) for child in node.children)


def _fts5_operand(node: Node, level: int, right: bool) -> str:
    text = to_fts5(node)
    if isinstance(node, Near):
        return text
    inner = _LEVEL[type(node)]
    return f"({text})" if inner < level or (right and inner == level) else text


def _fts5_leaf(node: Near) -> str:
    if not node.phrases:
        return '""'
    rendered = [_fts5_phrase(phrase) for phrase in node.phrases]
    text = (
        rendered[0]
        if len(rendered) == 1
        else f"NEAR({' '.join(rendered)}, {node.distance % (1 << 32)})"
    )
    if node.columns is None:
        return text
    if node.columns:
        return "{" + " ".join(f'"{c}"' for c in sorted(node.columns)) + "} : " + text
    return "-{" + " ".join(f'"{c}"' for c in COLUMNS) + "} : " + text


def _fts5_phrase(phrase: Phrase) -> str:
    text = " + ".join(f'"{term.token}"' + (" *" if term.prefix else "") for term in phrase.terms)
    return "^" + text if phrase.first else text


# -- Rendering: PostgreSQL --------------------------------------------------------------------

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
