"""agent_memory.query against SQLite's FTS5 itself: the same queries refused, the same tree
(a rendered MATCH string finds the same rows with the same bm25), the same lexemes."""

from __future__ import annotations

import pytest
import sqlean
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory import query
from agent_memory.query import And, Near, Not, Or, Phrase, QuerySyntaxError, Term
from bench import corpus  # the bench's seeded developer memories
from tests.support.tiers import examples

SETTINGS = settings(
    max_examples=examples(600),
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
DOCS = [
    "hello world a b c",
    "a a a b",
    "b c d near content",
    "café naïve résumé",
    "cafe naive resume hello",
    "the sqlite-vec index x_y",
    "running runner runs ran",
    "x y z a",
    "NEAR near content b a",
    "d e f g hello",
    "é a b c d e f g h i j k l a",
    "world world hello",
]


def fts5_table(docs: list[str] = DOCS, tagged: bool = False) -> sqlean.Connection:
    """The docs in an FTS5 table of the index's columns; ``tagged``: every third row has
    another doc's words as its tags, so that column filters matter."""
    conn = sqlean.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(content, tags,"
        " tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    conn.executemany(
        "INSERT INTO t (rowid, content, tags) VALUES (?, ?, ?)",
        [(i, doc, docs[-i] if tagged and i % 3 == 0 else "") for i, doc in enumerate(docs, 1)],
    )
    return conn


FTS = fts5_table(tagged=True)


def fts5_answer(text: str) -> list[tuple[int, float]] | str:
    """(rowid, bm25) best first, or FTS5's error message."""
    try:
        return FTS.execute(
            "SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t), rowid", (text,)
        ).fetchall()
    except sqlean.OperationalError as exc:
        return str(exc)


def refused(text: str) -> str | None:
    try:
        query.parse(text)
    except QuerySyntaxError as exc:
        return str(exc)
    return None


def assert_like_fts5(text: str) -> None:
    answer = fts5_answer(text)
    mine = refused(text)
    if isinstance(answer, str):
        assert mine is not None, f"FTS5 refuses {text!r} ({answer}); parse accepted it"
        return
    assert mine is None, f"FTS5 accepts {text!r}; parse refused it ({mine})"
    rendered = query.to_fts5(query.parse(text))
    assert fts5_answer(rendered) == answer, (text, rendered)


HAND_WRITTEN = [
    "hello", "hello world", "a b c", "a AND b", "a OR b", "a NOT b", "a OR b AND c",
    "a AND b OR c", "a NOT b OR c", "a OR b NOT c", "a NOT b NOT c", "(a OR b) c",
    "c (a OR b)", "a (b)", "(a) b", "(a)(b)", "(a) AND (b)", "(((a)))", "()", "(a", "a)",
    '"a b"', "a+b", "a + b", '"a" + "b c" *', "a+*", "+a", "a*", "a * b", "a**",
    "hel*", '"hel" *', "^hello", "a ^b", "^a+b", "^^a", "^(a)", "a^", "a^b",
    "NEAR(a b)", "NEAR(a b, 5)", 'NEAR(a b, "5")', "NEAR(a)", "NEAR(a b,)", "near(a b)",
    "NEAR(^a b)", "NEAR", "NEAR a", "NEAR(", "NEAR()", "NEAR(a b, 5, 6)", "NEAR(a b 5)",
    "NEAR(a b, 99999999999)", "NEAR(a b, -1)", "NEAR (a b)", "NEAR(a+b c*)",
    "NEAR(a b) c", "NEAR(a b)*", "NEAR(a b, 0)", "NEAR(hello world, 2)",
    "content:a", "-content:a", "{content}:a", "x:a", "a:b:c", "content:content:a",
    "content : (a OR b)", "content:NEAR(a b)", "-{content}: a", "{content content}: a",
    "{}: a", "content:(a) b", "a content:b", "a content:(b)", "CONTENT:a", "'content':a",
    '"content":a', "-content:a hello", "-content:(content:a) OR b", "^content:a",
    "content:^a", "", " ", '""', "—", "a —", "— NOT a", "a NOT —", "a AND —", '"" OR a',
    "*", " *", "*reads", "a OR *", "(*)", "a AND", "AND a", "NOT a", "a NOT", "a OR", "OR",
    "a OR OR b", "a,b", "a}", "{a", "-a", "a -b", "a-b", '"a""b"', '"a"b', 'a"b"', '"open',
    "a\x0cb", "a\x0bb", "a\x1ab", "a\x00 OR", "\x00", "a\tb\nc\rd", "a\u00a0b", "é", "_",
    "a_b", "é:x", "café", "CAFE", "naive", "résumé", "running", "runs*", "content:(a NOT b)",
    'content:("" OR a)', "-content:(a OR b) OR c", "tags:a", "-tags:a", "{content tags}:a",
    "-{tags content}:a", "tags:^a", "TAGS:(a OR hello) NOT content:a", "tags:content:a",
    "what vector store do we use?", "sqlite-vec", "TODO: auth", "it's", "x_y OR sqlite",
]  # fmt: skip


def test_parse_refuses_exactly_what_fts5_refuses_and_keeps_its_meaning():
    for text in HAND_WRITTEN:
        if text.startswith("*") and text[1:].lower() in ("reads", "id"):
            continue
        assert_like_fts5(text)


def test_special_queries_are_refused_though_fts5_answers_them():
    for text in ["*reads", "*ID", "* reads more"]:
        assert FTS.execute("SELECT rowid FROM t WHERE t MATCH ?", (text,)).fetchall() == [(0,)]
        assert refused(text) is not None
        assert query.read(text).tree is None
    assert refused("*") == "unknown special query: "
    assert refused("*x y") == "unknown special query: x"
    assert query.read("*x y").tree == query.read("x y").tree == query.parse('"x" OR "y"')


def test_parser_stack_and_tree_depth_limits_match_fts5():
    shapes = [
        lambda d: "(" * d + "a" + ")" * d,
        lambda d: "a AND (" * d + "a" + ")" * d,
        lambda d: "content:(" * d + "a" + ")" * d,
        lambda d: "-{content}:(" * d + "a+b*" + ")" * d,
        lambda d: "(" * d + "NEAR(a+b b, 5)" + ")" * d,
        lambda d: "(" * d + "a OR b AND c NOT ^d+e*" + ")" * d,
        lambda d: "(" * d + "{content content}:^a+b" + ")" * d,
        lambda d: "a NOT (b AND (" * d + "c)" * d + ")",
        lambda d: "a" + " NOT b" * d,
        lambda d: "a" + " NOT (b AND c)" * d,
    ]
    for shape in shapes:
        for depth in range(1, 300):
            assert_like_fts5(shape(depth))
            if isinstance(fts5_answer(shape(depth)), str):
                break
        else:
            raise AssertionError(f"no limit reached for {shape(2)!r}")


def test_precedence_not_then_and_then_or_with_implicit_and_tightest():
    a, b, c, d = (Near((Phrase((Term(w),)),)) for w in "abcd")
    assert query.parse("a OR b AND c NOT d") == Or((a, And((b, Not(c, d)))))
    assert query.parse("a b OR c d") == Or((And((a, b)), And((c, d))))
    assert query.parse("a NOT b c") == Not(a, And((b, c)))
    assert query.parse("(a OR b) OR (c OR d)") == Or((a, b, c, d))


def test_strings_become_phrases_of_their_tokens():
    leaf = query.parse('"sqlite-vec 2.0" + x_y*')
    assert leaf == Near(
        (Phrase((*(Term(t) for t in ["sqlite", "vec", "2", "0", "x"]), Term("y", True))),)
    )
    assert query.parse("^Café") == Near((Phrase((Term("Café"),), first=True),))
    near = query.parse("NEAR(a b, 3)")
    assert isinstance(near, Near) and near.distance == 3 and len(near.phrases) == 2


def test_column_filters_keep_or_empty_the_leaf():
    assert query.parse("content:a") == Near((Phrase((Term("a"),)),), columns=frozenset({"content"}))
    assert query.parse("-content:a") == Near((Phrase((Term("a"),)),), columns=frozenset({"tags"}))
    assert query.parse("-{tags content}:a") == Near((Phrase((Term("a"),)),), columns=frozenset())


def test_wordless_strings_drop_out_of_implicit_and_only():
    a = Near((Phrase((Term("a"),)),))
    assert query.parse("a — b") == And((a, Near((Phrase((Term("b"),)),))))
    assert query.parse("a AND —") == And((a, Near(())))


def test_the_words_tree_reads_like_the_quoted_or_of_the_words():
    for text in ["what's sqlite-vec?", "TODO: auth_token", "naïve? café!", "a a b"]:
        parsed = query.read(text)
        assert parsed.by_words and parsed.tree is not None
        quoted = " OR ".join(f'"{word}"' for word in parsed.words)
        assert fts5_answer(query.to_fts5(parsed.tree)) == fts5_answer(quoted)
    assert query.read("?!").tree is None


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("what vector store do we use?", ["what", "vector", "store", "do", "we", "use"]),
        ("sqlite-vec", ["sqlite", "vec"]),
        ("TODO: auth", ["TODO", "auth"]),
        ('"unbalanced', ["unbalanced"]),
        ("it's", ["it", "s"]),
        ("naïve café", ["naïve", "café"]),
        ("", []),
        ("?!", []),
        ("*", []),
        ("   ", []),
    ],
)
def test_plain_language_and_the_retry_search_the_words_of_the_text(text, words):
    parsed = query.read(text)
    assert parsed.by_words and list(parsed.words) == words
    if words:
        assert parsed.tree == query.parse(" OR ".join(f'"{word}"' for word in words))
    else:
        assert parsed.tree is None


