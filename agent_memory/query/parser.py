"""The FTS5 query language's grammar (fts5parse.y) as a recursive-descent parser.

``parse`` accepts exactly the texts FTS5 accepts, with its precedences, the checks FTS5 makes
while building the tree, its parser's 100-entry stack and its 256-deep tree limit (see
agent_memory.query for why).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent_memory.query.bigrams import rewrite
from agent_memory.query.lexemes import tokens
from agent_memory.query.tree import (
    COLUMNS,
    NEAR_DEFAULT,
    And,
    Near,
    Node,
    Not,
    Or,
    Phrase,
    QuerySyntaxError,
    Term,
)

# FTS5's limits (fts5_expr.c, fts5parse.y): the deepest expression tree and the parser's stack.
MAX_TREE_DEPTH = 256
PARSER_STACK = 100

_WORD = re.compile(r"\w+")

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
        """A run of one AND or OR (``a OR b OR c``) becomes one node at the run's end: made
        at each operator, it would copy every child so far (O(N²) for 10,000 words). Its
        height is checked at each operand, as FTS5 checks each node it makes."""
        left = self.primary(base)
        run: list[Node] = []
        run_op, height = "", 0
        while self.peek().kind in _BINARY and _BINARY[self.peek().kind] >= min_level:
            op = self.take(self.peek().kind).kind
            self._push(base + 2)
            right = self.expr(base + 2, _BINARY[op] + 1)
            if op != run_op or op == "NOT":
                if run:
                    left = self._made(run_op, run, height)
                run, run_op, height = [left], op, self._reach(op, left)
            run.append(right)
            height = self._checked(max(height, self._reach(op, right)))
        return self._made(run_op, run, height) if run else left

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
        height = self._checked(max(self._reach(op, operand) for operand in operands))
        return self._made(op, operands, height)

    def _made(self, op: str, operands: Sequence[Node], height: int) -> Node:
        """AND/OR nodes take in the children of a same-kind operand (FTS5 flattens them)."""
        made: Node
        if op == "NOT":
            made = Not(*operands)
        else:
            kind = And if op == "AND" else Or
            children: list[Node] = []
            for operand in operands:
                children.extend(operand.children if isinstance(operand, kind) else [operand])
            made = kind(tuple(children))
        self.heights[id(made)] = height
        return made

    def _reach(self, op: str, operand: Node) -> int:
        """The height a node of ``op`` has for holding ``operand``: one more than the
        operand's, or the same for an operand it flattens (an OR in an OR)."""
        same = (op == "AND" and isinstance(operand, And)) or (
            op == "OR" and isinstance(operand, Or)
        )
        if same and id(operand) not in self.heights:  # rebuilt by _restrict: from its children
            return 1 + max((self.heights.get(id(c), 0) for c in operand.children), default=0)
        return self.heights.get(id(operand), 0) + (not same)

    @staticmethod
    def _checked(height: int) -> int:
        if height > MAX_TREE_DEPTH:
            raise QuerySyntaxError(
                f"fts5 expression tree is too large (maximum depth {MAX_TREE_DEPTH})"
            )
        return height

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


def plain_words(text: str) -> list[str] | None:
    """The words of a plain-language query (barewords only: no operator, quote, prefix star,
    column filter, NEAR group or parenthesis), or None when the text uses FTS5 syntax or
    FTS5 would refuse it. ``\\w+`` words, as the retry takes them."""
    try:
        lexemes = _lex(text.split("\x00", 1)[0])
    except QuerySyntaxError:
        return None
    if text.startswith("*") or any(
        lexeme.kind not in ("STRING", "EOF") or lexeme.text.startswith('"') for lexeme in lexemes
    ):
        return None
    return _WORD.findall(text)


def and_of_words(words: Sequence[str]) -> Node:
    """Rows holding every word: the words quoted, side by side (FTS5's implicit AND, which
    leaves out the word-less ones), as the SQLite backend asks it (agent_memory.fts.and_of),
    rewritten as the index holds text (query.bigrams)."""
    return rewrite(parse(" ".join(f'"{word}"' for word in words)))


def search_tree(text: str) -> Node | None:
    """The query as FTS5 reads it or, when FTS5 would refuse it, its plain-language retry;
    None when nothing can match (no words, or an FTS5 special query)."""
    return searched(text)[0]


def searched(text: str) -> tuple[Node | None, list[str]]:
    """(the tree to search, the words when the query is searched as words, else none).

    A query is searched as words (decisions.md, "Plain-language keyword queries") when it is
    plain language of two words or more, or when FTS5 would refuse it (the retry). Its tree
    is then the OR of its words' leaves, one per word, in the words' order: a backend ranks
    the rows holding every word first (and_of_words), then the rows holding its informative
    words (query.bm25.plan), and finds each word's leaf in this tree. Runs of scripts written
    without spaces are rewritten as the index holds them (query.bigrams), in every tree.
    """
    if is_special(text):
        return None, []
    words = plain_words(text)
    if words is None or len(set(words)) < 2:
        try:
            return rewrite(parse(text)), []
        except QuerySyntaxError:
            words = _WORD.findall(text)
    tree = or_of_words(text)
    return (None if tree is None else rewrite(tree)), words
