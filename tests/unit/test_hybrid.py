"""Hybrid search over the fake Ollama: the keyword and vector legs, each calibrated, fused and
times decay; the page ends where relevance drops."""

from __future__ import annotations

import json
import shutil

import pytest

from agent_memory import ranking
from agent_memory.contract.vocabulary import DEFAULT_SEARCH_LIMIT
from agent_memory.embedders.calibration import UNRELATED
from agent_memory.embedders.ollama import Ollama
from agent_memory.service.core import MemoryService
from agent_memory.service.lifecycle import sweep
from agent_memory.storage import open_store
from agent_memory.storage.sqlite import vector_index, vectors
from agent_memory.storage.sqlite.keyword import KeywordIndex
from tests.support.fake_ollama import embed, embedder_for
from tests.support.files import reading
from tests.support.paraphrase_set import DATASTORE, PARAPHRASE, fill
from tests.support.spawned import NO_OLLAMA_URL
from tests.support.vector_index import load_vector_index


def ids_of(answer: dict) -> list[int]:
    return [r["id"] for r in answer["results"]]


def test_a_paraphrase_with_no_shared_word_is_found(hybrid, service):
    ids = fill(hybrid)
    # Keyword mode misses the target (it shares no word with it; "the" in 1 of 5 memories
    # counts as informative on so small a store, so a filler may come back).
    assert ids["datastore"] not in ids_of(service.search({"query": PARAPHRASE}))
    answer = hybrid.search({"query": PARAPHRASE, "limit": 3})
    assert answer["search_mode"] == "hybrid"
    assert ids_of(answer)[0] == ids["datastore"]


# Notes of a project that hold a question's small words, as a real store's memories do:
# without them, a word such as "which" or "to" is in no memory of a test store, and weighs
# as much as a rare identifier.
NOTES = [
    "Which of the queues to drain first is decided by the on-call engineer.",
    "Run the linter before you push, or the pipeline fails on style.",
    "The login page crashed on an empty password; fixed with a required field.",
    "We moved the nightly job to 02:00 so that it runs after the backup.",
    "Pick the smaller instance type for staging to keep the bill down.",
    "The dashboard shows which services answer slowly, or not at all.",
]


def test_an_exact_term_hit_and_a_paraphrase_hit_both_surface(hybrid):
    ids = fill(hybrid)
    for note in NOTES:
        hybrid.store({"content": note, "type": "PATTERN"})
    exact = hybrid.store({"content": "kore-runtime pins SQLAlchemy 2.1", "type": "CONSTRAINT"})
    # Half the question names the pinned library, half asks in other words what the
    # datastore memory says.
    answer = hybrid.search({"query": "SQLAlchemy pin, and which database to pick?", "limit": 2})
    assert set(ids_of(answer)) == {exact["id"], ids["datastore"]}


def test_the_order_is_the_sum_of_the_calibrated_legs_times_decay(hybrid, clock):
    """Each result's fused score is its keyword relevance (its share of the question's
    information against the page's best, times the keyword leg's trust) plus its meaning
    (sigmas beyond the floor, SIGMAS_PER_SHARE to a share), and its score that times its
    decay; the page is in that order."""
    fill(hybrid)
    for i in range(12):
        hybrid.store({"content": f"database note {i} about storage", "type": "PATTERN"})
        clock.advance(86_400)
    answer = hybrid.search({"query": "PostgreSQL note 3", "explain": True}, record_use=False)
    results = answer["results"]
    assert len(results) >= 2
    trust = answer["explain"]["keyword_trust"]
    best = max(r["why"]["keyword"]["share"] for r in results if r["why"]["keyword"])
    for r in results:
        why = r["why"]
        keyword = why["keyword"]["share"] / best * trust if why["keyword"] else 0.0
        sigmas = why["vector"]["sigmas"] if why["vector"] else ranking.FLOOR_SIGMAS
        meaning = max(sigmas - ranking.FLOOR_SIGMAS, 0.0) / ranking.SIGMAS_PER_SHARE
        assert why["fused"] == pytest.approx(keyword + meaning)
        assert why["score"] == pytest.approx(why["fused"] * why["decay"])
    scores = [r["why"]["score"] for r in results]
    assert scores == sorted(scores, reverse=True)


