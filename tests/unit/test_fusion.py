"""The hybrid fusion (ranking.fuse) on hand-made legs: what it promises, whatever the store."""

from __future__ import annotations

import pytest

from agent_memory.contract.models import KeywordScale, Noise
from agent_memory.search import ranking


def rows(*ids: int, decay: float = 1.0) -> dict[int, dict]:
    return {i: {"id": i, "decay_score": decay} for i in ids}


SAMPLE = Noise(0.5, 0.05, 64)  # the store's memories as the query sees them


def page(keyword, nearest, *, noise=SAMPLE, unrelated=None, ideal=None, limit=10):
    found = rows(*{i for i, _ in [*keyword, *nearest]})
    scale = None if ideal is None else KeywordScale(ideal, {}, ())
    return ranking.fuse(keyword, nearest, noise, found, limit, None, scale, unrelated)


def ids(fused: ranking.Fused) -> list[int]:
    return [m["id"] for m in fused.results]


def test_what_one_leg_finds_strongly_is_not_buried_under_what_both_find_weakly():
    # 1: the model's clear first, no keyword hit. 2 and 3: both legs, each weakly.
    keyword = [(2, 4.0), (3, 3.5)]
    nearest = [(1, 0.9), (2, 0.62), (3, 0.6)]
    assert ids(page(keyword, nearest, ideal=10.0))[0] == 1


def test_an_exact_term_hit_and_a_paraphrase_both_surface():
    keyword = [(7, 9.0)]  # the rare identifier, in one memory only
    nearest = [(1, 0.9), (2, 0.7), (7, 0.55), (3, 0.52)]
    top = ids(page(keyword, nearest, ideal=9.5, limit=2))
    assert top == [7, 1]


def test_decay_multiplies_the_fused_score_once():
    fused = ranking.fuse([], [(1, 0.9), (2, 0.89)], Noise(0.5, 0.05, 64), rows(1, 2, decay=0.5), 2)
    assert [fused.why[i]["score"] for i in (1, 2)] == pytest.approx(
        [0.5 * fused.why[i]["fused"] for i in (1, 2)]
    )


def test_the_floor_cuts_what_the_model_puts_among_unrelated_texts_but_keeps_its_best():
    unrelated = Noise(0.70, 0.02, 12)  # the floor: 0.74
    nearest = [(1, 0.73), (2, 0.72), (3, 0.71)]  # an off-topic question: nothing stands out
    fused = page([], nearest, unrelated=unrelated)
    assert ids(fused) == [1]
    assert fused.explain["below_floor"] == 2
    assert fused.explain["floor"]["similarity"] == pytest.approx(0.74)
    on_topic = [(1, 0.85), (2, 0.80), (3, 0.71)]
    assert ids(page([], on_topic, unrelated=unrelated)) == [1, 2]


def test_a_keyword_hit_holding_a_quarter_of_the_query_stays():
    keyword = [(1, 6.0), (2, 2.0)]  # 2 holds only a common word of the question
    nearest = [(3, 0.9), (1, 0.5), (2, 0.5)]
    fused = page(keyword, nearest, unrelated=Noise(0.6, 0.05, 12), ideal=20.0)
    assert ids(fused) == [3, 1]
    assert fused.explain["floor"]["keyword"] == pytest.approx(5.0)


def test_the_floor_can_be_turned_off(monkeypatch):
    nearest = [(1, 0.73), (2, 0.72), (3, 0.71)]
    monkeypatch.setattr(ranking, "FLOOR", False)
    assert ids(page([], nearest, unrelated=Noise(0.70, 0.02, 12))) == [1, 2, 3]


def test_why_tells_each_leg_s_rank_score_and_share():
    fused = page([(2, 5.0)], [(1, 0.9), (2, 0.7)], ideal=10.0)
    assert fused.why[2]["keyword"] == {"rank": 1, "bm25": 5.0, "share": 0.5}
    assert fused.why[2]["vector"]["rank"] == 2
    assert fused.why[2]["vector"]["share"] == pytest.approx((0.7 - 0.5) / (0.9 - 0.5))
    assert fused.why[1]["keyword"] is None
    assert fused.why[2]["fused"] == pytest.approx(0.5 * 0.5**2 + 0.5 * 0.5)
    assert fused.explain["fusion"] == "convex"


@pytest.mark.parametrize(
    ("chosen", "used"), [("rrf", "rrf"), ("convex", "convex"), ("x", "convex")]
)
def test_the_fusion_is_chosen_by_the_environment(monkeypatch, chosen, used):
    monkeypatch.setenv(ranking.FUSION_ENV, chosen)
    fused = page([(2, 5.0)], [(1, 0.9), (2, 0.7)], ideal=10.0)
    assert fused.explain["fusion"] == used
    if used == "rrf":  # second in both legs beats first in one
        assert ids(fused) == [2, 1]
        assert fused.why[2]["fused"] == pytest.approx(1 / 61 + 1 / 62)


def test_a_keyword_page_explains_bm25_and_decay():
    memory = {"id": 4, "decay_score": 0.5}
    fused = ranking.keyword_page([(memory, 3.5)])
    assert fused.why[4] == {
        "keyword": {"rank": 1, "bm25": 3.0},
        "vector": None,
        "decay": 0.5,
        "score": 3.5,
    }


def test_linear_and_dbsf_fuse_as_their_formulas_say(monkeypatch):
    keyword, nearest = [(2, 5.0), (3, 1.0)], [(1, 0.9), (2, 0.7), (3, 0.5)]
    monkeypatch.setenv(ranking.FUSION_ENV, "linear")
    linear = page(keyword, nearest, ideal=10.0)
    assert linear.why[2]["fused"] == pytest.approx(0.5 * 0.5 + 0.5 * 0.5)
    monkeypatch.setenv(ranking.FUSION_ENV, "dbsf")
    dbsf = page(keyword, nearest, ideal=10.0)
    k_mean, k_sd = 3.0, 2.0
    v_mean = 0.7
    v_sd = (((0.2**2) * 2) / 3) ** 0.5
    expected = (5.0 - (k_mean - 3 * k_sd)) / (6 * k_sd) + (0.7 - (v_mean - 3 * v_sd)) / (6 * v_sd)
    assert dbsf.why[2]["fused"] == pytest.approx(expected)


def test_with_no_vector_among_the_candidates_the_keyword_leg_s_best_stays():
    # A scope whose memories have no vector yet: the floor never empties the page.
    fused = page([(1, 2.0), (2, 1.0)], [], ideal=20.0)
    assert ids(fused) == [1]