def test_the_tree_is_the_query_or_its_retry():
    assert query.read("a OR b").tree == query.parse("a OR b")
    assert query.read("what's up?").tree == query.parse('"what" OR "s" OR "up"')
    assert query.read("?!").tree is None


WORDS = [
    "a", "b", "c", "hello", "world", "near", "NEAR", "content", "CONTENT", "é", "café", "x_y",
    "runs", "—", "5", "0", "OR", "AND", "NOT", "hel", "ab",
]  # fmt: skip
PIECES = [*WORDS, "(", ")", '"', "*", "+", "^", ":", "-", "{", "}", ",", " ", " ", " ", '""']


@SETTINGS
@given(st.lists(st.sampled_from(PIECES), max_size=14))
def test_generated_queries_match_fts5(pieces):
    assert_like_fts5("".join(pieces))


@SETTINGS
@given(
    st.recursive(
        st.sampled_from(
            ["a", "b", "hello", "c*", '"a b"', "^a", "NEAR(a b, 2)", "content:b", "tags:a"]
        ),
        lambda inner: st.tuples(inner, st.sampled_from([" AND ", " OR ", " NOT ", " "]), inner).map(
            lambda t: f"({t[0]}){t[1]}({t[2]})" if t[1] != " " else f"{t[0]} {t[2]}"
        ),
        max_leaves=8,
    )
)
def test_generated_expressions_keep_rows_and_bm25(text):
    assert_like_fts5(text)