def test_decay_is_multiplied_once_so_the_fresher_twin_wins(hybrid, clock):
    older = hybrid.store({"content": "database pick twin", "type": "TODO"})["id"]
    clock.advance(90 * 86_400)  # three half-lives: the older twin's decay is 1/8
    # (another scope: in the same one the same text would be a duplicate)
    newer = hybrid.store({"content": "database pick twin", "type": "TODO", "scope": "b"})["id"]
    answer = hybrid.search({"query": "database pick twin"})
    assert ids_of(answer) == [newer, older]  # the older one is 1st in both legs (ties by id)
    first, second = answer["results"]
    assert first["decay_score"] == pytest.approx(1.0)
    assert second["decay_score"] == pytest.approx(0.125)


def test_an_empty_hybrid_answer_is_still_hybrid(hybrid):
    hybrid.store({"content": "the first vector pins the database", "type": "TODO"})
    answer = hybrid.search({"query": "anything at all", "type": "ERROR"})
    assert answer == {"search_mode": "hybrid", "results": []}


def test_without_any_vector_yet_the_answer_is_keyword(hybrid, service):
    assert hybrid.search({"query": "anything"}) == {"search_mode": "keyword", "results": []}
    service.store({"content": "stored without a vector", "type": "TODO"})
    answer = hybrid.search({"query": "vector"})
    assert answer["search_mode"] == "keyword" and len(answer["results"]) == 1


@pytest.mark.parametrize("query", ["", "?!", "*"])
def test_a_wordless_query_answers_from_the_vector_leg_alone(hybrid, query, db_path, no_cut):
    fill(hybrid)
    with reading(db_path) as conn:
        nearest = [i for i, _ in vectors.ranking(conn, hybrid.embedder.embed_query(query), 8)]
    answer = hybrid.search({"query": query, "limit": 3, "explain": True})
    assert answer["search_mode"] == "hybrid"
    assert ids_of(answer) == nearest[:3]
    assert all(r["why"]["keyword"] is None for r in answer["results"])


def test_filters_apply_to_both_legs(hybrid):
    fill(hybrid)
    hybrid.store({"content": "database choice for tests", "type": "TODO", "tags": ["db"]})
    for args in ({"type": "TODO"}, {"tag": "db"}, {"scope": "nowhere"}):
        answer = hybrid.search({"query": PARAPHRASE, **args})
        rows = {m["id"]: m for m in hybrid.list({})}
        for result in answer["results"]:
            memory = rows[result["id"]]
            assert args.get("type", memory["type"]) == memory["type"]
            assert args.get("tag", "db") in memory["tags"] or "tag" not in args
        assert args.get("scope") != "nowhere" or answer["results"] == []


# Ten projects of memories on the same topics; the filters below each pick out project 3.
PROJECT_WORDS = ["database", "cache", "crash", "latency", "login", "rollout", "vector", "pytest"]
PROJECTS, PER_PROJECT = 10, 12
# No word of it is in any memory: the keyword leg finds nothing, the ranking is the model's.
TOPIC_QUESTION = "which datastore got picked for redis lag"
AREA_FILTERS = [{"scope": "project-3"}, {"type": "DECISION"}, {"tag": "area-3"}]


def projects(only: int | None = None) -> list[dict]:
    """Project g's memories carry scope project-g and tag area-g; only project 3's are
    DECISIONs. ``only``: that project's memories alone."""
    others = ["PATTERN", "ERROR", "TODO", "ARCHITECTURE", "CONSTRAINT"]
    return [
        {
            "content": f"{PROJECT_WORDS[(g + k) % 8]} {PROJECT_WORDS[(3 * g + 2 * k) % 8]} "
            f"area{g}note{k}",
            "type": "DECISION" if g == 3 else others[(g + k) % 5],
            "tags": [f"area-{g}"],
            "scope": f"project-{g}",
        }
        for g in range(PROJECTS)
        for k in range(PER_PROJECT)
        if only is None or g == only
    ]


@pytest.fixture(params=["index", "sql"])
def vector_path(request, monkeypatch):
    """The SQLite vector leg by this process's index (loaded before the searches), or by
    SQL (as before the index is loaded, or without numpy)."""
    if request.param == "sql":
        monkeypatch.setattr(vector_index, "np", None)
    return request.param


