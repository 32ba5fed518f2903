"""The hybrid fusion and the page's end (ranking.fuse, ranking.end) on hand-made legs: what
they promise, whatever the store."""

from __future__ import annotations

import pytest

from agent_memory import ranking
from agent_memory.contract.models import Noise
from agent_memory.query import lexemes
from agent_memory.ranking.relevance import Words, phrase

# The query's similarity to unrelated text: a memory at 0.74 stands 2 sd above it (the floor).
UNRELATED = Noise(0.70, 0.02, 48)


def store(texts: dict[int, str], decay: float = 1.0) -> dict[int, dict]:
    return {i: {"id": i, "decay_score": decay, "content": t, "tags": []} for i, t in texts.items()}


def words_of(query: str, texts: dict[int, str]) -> Words:
    """The query's words weighed over ``texts`` as the index would count them."""
    typed = query.split()
    held = {i: lexemes.tokens(t.lower()) for i, t in texts.items()}
    counted = {i: [lexemes.lexeme(w) for w in toks] for i, toks in held.items()}
    hits = {w: sum(all(p in c for p, _ in phrase(w)) for c in counted.values()) for w in typed}
    length = sum(map(len, counted.values())) / len(counted)
    found = Words.of(typed, len(texts), hits, length)
    assert found is not None
    return found


def fused(keyword, nearest, texts, query=None, *, unrelated=UNRELATED, limit=10, decay=1.0):
    rows = store(texts, decay)
    words = None if query is None else words_of(query, texts)
    return ranking.end(ranking.fuse(keyword, nearest, rows, words, unrelated), limit)


def ids(page: ranking.Fused) -> list[int]:
    return [m["id"] for m in page.results]


FILLERS = {i: f"note {i} about the weekly meeting" for i in range(10, 20)}


def test_what_one_leg_finds_strongly_is_not_buried_under_what_both_find_weakly():
    texts = {1: "Deploys are blocked on Fridays", 2: "the cache the", 3: "the queue the"}
    # 1: the model's clear first, no keyword hit. 2 and 3: both legs, each weakly ("the").
    keyword = [(2, 0.5), (3, 0.4)]
    nearest = [(1, 0.86), (2, 0.75), (3, 0.745)]
    page = fused(keyword, nearest, texts | FILLERS, "the release schedule")
    assert ids(page)[0] == 1


def test_an_exact_term_hit_and_a_paraphrase_both_surface():
    texts = {
        7: "vec0 raised E5023 on insert",
        1: "The vector table rejects blobs of the wrong size",
    }
    keyword = [(7, 9.0)]  # the rare identifier, in one memory only
    nearest = [(1, 0.86), (7, 0.80), *((i, 0.72) for i in FILLERS)]
    assert ids(fused(keyword, nearest, texts | FILLERS, "E5023", limit=2)) == [7, 1]


def test_a_target_only_the_keyword_leg_finds_beats_the_fillers_the_model_likes():
    texts = {5: "The invoice PDF renderer needs wkhtmltopdf 0.12"} | FILLERS
    keyword = [(5, 7.0)]
    nearest = [(i, 0.80 - i / 1000) for i in FILLERS] + [(5, 0.70)]
    assert ids(fused(keyword, nearest, texts, "wkhtmltopdf renderer"))[0] == 5


def test_decay_multiplies_the_fused_score_once():
    texts = {1: "a", 2: "b"}
    page = fused([], [(1, 0.90), (2, 0.89)], texts, decay=0.5)
    for why in page.why.values():
        assert why["score"] == pytest.approx(0.5 * why["fused"])


