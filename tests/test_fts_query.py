"""Query handling: raw FTS5 first, then OR-of-quoted-words, wordless queries empty."""

from __future__ import annotations

import pytest

from agent_memory import fts


@pytest.mark.parametrize(
    "query,expected",
    [
        ("what vector store do we use?", '"what" OR "vector" OR "store" OR "do" OR "we" OR "use"'),
        ("sqlite-vec", '"sqlite" OR "vec"'),
        ("TODO: auth", '"TODO" OR "auth"'),
        ('"unbalanced', '"unbalanced"'),
        ("it's", '"it" OR "s"'),
        ("naïve café", '"naïve" OR "café"'),
        ("", None),
        ("?!", None),
        ("*", None),
        ("   ", None),
    ],
)
def test_or_of_words(query, expected):
    assert fts.or_of_words(query) == expected


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
def test_queries_in_both_syntaxes(service, corpus, query, expected):
    answer = service.search({"query": query})
    assert answer["search_mode"] == "keyword"
    assert set(ids(answer)) == expected


@pytest.mark.parametrize("query", ["", "?!", "*", "  ", "...", "OR", "NOT"])
def test_wordless_or_operator_only_queries_never_fail(service, corpus, query):
    answer = service.search({"query": query})
    assert answer["search_mode"] == "keyword"
    assert ids(answer) == [] or query in ("OR", "NOT")


def test_a_very_long_question_is_answered(service):
    service.store({"content": "needle in the haystack", "type": "TODO"})
    words = " ".join(f"word{i}" for i in range(5000))
    answer = service.search({"query": f"{words} needle?"})
    assert [r["id"] for r in answer["results"]] == [1]