def test_lexemes_are_fts5s():
    words = sorted(
        {w for m in corpus.developer_memories(500) for w in query.tokens(m["content"])}
        | set(
            query.tokens(
                "as is us os a i I Assembly apologies autospecced 1e10 0e84b5 10³ ASSEMBLY "
                "caresses ponies ties caress cats feed agreed plastered bled motoring sing "
                "conflated troubled sized hopping tanned falling hissing fizzed failing filing "
                "happy sky relational conditional rational valenci hesitanci digitizer "
                "conformabli radicalli differentli vileli analogousli vietnamization predication "
                "operator feudalism decisiveness hopefulness callousness formaliti sensitiviti "
                "sensibiliti triplicate formative formalize electriciti electrical hopeful "
                "goodness revival allowance inference airliner gyroscopic adjustable defensible "
                "irritant replacement adjustment dependent adoption homologou communism activate "
                "angulariti homologous effective bowdlerize probate rate cease controll roll "
                "Straße ÆSIR œuvre søren Łódź Ångström ЖУК Ελλάδα İstanbul ǅemal ﬁne Ⅻ ½ x² "
                "東京 ＡＢＣ coöperate ĳssel Ꭰ ϐ µ ſ"
            )
        )
        | {"a" * 70 + "ing", "b" * 64 + "s", "é" * 40 + "ing"}
    )
    conn = fts5_table(words)
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    found: dict[int, list[tuple[int, str]]] = {}
    for term, doc, offset in conn.execute("SELECT term, doc, offset FROM v"):
        found.setdefault(doc, []).append((offset, term))
    for doc, word in enumerate(words, 1):
        expected = [term for _, term in sorted(found.get(doc, []))]
        assert [query.lexeme(t) for t in query.tokens(word)] == expected, word


@pytest.mark.parametrize(
    "sample",
    [
        [cp for cp in range(0, 0x30000, 7) if not 0xD800 <= cp < 0xE000],
        list(range(128)),  # every ASCII character: ASCII text takes a faster tokenizer
    ],
    ids=["every-7th-code-point", "ascii"],
)
def test_token_characters_are_unicode61s_on_a_sample_of_code_points(sample):
    conn = fts5_table(["q" + chr(cp) + "q" for cp in sample])
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    per_doc: dict[int, list[str]] = {}
    for term, doc in conn.execute("SELECT term, doc FROM v ORDER BY doc, offset"):
        per_doc.setdefault(doc, []).append(term)
    for doc, cp in enumerate(sample, 1):
        text = "q" + chr(cp) + "q"
        assert [query.lexeme(t) for t in query.tokens(text)] == per_doc[doc], hex(cp)
