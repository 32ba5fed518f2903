"""The project set's shape (tests/support/project_set.py), and the quality helper's figures
(tests/support/quality.py) read against the pages the service returns."""

from __future__ import annotations

from collections import Counter

import pytest

from agent_memory.contract.vocabulary import MEMORY_TYPES
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support import project_set
from tests.support.quality import (
    KEYWORD,
    MODES,
    QualitySet,
    load_set,
    measure,
    stored,
    zero_scored,
)
from tests.support.semantic_set import Memory, Query

T0 = 1_767_225_600


def test_the_project_set_is_a_whole_project_with_neighbours():
    keys = [m.key for m in project_set.MEMORIES]
    assert len(keys) >= 40 and len(set(keys)) == len(keys)
    assert len({m.content for m in project_set.MEMORIES}) == len(keys)
    assert Counter(m.type for m in project_set.MEMORIES).keys() == set(MEMORY_TYPES)
    lengths = sorted(len(m.content) for m in project_set.MEMORIES)
    assert lengths[0] < 150 and lengths[-1] > 250  # short notes and long ones
    # near topics: several memories about the database, the deploys, billing
    for tag, least in (("database", 3), ("deploy", 2), ("billing", 3)):
        assert sum(tag in tags for tags in project_set.TAGS.values()) >= least, tag
    assert set(project_set.TAGS) == set(keys)


def test_every_question_names_memories_of_the_set():
    keys = {m.key for m in project_set.MEMORIES}
    assert len(project_set.QUERIES) >= 30
    assert len({q.query for q in project_set.QUERIES}) == len(project_set.QUERIES)
    assert all(set(q.answers) <= keys for q in project_set.QUERIES)
    assert len(project_set.OFF_TOPIC) >= 10
    assert set(project_set.ONE_PER_TOPIC) <= keys
    assert {q.target for q in project_set.ONE_PER_TOPIC_QUERIES} == set(project_set.ONE_PER_TOPIC)


@pytest.fixture
def keyword_service(tmp_path):
    svc = MemoryService(open_store(tmp_path / "memory.db"), clock=lambda: T0)
    yield svc
    svc.close()


def test_the_figures_record_no_use(tmp_path):
    clock = [T0]
    svc = MemoryService(open_store(tmp_path / "memory.db"), clock=lambda: clock[0])
    try:
        qset = QualitySet.of("project", project_set)
        ids = stored(svc, qset)
        clock[0] = T0 + 3600
        assert measure(svc, qset, KEYWORD, ids).top10 > 0
        assert {m["last_accessed"] for m in svc.list({})} == {T0}
    finally:
        svc.close()


def test_the_figures_are_the_pages_the_service_returns(keyword_service):
    qset = QualitySet.of("project", project_set)
    ids = stored(keyword_service, qset)
    keys = {i: k for k, i in ids.items()}
    figures = measure(keyword_service, qset, KEYWORD, ids)
    for q, rank, page in zip(qset.queries, figures.ranks, figures.pages, strict=True):
        answer = keyword_service.search({"query": q.query}, record_use=False)
        assert page == tuple(keys[r["id"]] for r in answer["results"])
        found = [n for n, key in enumerate(page, 1) if key in q.answers]
        assert rank == (found[0] if found else None)
    assert figures.first == sum(r == 1 for r in figures.ranks)
    assert figures.mean_page == sum(map(len, figures.pages)) / len(qset.queries)
    assert len(figures.off_topic_pages) == len(qset.off_topic)


def test_a_set_kept_to_some_memories_keeps_their_questions(keyword_service):
    qset = QualitySet.of("project", project_set)
    small = qset.only(project_set.ONE_PER_TOPIC)
    assert [m.key for m in small.memories] == [
        m.key for m in project_set.MEMORIES if m.key in project_set.ONE_PER_TOPIC
    ]
    assert small.queries == project_set.ONE_PER_TOPIC_QUERIES
    figures = measure(keyword_service, small, KEYWORD)
    assert figures.questions == len(small.queries)
    assert len(keyword_service.list({})) == len(small.memories)


def test_a_held_out_set_loads_from_a_file(tmp_path, keyword_service):
    path = tmp_path / "held.py"
    path.write_text(
        "MEMORIES = [('a', 'DECISION', 'We ship on Tuesdays.'), "
        "('b', 'TODO', 'Buy a bigger kettle for the office.')]\n"
        "QUERIES = [('when do we ship', 'a'), ('kettle', 'b', 'a')]\n"
        "OFF_TOPIC = ['how tall is mount everest']\n"
    )
    qset = load_set(path)
    assert qset.name == "held"
    assert qset.memories[0] == Memory("a", "DECISION", "We ship on Tuesdays.")
    assert qset.queries[1] == Query("kettle", "b", ("a",))
    figures = measure(keyword_service, qset, KEYWORD)
    assert figures.ranks == (1, 1)
    assert figures.off_topic_pages == ((),)


def test_a_mode_by_meaning_needs_an_embedder(keyword_service):
    qset = QualitySet("tiny", (Memory("a", "TODO", "one"),), (Query("one", "a"),))
    for mode in MODES:
        if mode != KEYWORD:
            with pytest.raises(ValueError, match="needs a service with an embedder"):
                measure(keyword_service, qset, mode)
    with pytest.raises(ValueError, match="unknown mode"):
        measure(keyword_service, qset, "nonsense")


def test_a_zero_score_is_seen_and_a_missing_one_is_loud():
    assert zero_scored({"why": {"fused": 0.0, "score": 0.0}})
    assert not zero_scored({"why": {"fused": 0.2, "score": 0.1}})
    assert not zero_scored({"why": {"keyword": {"rank": 1}, "score": 3.5}})  # a keyword page
    with pytest.raises(KeyError):
        zero_scored({"why": {"relevance": 0.0}})
