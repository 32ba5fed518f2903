"""Search quality with the real local model on the committed sets (tests/support/quality.py):
the hybrid ranks at least as well as each of its legs, the default page holds what answers
and little else, a question about nothing the store holds gets (almost) nothing, and a new
user's tiny store answers as a large one would.

The figures asserted are the measured ones with a little room (docs/retrieval.md has them);
a change that loses a question or grows the pages fails here."""

from __future__ import annotations

import pytest

from agent_memory import ranking
from agent_memory.embedders.local import Local
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support import everyday_set, project_set, semantic_set
from tests.support.local_model import needs_model
from tests.support.quality import KEYWORD, QualitySet, measure, stored

pytestmark = needs_model
T0 = 1_767_225_600
# The legs a hybrid page is measured against: keyword mode, the model alone ranked by cosine
# with nothing cut, and the model alone weighed and cut as the hybrid cuts (so that top 10
# compares the fusion, not the page's end).
LEGS = (KEYWORD, ranking.MODEL_ONLY, ranking.MEANING_ONLY)
SETS = {
    "semantic": QualitySet(
        "semantic",
        semantic_set.MEMORIES,
        semantic_set.PARAPHRASES + semantic_set.EXACT,
    ),
    "everyday": QualitySet.of("everyday", everyday_set),
    "project": QualitySet.of("project", project_set),
    "per-topic": QualitySet.of("project", project_set).only(project_set.ONE_PER_TOPIC),
}


@pytest.fixture(scope="module")
def embedder():
    return Local()


@pytest.fixture(scope="module")
def figures(tmp_path_factory, embedder):
    """Every set's figures, each mode, measured once."""
    out = {}
    for name, qset in SETS.items():
        path = tmp_path_factory.mktemp(name) / "memory.db"
        svc = MemoryService(open_store(path), clock=lambda: T0, embedder=embedder)
        try:
            ids = stored(svc, qset)
            out[name] = {m: measure(svc, qset, m, ids) for m in (*LEGS, "hybrid")}
        finally:
            svc.close()
    for name, modes in out.items():
        for mode, f in modes.items():
            print(
                f"{name:9} {mode:8} first {f.first}/{f.questions} top3 {f.top3} top10 {f.top10}"
                f" page {f.mean_page:.2f} off-topic {f.off_topic_page} zero {f.zero_scored}"
            )
    return out


@pytest.mark.parametrize("name", list(SETS))
def test_the_hybrid_ranks_at_least_as_well_as_each_leg(figures, name):
    hybrid = figures[name]["hybrid"]
    for leg in LEGS:
        assert hybrid.top3 >= figures[name][leg].top3, leg
    for leg in (KEYWORD, ranking.MEANING_ONLY):
        assert hybrid.top10 >= figures[name][leg].top10, leg


def test_paraphrases_and_exact_terms_both_surface(figures):
    hybrid = figures["semantic"]["hybrid"]
    paraphrases = hybrid.ranks[: len(semantic_set.PARAPHRASES)]
    exact = hybrid.ranks[len(semantic_set.PARAPHRASES) :]
    assert sum(r is not None and r <= 3 for r in paraphrases) >= semantic_set.TOP3_FLOOR + 1
    assert sum(r is not None and r <= 10 for r in paraphrases) >= semantic_set.TOP10_FLOOR
    assert exact == (1,) * len(semantic_set.EXACT)


def test_the_project_s_questions_get_their_answer_first_on_a_small_page(figures):
    hybrid = figures["project"]["hybrid"]
    assert hybrid.first_rate >= 0.8
    assert hybrid.mean_page <= 5
    assert figures["everyday"]["hybrid"].first == len(everyday_set.QUERIES)
    assert figures["everyday"]["hybrid"].mean_page <= 3


def test_a_store_of_one_memory_per_topic_answers_each_with_its_memory_and_few_others(figures):
    hybrid = figures["per-topic"]["hybrid"]
    assert hybrid.first >= hybrid.questions - 1
    assert hybrid.mean_page <= 2.5


def test_questions_about_nothing_the_store_holds_get_almost_nothing(figures):
    assert figures["project"]["hybrid"].off_topic_page <= 1.4
    assert figures["project"][KEYWORD].off_topic_page <= 1
    assert figures["per-topic"]["hybrid"].off_topic_page <= 1


def test_no_result_anywhere_has_a_score_of_zero(figures):
    for modes in figures.values():
        for mode, f in modes.items():
            assert f.zero_scored == 0, mode


@pytest.mark.parametrize("keyword_only", [False, True], ids=["hybrid", "keyword"])
def test_in_a_new_user_s_store_of_two_memories_the_replacement_answers(
    tmp_path, embedder, keyword_only
):
    """Releases moved from Tuesdays to Thursdays: asked about Tuesday releases, the store
    answers with what replaced the old rule, though "releases" is in every memory."""
    svc = MemoryService(open_store(tmp_path / "memory.db"), clock=lambda: T0, embedder=embedder)
    try:
        old = svc.store({"content": "Releases are cut every Tuesday from main", "type": "DECISION"})
        new = svc.store(
            {
                "content": "Releases are cut every Thursday from the release branch",
                "type": "DECISION",
                "supersedes": [old["id"]],
            }
        )
        asker = MemoryService(svc.db, clock=lambda: T0) if keyword_only else svc
        answer = asker.search({"query": "releases Tuesday"}, record_use=False)
        assert answer["search_mode"] == ("keyword" if keyword_only else "hybrid")
        assert [r["id"] for r in answer["results"]] == [new["id"]]
    finally:
        svc.close()
