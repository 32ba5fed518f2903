"""The FTS5 query language's grammar (fts5parse.y) as a recursive-descent parser.

``parse`` accepts exactly the texts FTS5 accepts, with its precedences, the checks FTS5 makes
while building the tree, its parser's 100-entry stack and its 256-deep tree limit (see
agent_memory.query for why).
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_memory.query.lexer import Lexed, Lexeme, dequote, lex
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

_BINARY = {"OR": 1, "AND": 2, "NOT": 3}


class _Parser:
    """Recursive descent over fts5parse.y, counting what Lemon's stack would hold.

    ``base`` is the number of grammar symbols below the construct being read on the LR stack;
    ``_push`` raises, as Lemon does, when a shift would make it PARSER_STACK.
    """

    def __init__(self, lexemes: Sequence[Lexeme], columns: tuple[str, ...]) -> None:
        self.lexemes = lexemes
        self.at = 0
        self.columns = columns
        self.heights: dict[int, int] = {}  # id(node) -> its height, for the depth limit

    # Lexemes and the stack.

    def peek(self, ahead: int = 0) -> Lexeme:
        return self.lexemes[min(self.at + ahead, len(self.lexemes) - 1)]

    def take(self, kind: str) -> Lexeme:
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
        name = dequote(text)
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
        self.string(terms, self.take("STRING"), base + 1)
        while self.peek().kind == "PLUS":
            self._push(base + 2)
            self.at += 1
            self._push(base + 3)
            self.string(terms, self.take("STRING"), base + 3)
        return Phrase(tuple(terms))

    def string(self, terms: list[Term], lexeme: Lexeme, depth: int) -> None:
        prefix = self.peek().kind == "STAR"
        self._push(depth + 1)  # the STAR, or the empty star_opt
        if prefix:
            self.at += 1
        terms.extend(Term(token) for token in lexeme.tokens)
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
    return parse_lexed(text, lex(text), columns)


def parse_lexed(text: str, lexed: Lexed, columns: tuple[str, ...] = COLUMNS) -> Node:
    """``parse`` of a text already lexed (``lexed`` is ``lex(text)``)."""
    head = text.split("\x00", 1)[0]  # FTS5 reads a C string
    if head.startswith("*"):
        directive = head[1:].lstrip(" ").split(" ", 1)[0]
        if is_special(head):
            raise QuerySyntaxError(f"special query: {directive} (not a search)")
        raise QuerySyntaxError(f"unknown special query: {directive}")
    if lexed.error is not None:
        raise lexed.error
    return _Parser(lexed.fts5(), columns).parse()


def is_special(text: str) -> bool:
    """FTS5 answers ``*reads`` and ``*id`` (any case, words after them ignored) with a counter
    row, not a search: the SQLite app's keyword search finds nothing for them."""
    text = text.split("\x00", 1)[0]
    directive = text[1:].lstrip(" ").split(" ", 1)[0].lower()
    return text.startswith("*") and directive in ("reads", "id")
