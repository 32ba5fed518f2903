"""The OR-of-words retry leaves out words that cannot change the answer."""

from __future__ import annotations

import random

import pytest

from agent_memory import fts

NO_FILTERS = {"memory_type": None, "tag": None, "scope": None}
RARE = ["maven", "gradle", "kafka", "sqlite", "docker", "oauth", "billing", "tokenizer"]


@pytest.fixture
def corpus(service, clock):
    """Every memory says "the"; rare words vary; lengths and ages vary, so no exact ties."""
    rng = random.Random(3)
    for i in range(300):
        words = ["the", rng.choice(RARE)] + ["padding"] * rng.randint(0, 12) + [f"unique{i}"]
        if i % 3 == 0:
            words.append(rng.choice(RARE))
        service.store({"content": " ".join(words), "type": rng.choice(["TODO", "DECISION"])})
        clock.advance(rng.randint(1, 5000))
    return service


def exact(service, query, limit, now):
    return [
        (m["id"], score)
        for m, score in service.repo.keyword_search(
            fts.or_of(fts.words(query)), now=now, limit=limit
        )
    ]


def pruned(service, query, limit, now):
    return [
        (m["id"], score)
        for m, score in service._or_of_words(fts.words(query), now, limit, NO_FILTERS)
    ]


@pytest.mark.parametrize(
    "query",
    [
        "what about the maven release?",
        "the kafka, the docker?",
        "is the tokenizer done?",
        "what's the oauth and billing plan?",
    ],
)
@pytest.mark.parametrize("limit", [1, 10, 50])
def test_same_answer_as_the_full_query(corpus, clock, query, limit):
    fast, full = pruned(corpus, query, limit, clock.now), exact(corpus, query, limit, clock.now)
    assert [i for i, _ in fast] == [i for i, _ in full]
    clamped = fts.words(query).count("the")  # each occurrence is a phrase of its own
    for (_, a), (_, b) in zip(fast, full, strict=True):
        assert abs(a - b) < clamped * fts.MAX_CLAMPED_WORD_SCORE


def test_stopword_only_rows_still_come_back_when_rare_words_do_not_fill_the_limit(service):
    service.store({"content": "the maven group", "type": "TODO"})
    for i in range(5):
        service.store({"content": f"the thing {i}", "type": "TODO"})
    found = [r["id"] for r in service.search({"query": "the maven?", "limit": 4})["results"]]
    assert found[0] == 1 and len(found) == 4  # the other three match only "the"


def test_words_found_nowhere_are_ignored(corpus, clock):
    assert pruned(corpus, "zzzqqq maven xyzzy?", 20, clock.now) == exact(
        corpus, "maven", 20, clock.now
    )
    assert corpus.search({"query": "zzzqqq xyzzy?"})["results"] == []


def test_clamping_threshold_matches_fts5():
    assert fts.is_clamped(5, 10) and fts.is_clamped(6, 10)
    assert not fts.is_clamped(4, 10)
    assert pytest.approx(2.2e-6) == fts.MAX_CLAMPED_WORD_SCORE