def test_the_page_ends_where_relevance_drops_and_explain_says_where():
    texts = {1: "a", 2: "b", 3: "c", 4: "d"}
    nearest = [(1, 0.86), (2, 0.85), (3, 0.75), (4, 0.71)]  # 8, 7.5, 2.5 and 0.5 sd
    page = fused([], nearest, texts)
    assert ids(page) == [1, 2]  # 3 is above the floor but far below the best; 4 is noise
    cut = page.explain["cut"]
    assert (cut["candidates"], cut["kept"], cut["returned"]) == (4, 2, 2)
    assert cut["sigmas"] == pytest.approx(ranking.FLOOR_SIGMAS + ranking.KEEP_MEANING_LOW * 6)
    assert "2 of 4 candidates kept" in cut["reason"] and "σ above unrelated text" in cut["reason"]


def test_a_question_about_nothing_the_store_holds_gets_nothing():
    texts = {1: "a", 2: "b", 3: "c"}
    nearest = [(1, 0.73), (2, 0.72), (3, 0.71)]  # all under the floor: nothing stands out
    page = fused([], nearest, texts)
    assert ids(page) == []
    assert "under the 2.0σ floor" in page.explain["cut"]["reason"]


def test_a_page_whose_best_barely_clears_the_floor_keeps_only_what_is_nearly_as_close():
    # 2.5, 2.3 and 2.2 sd: nothing stands clearly above unrelated text (an off-topic
    # question looks like this), so a match 40% of the best's margin over the floor is out.
    texts = {1: "a", 2: "b", 3: "c"}
    nearest = [(1, 0.750), (2, 0.746), (3, 0.744)]
    page = fused([], nearest, texts)
    assert ids(page) == [1, 2]
    # The same spread far above the floor keeps all three: the best is a clear answer.
    nearest = [(1, 0.800), (2, 0.796), (3, 0.794)]
    assert ids(fused([], nearest, texts)) == [1, 2, 3]


def test_no_result_has_a_fused_score_of_zero():
    texts = {1: "retry the upload", 2: "the cache", 3: "unrelated"} | FILLERS
    keyword = [(1, 3.0), (2, 0.3)]
    nearest = [(1, 0.80), (2, 0.76), (3, 0.74), *((i, 0.70) for i in FILLERS)]
    page = fused(keyword, nearest, texts, "retry the upload")
    assert page.results and all(why["fused"] > 0 for why in page.why.values())


def test_a_keyword_leg_whose_best_holds_little_of_the_question_does_not_reorder_the_model():
    # "machine" is the one word the question shares with the store; its memory is not the
    # answer, which the model ranks first.
    texts = {1: "Must run fully offline: no downloads", 2: "check support on Intel machines"}
    texts |= FILLERS
    keyword = [(2, 2.0)]
    nearest = [(1, 0.85), (2, 0.84), *((i, 0.70) for i in FILLERS)]
    page = fused(keyword, nearest, texts, "can it work on an air gapped machine")
    assert page.explain["keyword_trust"] == 0.0
    assert ids(page)[:2] == [1, 2]


def test_words_typed_together_rank_above_the_same_words_apart():
    texts = {
        1: "the rate limit of the upload endpoint",
        2: "limit the rate at which workers retry",
        3: "the rate of the limit switch",
    } | FILLERS
    keyword = [(2, 3.0), (3, 2.9), (1, 2.8)]  # bm25 alone prefers the others
    nearest = [(i, 0.80) for i in (1, 2, 3)]
    page = fused(keyword, nearest, texts, "rate limit")
    assert ids(page)[0] == 1
    assert page.why[1]["keyword"]["together"] == ["rate limit"]
    assert "'rate limit' as typed" in page.why[1]["reason"]


def test_a_keyword_page_puts_words_typed_together_first_and_ends_on_its_one_leg():
    texts = {1: "limit the rate of retries", 2: "the rate limit is 100 a minute"} | FILLERS
    words = words_of("rate limit", texts)
    scored = [(store(texts)[1], 1 + 2.0), (store(texts)[2], 1 + 1.9)]
    page = ranking.end(ranking.keyword_ranking(scored, words), 10)
    assert ids(page) == [2, 1]
    assert page.why[2]["score"] == pytest.approx(1 + 1.9 + max(words.weights))
    assert page.explain["score"] == "decay + bm25 + words typed together"


