"""Query handling through the service: FTS5 syntax keeps its meaning, other text is searched
for its words, wordless queries are empty, costly ones refused (query.read, query.cost)."""

from __future__ import annotations

import pytest

from agent_memory.contract.errors import InvalidArgument
from agent_memory.query import lexer
from agent_memory.query import read as read_query
from agent_memory.service import core as service_module
from agent_memory.storage.sqlite import connections


@pytest.fixture
def corpus(service):
    texts = [
        ("We use sqlite-vec for the vector store", "ARCHITECTURE"),
        ("SQLite is the only database; no server", "DECISION"),
        ("The exact phrase lives here", "PATTERN"),
        ("TODO: auth tokens must rotate", "TODO"),
        ("Storing vectors costs 3 KB per memory", "PATTERN"),
        ("Café menus are unrelated", "ERROR"),
    ]
    return [service.store({"content": c, "type": t})["id"] for c, t in texts]


def ids(answer):
    return [r["id"] for r in answer["results"]]


@pytest.mark.parametrize(
    "query,expected",
    [
        ("sqlite AND vec", {1}),  # valid FTS5 keeps its meaning (AND, not OR)
        ('"exact phrase"', {3}),
        ("vec*", {1, 5}),  # prefix: vec, vectors
        ("vector NOT sqlite", {5}),
        ("sqlite-vec", {1, 2}),  # FTS5 reads this as a column filter: retried as words
        ("TODO: auth", {4}),
        ("what vector store do we use?", {1, 5}),
        ('"unbalanced quote', set()),
        ("it's a café?", {6}),
        ("store", {1, 5}),  # porter stemming: store, Storing
        ("cafe", {6}),  # diacritics removed
    ],
)
def test_queries_in_both_syntaxes(service, corpus, query, expected, no_cut):
    # what each query matches (the page's end, tested apart, would keep fewer)
    answer = service.search({"query": query})
    assert answer["search_mode"] == "keyword"
    assert set(ids(answer)) == expected


@pytest.mark.parametrize("query", ["", "?!", "*", "  ", "...", "OR", "NOT"])
def test_wordless_or_operator_only_queries_never_fail(service, corpus, query):
    answer = service.search({"query": query})
    assert answer["search_mode"] == "keyword"
    assert ids(answer) == [] or query in ("OR", "NOT")


def test_a_very_long_question_is_answered(service, no_cut):
    # (its one word in the store is a sliver of its information: the page would end before)
    service.store({"content": "needle in the haystack", "type": "TODO"})
    words = " ".join(f"word{i}" for i in range(5000))
    answer = service.search({"query": f"{words} needle?"})
    assert [r["id"] for r in answer["results"]] == [1]


HUNDRED_WORDS = " ".join(f"what did we decide about item{i}" for i in range(17)) + "?"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (" OR ".join(["m*"] * 500), "a prefix must have at least 2 characters (got m*)"),
        ("m *", "a prefix must have at least 2 characters (got m*)"),
        ('"" *', "a prefix must have at least 2 characters (got *)"),
        (" OR ".join(["vec*"] * 9), "it must have at most 8 prefixes (got 9)"),
        ("NEAR(" + "the " * 200 + ")", "a NEAR group must have at most 10 words (got 11)"),
        ('"' + "the " * 2000 + '"', "a phrase must have at most 32 words (got 2000)"),
        ("the+" * 40 + "end", "a phrase must have at most 32 words (got 33)"),
        ("a_" * 40, "a phrase must have at most 32 words (got 40)"),  # "_" splits words
        ("word " * 10_001, "it must have at most 10000 words (got 10001)"),
    ],
    ids=[
        "m-star-x500",
        "spaced-prefix",
        "empty-prefix",
        "nine-prefixes",
        "near-200",
        "phrase-2000",
        "plus-joined",
        "underscored",
        "words-10001",
    ],
)
def test_costly_queries_are_refused_before_they_run(service, corpus, query, message):
    with pytest.raises(InvalidArgument) as refused:
        service.search({"query": query})
    assert str(refused.value) == f"invalid argument: query is too expensive: {message}"


@pytest.mark.parametrize(
    "query",
    [
        HUNDRED_WORDS,
        HUNDRED_WORDS.replace("?", ""),  # valid FTS5: 102 terms AND-ed
        " OR ".join(["vec*", "sto*", "sq*", "ca*"] * 2),
        "NEAR(sqlite vec store, 10)",
        '"' + "the " * 32 + '"',
        "what is 2+2?",
    ],
    ids=["100-word-question", "100-word-fts5", "eight-prefixes", "near", "phrase-32", "sum"],
)
def test_ordinary_queries_are_within_the_bounds(service, corpus, query):
    assert service.search({"query": query})["search_mode"] == "keyword"


def test_a_search_past_its_time_budget_is_refused_and_frees_the_connection(
    service, corpus, monkeypatch
):
    # SQLite's progress handler interrupts the statement at the first look past the
    # deadline; here the deadline has passed before the first statement runs.
    monkeypatch.setattr(service_module, "SEARCH_BUDGET_SECS", 0.0)
    monkeypatch.setattr(connections, "PROGRESS_STEPS", 1)
    with pytest.raises(InvalidArgument, match="query is too expensive: a search must finish"):
        service.search({"query": "vec*"})
    monkeypatch.setattr(service_module, "SEARCH_BUDGET_SECS", 2.0)
    assert ids(service.search({"query": "vec*"})) == [1, 5]  # the handler left the pool
    assert sorted(ids(service.search({"query": "store"}))) == [1, 5]


@pytest.mark.parametrize(
    "query",
    ["what vector store do we use?", "sqlite AND vec", "vec*", "sqlite-vec", "数据库 store"],
)
def test_a_search_reads_its_text_once(service, corpus, monkeypatch, query):
    read = []
    original = lexer._lex
    monkeypatch.setattr(lexer, "_lex", lambda text, *a: read.append(text) or original(text, *a))
    service.search({"query": query})
    assert read == [query]


def test_the_parsed_query_says_how_it_is_searched():
    syntax = read_query("sqlite AND vec")
    assert not syntax.by_words and not syntax.several_words and syntax.syntax_error is None
    plain = read_query("port busy port")
    assert plain.several_words and plain.words == ("port", "busy", "port")
    assert plain.every_word() == read_query('"port" "busy" "port"').tree
    retry = read_query("busy?")
    assert retry.by_words and not retry.several_words and retry.syntax_error is not None