@pytest.mark.parametrize("area", AREA_FILTERS, ids=["scope", "type", "tag"])
def test_a_filtered_search_recalls_what_a_database_of_that_area_alone_does(
    tmp_path, clock, ollama, vector_path, area, no_cut
):
    """Filters apply before the vector leg's cut: among ten projects, a search filtered to
    one finds what the same search finds in a database holding that project alone."""
    answers = []
    for name, only in (("all", None), ("alone", 3)):
        svc = MemoryService(
            open_store(tmp_path / f"{name}.db"), clock=clock, embedder=embedder_for(ollama.url)
        )
        try:
            for memory in projects(only):
                svc.store(memory)
            if vector_path == "index":
                load_vector_index(svc.db)
            answer = svc.search({"query": TOPIC_QUESTION, "limit": 5, **area})
            assert answer["search_mode"] == "hybrid"
            answers.append([m["content"] for m in answer["results"]])
        finally:
            svc.close()
    among_ten, alone = answers
    assert len(alone) == 5
    assert among_ten == alone


def test_the_keyword_leg_filters_before_its_cut(hybrid):
    for i in range(8):
        hybrid.store({"content": f"redis cache note {i}", "type": "TODO"})
    wanted = hybrid.store({"content": "redis", "type": "DECISION"})["id"]
    answer = hybrid.search({"query": "redis", "type": "DECISION", "limit": 1})
    assert ids_of(answer) == [wanted]


def test_only_returned_results_are_bumped(hybrid, clock, raw):
    fill(hybrid)
    clock.advance(1000)
    answer = hybrid.search({"query": PARAPHRASE, "limit": 2})
    returned = set(ids_of(answer))
    for memory_id, access_count, last_accessed in raw.execute(
        "SELECT id, access_count, last_accessed FROM memories"
    ):
        bumped = memory_id in returned
        assert access_count == (1 if bumped else 0)
        assert (last_accessed == clock.now) is bumped


def test_queries_and_documents_carry_their_task_prefixes(hybrid, ollama):
    hybrid.store({"content": DATASTORE, "type": "DECISION"})
    hybrid.search({"query": PARAPHRASE})
    assert ollama.embedded == [
        f"search_document: {DATASTORE}",
        f"search_query: {PARAPHRASE}",
        # the texts on other topics the model's similarity is measured against, embedded
        # once, as memories are
        *(f"search_document: {text}" for text in UNRELATED),
    ]


def test_no_ollama_call_is_made_while_a_write_is_open(hybrid, ollama, writes):
    free = []

    def check(_texts):
        free.append(writes.open == 0)

    ollama.on_embed = check
    memory_id = hybrid.store({"content": DATASTORE, "type": "DECISION"})["id"]
    hybrid.update({"id": memory_id, "content": "We chose SQLite."})
    hybrid.search({"query": PARAPHRASE})
    hybrid.update({"id": memory_id, "tags": ["x"]})
    hybrid.db.update(memory_id, {"content": "pending again"}, hybrid.now(), None)
    sweep(hybrid)
    assert free == [True] * 5  # the search's query, then the unrelated texts


# -- fallback: the keyword answer, byte for byte ---------------------------------------------

QUERIES = [PARAPHRASE, "database", "PostgreSQL", "login, password?", "?!", "roll*", '"redis layer"']


@pytest.mark.parametrize(
    "embedder",
    [
        lambda fake: embedder_for(NO_OLLAMA_URL),  # nothing listens
        lambda fake: embedder_for(fake.url, "not-pulled-model"),
        lambda fake: embedder_for(fake.url),  # with fake.down
    ],
    ids=["unreachable", "model-missing", "down"],
)
def test_without_embeddings_the_answer_is_the_keyword_answer_byte_for_byte(
    embedder, tmp_path, clock, ollama
):
    first = tmp_path / "a.db"
    with_vectors = MemoryService(open_store(first), clock=clock, embedder=embedder_for(ollama.url))
    fill(with_vectors)
    with_vectors.close()
    second = tmp_path / "b.db"
    shutil.copyfile(first, second)
    ollama.down = True
    keyword = MemoryService(open_store(first), clock=clock)
    fallback = MemoryService(open_store(second), clock=clock, embedder=embedder(ollama))
    try:
        for query in QUERIES:
            for args in ({}, {"type": "ERROR"}, {"limit": 1}):
                expected = keyword.search({"query": query, **args})
                got = fallback.search({"query": query, **args})
                assert got["search_mode"] == "keyword"
                assert json.dumps(got) == json.dumps(expected)
    finally:
        keyword.close()
        fallback.close()