def test_a_keyword_page_of_weak_matches_is_empty():
    texts = {1: "what we did last week", 2: "what the plan was"} | FILLERS
    words = words_of("what is the capital of australia", texts)
    rows = store(texts)
    page = ranking.end(ranking.keyword_ranking([(rows[1], 1.1), (rows[2], 1.05)], words), 10)
    assert ids(page) == []
    assert "no keyword match" in page.explain["cut"]["reason"]


def test_the_page_s_best_is_taken_among_what_can_be_shown():
    # The superseded memory (1) held the whole question; what replaced it holds part of it
    # and still answers.
    texts = {1: "Releases are cut every Tuesday from main", 2: "Releases are cut on Thursday"}
    keyword = [(1, 1e-6), (2, 5e-7)]
    nearest = [(1, 0.80), (2, 0.79)]
    ranked = ranking.fuse(
        keyword, nearest, store(texts), words_of("releases Tuesday", texts), UNRELATED
    )
    assert ids(ranking.end(ranked, 10, hidden={1})) == [2]


def test_with_no_vector_among_the_candidates_the_keyword_leg_decides():
    # A scope whose memories have no vector yet: the keyword leg alone makes the page.
    texts = {1: "flaky checkout test on CI", 2: "the checkout page"} | FILLERS
    page = fused([(1, 2.0), (2, 1.0)], [], texts, "flaky checkout test")
    assert ids(page) == [1]


def test_the_cut_can_be_turned_off():
    texts = {1: "a", 2: "b", 3: "c"}
    ranked = ranking.fuse([], [(1, 0.73), (2, 0.72), (3, 0.71)], store(texts), None, UNRELATED)
    assert ids(ranking.end(ranked, 10, cut=False)) == [1, 2, 3]


def test_why_tells_each_leg_and_why_the_memory_is_in():
    texts = {2: "the upload retry budget", 1: "how uploads recover"} | FILLERS
    page = fused([(2, 5.0)], [(1, 0.86), (2, 0.84)], texts, "upload retry budget")
    why = page.why[2]
    assert why["keyword"]["rank"] == 1 and why["keyword"]["bm25"] == 5.0
    assert why["keyword"]["words"] == ["upload", "retry", "budget"]
    assert why["keyword"]["share"] > 0.9
    assert why["vector"]["rank"] == 2 and why["vector"]["sigmas"] == pytest.approx(7.0)
    assert why["reason"].startswith("holds ")
    assert "in because" in why["reason"]
    assert page.explain["fusion"] == ranking.FUSION


@pytest.mark.parametrize("chosen", ["rrf", ranking.FUSION])
def test_the_fusion_is_the_module_s_constant(monkeypatch, chosen):
    monkeypatch.setattr(ranking, "FUSION", chosen)
    texts = {1: "a", 2: "the upload retry budget"} | FILLERS
    page = fused([(2, 5.0)], [(1, 0.86), (2, 0.84)], texts, "upload retry budget")
    assert page.explain["fusion"] == chosen
    if chosen == "rrf":  # second in both legs beats first in one
        assert ids(page)[:2] == [2, 1]
        assert page.why[2]["fused"] == pytest.approx(1 / 61 + 1 / 62)


def test_the_model_setting_ranks_by_cosine_alone_with_nothing_cut(monkeypatch):
    monkeypatch.setattr(ranking, "FUSION", ranking.MODEL_ONLY)
    texts = {1: "a", 2: "b", 3: "c", 4: "d"}
    page = fused([(2, 10.0), (3, 8.0)], [(1, 0.80), (2, 0.79), (4, 0.10)], texts)
    assert ids(page) == [1, 2, 4]
    assert [page.why[i]["fused"] for i in (1, 2, 4)] == [0.80, 0.79, 0.10]
    assert all(page.why[i]["keyword"] is None for i in (1, 2, 4))
    assert page.explain["fusion"] == "model"
