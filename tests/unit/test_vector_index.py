"""Each process's in-memory vector index (storage/sqlite/vector_index.py): the same nearest
memories as an exact scan, and never a memory the database no longer holds.

Two stores on one file stand for two processes here (each keeps its own index); the end-to-
end test at the bottom runs two real ``agent-memory serve`` processes.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from agent_memory.contract.models import Embedding, Filters, Pin
from agent_memory.query import read as read_query
from agent_memory.storage import open_store
from agent_memory.storage.base import NewMemory
from agent_memory.storage.sqlite import vector_codes, vector_index, vectors
from tests.support.vector_index import load_vector_index

T0 = 1_767_225_600
DIMENSION = 256
PIN = Pin("toy", DIMENSION, "none")


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    """Anisotropic vectors, as a real model's are: a shared direction plus noise."""
    base = rng.normal(size=DIMENSION).astype(np.float32)
    x = base + 0.6 * rng.normal(size=(n, DIMENSION)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def embedding(vector: np.ndarray) -> Embedding:
    return Embedding(PIN, vector.astype("<f4").tobytes())


def fill(store, matrix: np.ndarray) -> list[int]:
    return [
        store.insert(NewMemory("TODO", f"memory {i}", [], None, None, T0, None), embedding(v))
        for i, v in enumerate(matrix)
    ]


def nearest(store, query: np.ndarray, limit: int = 10, filters: Filters | None = None) -> list[int]:
    """The vector leg's page (no keyword hit, nothing cut)."""
    page = store.search(
        read_query(""),
        embedding(query),
        now=T0,
        limit=limit,
        filters=filters or Filters(),
        floor=False,
    )
    return [m["id"] for m in page.results]


def exact(ids: list[int], matrix: np.ndarray, query: np.ndarray, limit: int) -> list[int]:
    distance = 1.0 - matrix @ query
    order = np.lexsort((ids, distance))
    return [ids[i] for i in order[:limit]]


@pytest.fixture
def small(monkeypatch):
    """Thresholds small enough that a few hundred vectors go through every stage."""
    monkeypatch.setattr(vector_codes, "STAGE1_MIN_ROWS", 100)
    monkeypatch.setattr(vector_codes, "STAGE1_KEEP", 250)
    monkeypatch.setattr(vector_index, "RERANK_MIN", 200)
    monkeypatch.setattr(vector_index, "SAMPLE_ROWS", 100)
    monkeypatch.setattr(vector_index, "LOAD_CHUNK_ROWS", 64)


@pytest.fixture
def two(db_path):
    """Two stores on one file: two processes' indexes."""
    first, second = open_store(db_path), open_store(db_path)
    yield first, second
    first.close()
    second.close()


def test_the_index_finds_what_an_exact_scan_finds(db_path, small):
    rng = np.random.default_rng(1)
    matrix = unit(rng, 400)
    store = open_store(db_path)
    try:
        ids = fill(store, matrix)
        load_vector_index(store)
        queries = unit(rng, 20)
        found = [nearest(store, q) for q in queries]
        expected = [exact(ids, matrix, q, 10) for q in queries]
        recall = np.mean([len(set(f) & set(e)) / 10 for f, e in zip(found, expected, strict=True)])
        assert recall >= 0.98
        assert sum(f == e for f, e in zip(found, expected, strict=True)) >= 18
    finally:
        store.close()


def test_another_process_s_vectors_are_found_at_the_next_search(two, small):
    first, second = two
    rng = np.random.default_rng(2)
    fill(first, unit(rng, 200))
    load_vector_index(second)
    fresh = unit(rng, 1)[0]
    (new_id,) = fill(first, fresh[None, :])
    assert nearest(second, fresh, 1) == [new_id]


def test_an_updated_memory_is_found_by_its_new_meaning_only(two, small):
    first, second = two
    rng = np.random.default_rng(3)
    matrix = unit(rng, 200)
    ids = fill(first, matrix)
    load_vector_index(second)
    target, old = ids[7], matrix[7]
    new = -old  # the far end of the space from what it meant before
    first.update(target, {"content": "new"}, T0, embedding(new))
    assert nearest(second, new, 1) == [target]
    assert target not in nearest(second, old, 10)


@pytest.mark.parametrize("how", ["forgotten", "expired"])
def test_a_memory_gone_from_the_database_is_never_returned(two, small, how):
    first, second = two
    rng = np.random.default_rng(4)
    matrix = unit(rng, 200)
    ids = fill(first, matrix)
    load_vector_index(second)
    target = ids[11]
    if how == "forgotten":
        first.delete(target)
    else:
        first.update(target, {"expires_at": T0}, T0, None)
        assert first.delete_expired(T0)[0] == 1
    assert target not in nearest(second, matrix[11], 10)


def test_a_pruned_log_or_a_new_pin_loads_the_index_again(two, small, raw):
    first, second = two
    rng = np.random.default_rng(5)
    fill(first, unit(rng, 120))
    load_vector_index(second)
    later = fill(first, unit(rng, 3))
    raw.execute("DELETE FROM vector_changes")  # as the pruning trigger does to a slow reader
    raw.commit()
    query = unit(rng, 1)[0]
    # fallen behind the log: this search is served by SQL while the index loads again
    assert nearest(second, query, 5) == vectors_sql(second, query, 5)
    load_vector_index(second)
    assert set(later) <= set(nearest(second, query, 200))
    first.repin(Pin("other", DIMENSION, "none"))
    assert nearest(second, query, 5) == []


def vectors_sql(store, query: np.ndarray, limit: int) -> list[int]:
    from tests.support.files import reading

    with reading(store.database.path) as conn:
        return [memory_id for memory_id, _ in vectors.ranking(conn, embedding(query), limit)]


def test_without_numpy_the_sql_leg_serves(db_path, monkeypatch):
    monkeypatch.setattr(vector_index, "np", None)
    rng = np.random.default_rng(6)
    matrix = unit(rng, 50)
    store = open_store(db_path)
    try:
        ids = fill(store, matrix)
        load_vector_index(store)
        assert nearest(store, matrix[3], 5) == exact(ids, matrix, matrix[3], 5)
    finally:
        store.close()


# -- filters before the cut -------------------------------------------------------------------

# Scopes of 60, 240 and 600 memories: with the ``small`` thresholds and a first pass that
# keeps 500 rows, the first is re-ranked whole (at most 200 pass), the second scored on its
# own rows, the third through the sign plane's pass over every row, the others set aside.
SCOPE_SIZES = {"few": 60, "some": 240, "many": 600}


def fill_scoped(store, matrix: np.ndarray) -> dict[str, tuple[list[int], np.ndarray]]:
    """Each scope's ids and their vectors; the scopes interleaved."""
    names = [name for name, size in SCOPE_SIZES.items() for _ in range(size)]
    rows: dict[str, list[tuple[int, int]]] = {name: [] for name in SCOPE_SIZES}
    for i in np.random.default_rng(7).permutation(len(names)):
        memory = NewMemory("TODO", f"memory {i}", [], None, names[i], T0, None)
        rows[names[i]].append((store.insert(memory, embedding(matrix[i])), i))
    return {
        name: ([memory_id for memory_id, _ in found], matrix[[i for _, i in found]])
        for name, found in rows.items()
    }


@pytest.mark.parametrize("scope", list(SCOPE_SIZES))
def test_a_filtered_search_finds_what_an_exact_scan_of_the_passing_memories_finds(
    db_path, small, scope, monkeypatch
):
    monkeypatch.setattr(vector_codes, "STAGE1_KEEP", 500)
    rng = np.random.default_rng(8)
    matrix = unit(rng, sum(SCOPE_SIZES.values()))
    store = open_store(db_path)
    try:
        passing, vectors_of_scope = fill_scoped(store, matrix)[scope]
        load_vector_index(store)
        queries = unit(rng, 20)
        found = [nearest(store, q, 10, Filters(scope=scope)) for q in queries]
        expected = [exact(passing, vectors_of_scope, q, 10) for q in queries]
        recall = np.mean([len(set(f) & set(e)) / 10 for f, e in zip(found, expected, strict=True)])
        assert recall >= 0.98
        assert all(set(f) <= set(passing) for f in found)
    finally:
        store.close()


# Tags that hold another's JSON text, quotes, separators and brackets.
TRICKY_TAGS = ["db", "db2", "xdb", 'a"db', 'db"', '"db"', "d\\b", "db,", "[db]", ", db", "ü-db"]


def test_the_vector_leg_s_tag_filter_passes_the_memories_the_list_s_does(db_path):
    """The leg's text search for a tag (vectors._passing_clauses) is exact."""
    store = open_store(db_path)
    try:
        lists = [[t] for t in TRICKY_TAGS] + [TRICKY_TAGS, TRICKY_TAGS[::-1]]
        lists += [[a, b] for a, b in itertools.pairwise(TRICKY_TAGS)]
        for i, tags in enumerate(lists):
            store.insert(NewMemory("TODO", f"memory {i}", tags, None, None, T0, None), None)
        for tag in [*TRICKY_TAGS, "d", "b", '"', ",", "absent"]:
            listed = {m["id"] for m in store.memories(Filters(tag=tag), None)}
            with store._connections.read() as conn:
                text = vectors.passing_ids(conn, Filters(tag=tag))
            assert {int(i) for i in text.split(",") if i} == listed, tag
            assert len(listed) == sum(tag in tags for tags in lists)
    finally:
        store.close()


def near_copies(rng: np.random.Generator, query: np.ndarray, n: int) -> np.ndarray:
    """Vectors at a cosine of about 0.97 to ``query``: near duplicates of it."""
    x = query + 0.25 * rng.normal(size=(n, DIMENSION)).astype(np.float32) / np.sqrt(DIMENSION)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_the_near_duplicate_check_s_cheaper_ranking_finds_every_near_copy(
    db_path, small, monkeypatch
):
    # Each stage cuts on 800 rows: the sign plane keeps 150, the code 40, the re-rank 8.
    for name, value in [("STAGE1_MIN_ROWS", 100), ("STAGE1_KEEP", 150), ("SCORE_KEEP", 40)]:
        monkeypatch.setattr(vector_codes, f"NEAR_{name}", value)
    monkeypatch.setattr(vector_index, "NEAR_RERANK_MIN", 8)
    rng = np.random.default_rng(12)
    queries = unit(rng, 20)
    planted = np.concatenate([near_copies(rng, q, 3) for q in queries])
    matrix = np.concatenate([unit(rng, 800 - len(planted)), planted])
    store = open_store(db_path)
    try:
        ids = fill(store, matrix)
        load_vector_index(store)
        asked: list[int] = []
        for k, query in enumerate(queries):
            signal, found = store.similar_candidates(
                embedding(query), lambda: asked.append(1), None, T0, 10
            )
            first = len(matrix) - len(planted) + 3 * k
            assert signal == "cosine"
            assert {i for i, _, _ in found[:3]} == set(ids[first : first + 3])
            assert all(s >= 0.94 for _, s, _ in found[:3])
            assert asked == []  # the keyword query is never read when the cosine serves
    finally:
        store.close()


def around(rng: np.random.Generator, query: np.ndarray, n: int, spread: float) -> np.ndarray:
    """Vectors at a cosine of about 1 / sqrt(1 + spread**2) to ``query``."""
    x = query + spread * rng.normal(size=(n, DIMENSION)).astype(np.float32) / np.sqrt(DIMENSION)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def at_least(ids: list[int], matrix: np.ndarray, query: np.ndarray, threshold: float):
    """An exhaustive exact scan: (id, cosine) of every vector at least ``threshold`` similar
    to ``query``, the nearest first (ties by id)."""
    cosine = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
    order = np.lexsort((ids, -cosine))
    return [(ids[i], float(cosine[i])) for i in order if cosine[i] >= threshold]


def test_the_near_check_on_the_first_pass_path_finds_what_an_exact_scan_finds(
    db_path, small, monkeypatch
):
    # 900 rows, past the first pass's bounds: the sign plane keeps 200, the code 60, the
    # re-rank 20 (np.take gathers the kept rows' words from the other planes).
    for name, value in [("STAGE1_MIN_ROWS", 100), ("STAGE1_KEEP", 200), ("SCORE_KEEP", 60)]:
        monkeypatch.setattr(vector_codes, f"NEAR_{name}", value)
    monkeypatch.setattr(vector_index, "NEAR_RERANK_MIN", 20)
    rng = np.random.default_rng(21)
    queries = unit(rng, 24)
    # per query 0 to 4 copies above the threshold (cosine about 0.97) and one below (0.89)
    planted = [around(rng, q, k % 5, 0.25) for k, q in enumerate(queries)]
    planted += [around(rng, q, 1, 0.5) for q in queries]
    matrix = np.concatenate([unit(rng, 900 - sum(map(len, planted))), *planted])
    assert len(matrix) > max(vector_codes.NEAR_STAGE1_MIN_ROWS, vector_codes.NEAR_STAGE1_KEEP)
    store = open_store(db_path)
    try:
        ids = fill(store, matrix)
        load_vector_index(store)
        hinted = 0
        for query in queries:
            _, found = store.similar_candidates(
                embedding(query), lambda: None, None, T0, 10, at_least=0.94
            )
            expected = at_least(ids, matrix, query, 0.94)
            assert [i for i, _, _ in found] == [i for i, _ in expected]
            assert [s for _, s, _ in found] == pytest.approx([s for _, s in expected], abs=1e-5)
            hinted += len(found)
        assert hinted == sum(k % 5 for k in range(len(queries)))
    finally:
        store.close()


def test_at_least_reads_and_returns_only_the_memories_that_similar(db_path, small):
    from sqlalchemy import event

    rng = np.random.default_rng(22)
    query = unit(rng, 1)[0]
    matrix = np.concatenate(
        [unit(rng, 60), around(rng, query, 1, 0.25), around(rng, query, 1, 0.5)]
    )
    read: list[tuple] = []

    def on_execute(conn, cursor, statement, parameters, context, executemany):
        if "current_decay" in statement:  # rows.rows_statement: the memories' rows
            read.append(tuple(parameters))

    store = open_store(db_path)
    ids = fill(store, matrix)
    near, below = ids[-2], ids[-1]
    load_vector_index(store)
    event.listen(store.database.engine, "before_cursor_execute", on_execute)
    try:
        _, everything = store.similar_candidates(embedding(query), lambda: None, None, T0, 10)
        assert [i for i, _, _ in everything[:2]] == [near, below]  # both among the nearest
        assert 0.85 < everything[1][1] < 0.94 <= everything[0][1]
        assert any(below in params for params in read)
        read.clear()
        _, found = store.similar_candidates(
            embedding(query), lambda: None, None, T0, 10, at_least=0.94
        )
        assert [(i, content) for i, _, content in found] == [(near, f"memory {len(matrix) - 2}")]
        assert read and all(below not in params for params in read)
        assert all(near in params for params in read)
        read.clear()
        _, found = store.similar_candidates(
            embedding(query), lambda: None, None, T0, 10, at_least=0.999
        )
        assert found == []
        assert read == []  # no row at all is read
    finally:
        event.remove(store.database.engine, "before_cursor_execute", on_execute)
        store.close()


@pytest.mark.parametrize("loaded", [True, False], ids=["index", "sql-leg"])
def test_memories_of_other_scopes_do_not_crowd_out_a_global_near_duplicate(db_path, small, loaded):
    """Without a scope the nearest are taken over every scope, the global ones kept after:
    ten near copies in another scope, all nearer, must not hide the global one."""
    rng = np.random.default_rng(23)
    query = unit(rng, 1)[0]
    store = open_store(db_path)
    try:
        fill(store, unit(rng, 50))
        crowd = around(rng, query, 12, 0.05)  # cosine about 0.999
        for i, vector in enumerate(crowd):
            memory = NewMemory("TODO", f"beta {i}", [], None, "beta", T0, None)
            store.insert(memory, embedding(vector))
        [mine] = around(rng, query, 1, 0.2)  # about 0.98: below every one of the crowd
        memory = NewMemory("TODO", "the global one", [], None, None, T0, None)
        global_id = store.insert(memory, embedding(mine))
        if loaded:
            load_vector_index(store)
        signal, found = store.similar_candidates(
            embedding(query), lambda: None, None, T0, 10, at_least=0.94
        )
        assert signal == "cosine"
        assert [(i, content) for i, _, content in found] == [(global_id, "the global one")]
        _, beta = store.similar_candidates(
            embedding(query), lambda: None, "beta", T0, 10, at_least=0.94
        )
        assert len(beta) == 10 and global_id not in [i for i, _, _ in beta]
    finally:
        store.close()