def test_a_slow_ollama_times_out_and_is_left_alone_for_a_while(db_path, clock, ollama):
    import threading

    ollama.hold = threading.Event()  # answers only when released
    embedder = Ollama(ollama.url, "nomic-embed-text", read_timeout=0.2, retry_after=3600)
    svc = MemoryService(open_store(db_path), clock=clock, embedder=embedder)
    try:
        first = svc.store({"content": DATASTORE, "type": "DECISION"})["id"]
        asked = ollama.embed_requests()
        svc.store({"content": "second", "type": "TODO"})
        assert svc.search({"query": "datastore"})["search_mode"] == "keyword"
        assert ollama.embed_requests() == asked  # within the retry window: not asked again
        ollama.hold.set()
        assert svc.backfill() == 2  # the sweep asks anyway, and so ends the outage
        assert svc.search({"query": PARAPHRASE})["search_mode"] == "hybrid"
        assert ids_of(svc.search({"query": PARAPHRASE}))[0] == first
    finally:
        svc.close()


def test_the_embedding_is_the_model_answer_for_the_prefixed_text(hybrid, raw):
    import struct

    memory_id = hybrid.store({"content": DATASTORE, "type": "DECISION"})["id"]
    (blob,) = raw.execute(
        "SELECT vector FROM memory_vector_floats WHERE memory_id = ?", (memory_id,)
    ).fetchone()
    assert list(struct.unpack("<768f", blob)) == pytest.approx(embed(DATASTORE), abs=1e-6)


def test_leg_size_is_four_times_the_limit_capped_at_800(monkeypatch, hybrid):
    seen = []
    real = KeywordIndex.leg

    def spy(self, conn, query, *, now, limit, filters):
        seen.append(limit)
        return real(self, conn, query, now=now, limit=limit, filters=filters)

    monkeypatch.setattr(KeywordIndex, "leg", spy)
    hybrid.store({"content": "a vector, so that searches are hybrid", "type": "TODO"})
    for limit in (1, 10, 200):
        hybrid.search({"query": "x", "limit": limit})
    hybrid.search({"query": "x"})
    assert seen == [4, 40, 800, 4 * DEFAULT_SEARCH_LIMIT]
    assert [ranking.leg_size(limit) for limit in (1, 10, 200, 201)] == [4, 40, 800, 800]


def test_the_coarse_pass_over_many_vectors_agrees_with_exact_knn(hybrid, monkeypatch, raw, db_path):
    fill(hybrid)
    words = ["database", "cache", "login", "rollout", "vector", "pytest", "crash", "latency"]
    for i in range(60):
        text = f"{words[i % 8]} {words[(i * 3) % 8]} note{i} {words[(i * 5) % 8]}"  # all distinct
        hybrid.store({"content": text, "type": "TODO"})
    for query in [PARAPHRASE, "slow cache", "auth crash", "ship vectors"]:
        embedding = hybrid.embedder.embed_query(query)
        with reading(db_path) as conn:
            exact = [i for i, _ in vectors.ranking(conn, embedding, 10)]
            monkeypatch.setattr(vectors, "EXACT_KNN_MAX_VECTORS", 0)
            monkeypatch.setattr(vectors, "COARSE_MIN_CANDIDATES", 20)  # so the cut matters
            coarse = [i for i, _ in vectors.ranking(conn, embedding, 10)]
            monkeypatch.undo()
        distance = {
            memory_id: d
            for memory_id, d in raw.execute(
                "SELECT memory_id, vec_distance_cosine(vector, ?) FROM memory_vector_floats",
                (embedding.vector,),
            )
        }
        # The same ten up to ties at the cut (this embedder makes many exactly equal distances;
        # vec0 cuts among those in its own order, the coarse pass by id).
        cut = distance[exact[-1]]
        assert len(coarse) == 10
        assert all(distance[i] <= cut + 1e-6 for i in coarse)
        assert {i for i in coarse if distance[i] < cut - 1e-6} == {
            i for i in exact if distance[i] < cut - 1e-6
        }


def test_an_off_topic_question_gets_nothing(hybrid):
    """The page's end with a test embedder: nothing stands above the unrelated texts, and
    no word of the question is in the store, so nothing comes back (not the whole store)."""
    fill(hybrid)
    answer = hybrid.search({"query": "banana bread with walnuts", "explain": True})
    assert answer["search_mode"] == "hybrid"
    assert answer["results"] == []
    assert answer["explain"]["cut"]["candidates"] == 5
    assert "under the 2.0σ floor" in answer["explain"]["cut"]["reason"]
