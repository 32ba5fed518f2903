"""What the service relies on from any Store, written once and run against every engine.

Each test speaks to the Store protocol (storage/base.py) only. The ``store`` fixture is
parametrized by engine; a new engine joins by adding its parameter. PostgreSQL runs on the
session's embedded server (tests/support/pg_fixtures.py), a fresh database per test.
"""

from __future__ import annotations

import shutil

import pytest

from agent_memory import ranking
from agent_memory.contract.models import Filters
from agent_memory.storage import open_reader, open_store
from tests.support.stores import OTHER, PIN, T0, ids, new, record, search, vector
from tests.support.vector_index import load_vector_index

pytest_plugins = ["tests.support.pg_fixtures"]


@pytest.fixture(params=["sqlite", "postgres"])
def store_engine(request) -> str:
    return request.param


@pytest.fixture
def store(store_engine, request, tmp_path):
    if store_engine == "postgres":
        opened = open_store(request.getfixturevalue("pg_url"))
    else:
        opened = open_store(tmp_path / "memory.db")
    yield opened
    opened.close()


# -- rows -------------------------------------------------------------------------------------


def test_inserted_rows_list_newest_first_with_their_fields(store):
    a = store.insert(new("first", "DECISION", tags=["db"], scope="kore", source="chat"), None)
    b = store.insert(new("second", at=T0 + 5), None)
    c = store.insert(new("same second", at=T0 + 5), None)
    assert a < b < c
    listed = list(store.memories(Filters(), None))
    assert ids(listed) == [c, b, a]  # created_at, then id, descending
    assert listed[2] == {
        "id": a,
        "content": "first",
        "type": "DECISION",
        "tags": ["db"],
        "source": "chat",
        "scope": "kore",
        "decay_score": 1.0,
        "created_at": T0,
        "last_accessed": T0,
        "expires_at": None,
        "created_by": "local",
        "updated_by": "local",
    }
    assert ids(store.memories(Filters(), 2)) == [c, b]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (Filters(memory_type="ERROR"), [2]),
        (Filters(tag="a"), [3, 1]),
        (Filters(tag="a b"), []),  # a whole tag, never a part of one
        (Filters(scope="kore"), [2, 1]),
        (Filters(tag="a", scope="kore"), [1]),
    ],
)
def test_list_filters(store, filters, expected):
    store.insert(new("one", tags=["a", "b"], scope="kore"), None)
    store.insert(new("two", "ERROR", scope="kore", at=T0 + 1), None)
    store.insert(new("three", tags=["a"], at=T0 + 2), None)
    assert ids(store.memories(filters, None)) == expected


@pytest.mark.parametrize(
    ("filters", "before", "expected"),
    [
        (Filters(), (T0 + 5, 4), [3, 2, 1]),  # a tie on created_at goes on by id
        (Filters(), (T0 + 5, 3), [2, 1]),
        (Filters(), (T0 + 6, 0), [4, 3, 2, 1]),
        (Filters(), (T0, 1), []),
        (Filters(memory_type="ERROR"), (T0 + 5, 4), [3]),
        (Filters(scope="kore"), (T0 + 5, 3), [2]),
        (Filters(tag="a"), (T0 + 5, 4), [3, 1]),
    ],
)
def test_a_list_goes_on_after_a_point(store, filters, before, expected):
    store.insert(new("one", tags=["a"]), None)
    store.insert(new("two", scope="kore", at=T0 + 1), None)
    store.insert(new("three", "ERROR", tags=["a"], scope="kore", at=T0 + 5), None)
    store.insert(new("four", "ERROR", at=T0 + 5), None)
    assert ids(store.memories(filters, None, before)) == expected
    assert ids(store.memories(filters, 1, before)) == expected[:1]


def test_a_database_is_known_by_the_id_it_holds(new_store):
    """Its identity key is read from the database (storage.database_key, without an engine,
    as ui reads it) and is not the same for two databases."""
    from agent_memory.storage import database_key

    assert len(new_store.identity_key) == 32
    assert database_key(new_store.location) == new_store.identity_key
    other = open_store(new_store.location)  # another process opening the same database
    try:
        assert other.identity_key == new_store.identity_key
    finally:
        other.close()


def test_every_path_to_a_file_has_its_identity_and_a_copy_its_own(new_store, tmp_path, monkeypatch):
    from agent_memory.storage import database_key

    if new_store.location.startswith("postgresql"):
        pytest.skip("a SQLite file's paths; PostgreSQL's services are in test_postgres")
    (tmp_path / "link.db").symlink_to(tmp_path / "memory.db")
    monkeypatch.chdir(tmp_path)
    assert new_store.identity_key == database_key(tmp_path / "link.db") == database_key("memory.db")
    assert database_key(tmp_path / "other.db") is None  # no database there yet
    open_store(tmp_path / "other.db").close()
    assert database_key(tmp_path / "other.db") not in (None, new_store.identity_key)
    new_store.close()  # checkpointed: the file alone is the whole database
    shutil.copyfile(tmp_path / "memory.db", tmp_path / "copy.db")
    assert database_key(tmp_path / "copy.db") not in (None, new_store.identity_key)


def test_update_changes_what_it_is_given_and_counts_as_a_use(store):
    memory_id = store.insert(new("old text", tags=["x"], scope="s"), None)
    updated = store.update(memory_id, {"content": "new text", "expires_at": T0 + 99}, T0 + 10, None)
    assert updated["content"] == "new text" and updated["tags"] == ["x"]
    assert (updated["last_accessed"], updated["expires_at"]) == (T0 + 10, T0 + 99)
    assert updated["embedding_status"] == 0
    assert ids(search(store, "new").results) == [memory_id]
    assert search(store, "old").results == []
    assert store.update(memory_id + 1, {"tags": []}, T0, None) is None


def test_delete_takes_the_row_and_its_relations(store):
    a, b = store.insert(new("a"), None), store.insert(new("b"), None)
    assert store.link(a, b, "relates_to", T0, ids=(a, b)) is None
    assert store.delete(a) is True
    assert store.delete(a) is False
    assert store.neighbours([b]) == []
    assert ids(store.memories(Filters(), None)) == [b]


def test_bump_marks_use(store):
    memory_id = store.insert(new("used"), None)
    store.bump({memory_id: (3, T0 + 50)})
    assert next(store.memories(Filters(), None))["last_accessed"] == T0 + 50
    assert store.get(memory_id, 0)[0]["access_count"] == 3
    store.bump({})  # nothing to do
    store.bump({memory_id: (1, T0 + 40), memory_id + 99: (1, T0 + 60)})  # an older use; a gone id
    assert next(store.memories(Filters(), None))["last_accessed"] == T0 + 50  # the later kept
    assert store.get(memory_id, 0)[0]["access_count"] == 4


# -- relations --------------------------------------------------------------------------------


def test_links_are_idempotent_and_name_a_missing_end(store):
    a, b = store.insert(new("a"), None), store.insert(new("b"), None)
    assert store.link(a, b, "supersedes", T0, ids=(a, b)) is None
    assert store.link(a, b, "supersedes", T0 + 9, ids=(a, b)) is None  # kept, not duplicated
    assert store.link(a, 999, "caused_by", T0, ids=(a, 999)) == 999
    out = store.neighbours([a, b])
    assert [(e["self"], e["id"], e["kind"], e["direction"]) for e in out] == [
        (a, b, "supersedes", "out"),
        (b, a, "supersedes", "in"),
    ]
    assert store.unlink(a, b, "supersedes") is True
    assert store.unlink(a, b, "supersedes") is False


# -- search -----------------------------------------------------------------------------------


def test_keyword_ranking_is_decay_minus_bm25_ties_by_id(store):
    old = store.insert(new("sqlite sqlite wal", at=T0), None)
    fresh = store.insert(new("sqlite sqlite wal", at=T0 + 90 * 86_400), None)
    other = store.insert(new("sqlite and a lot of other words here", at=T0), None)
    page = search(store, "sqlite", now=T0 + 90 * 86_400)
    assert page.mode == ranking.SEARCH_MODE_KEYWORD
    assert ids(page.results) == [fresh, old, other]
    assert page.results[0]["decay_score"] == pytest.approx(1.0)
    twins = [store.insert(new("twin words"), None) for _ in range(2)]
    assert ids(search(store, "twin").results) == twins


def test_keyword_search_takes_fts5_syntax_and_falls_back_to_words(store):
    a = store.insert(new("sqlite-vec stores vectors"), None)
    b = store.insert(new("postgres stores rows"), None)
    assert set(ids(search(store, "stor*").results)) == {a, b}
    assert ids(search(store, "sqlite NOT postgres").results) == [a]
    # searched as words; "store" is in both memories, so the one holding only it is far
    # below the page's best and the page ends before it
    assert ids(search(store, "what does sqlite-vec store?").results) == [a]
    assert set(ids(search(store, "what does sqlite-vec store?", floor=False).results)) == {a, b}
    assert search(store, "?!").results == []


def test_filters_apply_before_the_keyword_cut(store):
    for i in range(5):
        store.insert(new(f"cache note {i}", "PATTERN"), None)
    wanted = store.insert(new("cache note, the one error", "ERROR"), None)
    assert ids(search(store, "cache", limit=1, memory_type="ERROR").results) == [wanted]


def test_hybrid_fuses_both_legs(store):
    a = store.insert(new("alpha words", "TODO"), vector(1, 0, 0))
    b = store.insert(new("beta words", "ERROR"), vector(0.9, 0.1, 0))
    c = store.insert(new("gamma", "TODO"), vector(0, 0, 1))
    page = search(store, "beta", vector(1, 0, 0), limit=3)
    assert page.mode == ranking.SEARCH_MODE_HYBRID
    # beta: both legs; alpha: the model's best; gamma, unrelated to the query, is past the
    # page's end (ranking.end) and comes back only without it.
    assert ids(page.results) == [b, a]
    assert page.why[b]["keyword"]["rank"] == 1 and page.why[b]["vector"]["rank"] == 2
    assert page.why[a]["keyword"] is None and page.why[a]["vector"]["rank"] == 1
    assert page.why[a]["vector"]["share"] > page.why[b]["vector"]["share"] > 0
    assert (page.explain["cut"]["candidates"], page.explain["cut"]["kept"]) == (3, 2)
    assert ids(search(store, "beta", vector(1, 0, 0), limit=3, floor=False).results) == [b, a, c]
    todo = search(store, "beta", vector(1, 0, 0), limit=3, memory_type="TODO", floor=False)
    assert ids(todo.results) == [a, c]


@pytest.fixture(params=["index", "scan"])
def vector_leg(request, store, store_engine, monkeypatch):
    """How the vector leg runs. SQLite: "index", this process's index, loaded before the
    search; "scan", the SQL leg. PostgreSQL: "index", the query of the HNSW index's
    iterative scan (on so few rows the planner may sort them exactly:
    tests/engines/test_postgres.py makes it walk the graph); "scan", the exact distance of every
    passing memory."""
    from agent_memory.storage.postgres import vectors as pg_vectors
    from agent_memory.storage.sqlite import vector_index

    postgres = store_engine == "postgres"
    if request.param == "scan" and not postgres:
        monkeypatch.setattr(vector_index, "np", None)
    if request.param == "index" and postgres:
        monkeypatch.setattr(pg_vectors, "EXACT_MIN_ROWS", 0)
        monkeypatch.setattr(pg_vectors, "ITERATIVE_COST", 0)

    def ready() -> None:
        if request.param == "index" and not postgres:
            load_vector_index(store)

    return ready


@pytest.mark.parametrize(
    "by",
    [{"memory_type": "ERROR"}, {"tag": "wanted"}, {"scope": "wanted"}],
    ids=["type", "tag", "scope"],
)
def test_filters_apply_before_the_vector_leg_s_cut(store, vector_leg, by):
    for i in range(8):
        store.insert(new(f"near {i}", tags=["other"], scope="other"), vector(1, 0.01 * i, 0))
    wanted = store.insert(new("far", "ERROR", tags=["wanted"], scope="wanted"), vector(0, 1, 0))
    store.insert(new("farther", "ERROR", tags=["wanted"], scope="wanted"), vector(-1, 0.1, 0))
    vector_leg()
    page = search(store, "", vector(1, 0, 0), limit=1, **by)  # each leg keeps 4
    assert page.mode == ranking.SEARCH_MODE_HYBRID
    assert ids(page.results) == [wanted]  # the model's best match passes any floor
    page = search(store, "", vector(1, 0, 0), limit=5, floor=False, **by)
    assert len(page.results) == 2


def test_a_zero_vector_is_nobody_s_neighbour(store, vector_leg):
    a = store.insert(new("alpha words"), vector(1, 0, 0))
    store.insert(new("zero words"), vector(0, 0, 0))
    vector_leg()
    page = search(store, "", vector(1, 0, 0), limit=5, floor=False)
    assert page.mode == ranking.SEARCH_MODE_HYBRID and ids(page.results) == [a]
    assert ids(search(store, "", vector(0, 0, 0), limit=5).results) == []


def test_a_query_vector_of_another_pin_searches_by_keyword(store):
    store.insert(new("pinned words"), vector(1, 0, 0))
    page = search(store, "pinned", vector(1, 0, 0, pin=OTHER))
    assert page.mode == ranking.SEARCH_MODE_KEYWORD and page.other_pin == PIN
    assert len(page.results) == 1


def test_a_store_without_any_vector_searches_by_keyword(store):
    store.insert(new("no vector here"), None)
    page = search(store, "vector", vector(1, 0, 0))
    assert page.mode == ranking.SEARCH_MODE_KEYWORD and page.other_pin is None
    assert len(page.results) == 1


# -- vectors and the pin ----------------------------------------------------------------------


def test_the_first_vector_pins_the_store_and_others_wait_pending(store):
    assert store.pin() is None
    a = store.insert(new("a"), vector(1, 0, 0))
    b = store.insert(new("b"), vector(0, 1, 0, pin=OTHER))  # another model: stored, pending
    assert store.pin() == PIN
    assert store.pending(10) == [(b, "b")]
    assert store.embedding_counts() == (2, 1) and store.pending_count() == 1
    assert store.write_vectors([(b, "b", vector(0, 1, 0))]) == 1
    assert store.write_vectors([(a, "not its text", vector(0, 1, 0))]) == 0
    assert store.embedding_counts() == (2, 0) and store.pending_count() == 0
    store.repin(OTHER)
    assert store.pin() == OTHER and store.embedding_counts() == (2, 2)
    assert store.pending_count() == 2


# -- import and export ------------------------------------------------------------------------


def test_import_batches_skip_duplicates_and_the_expired(store):
    there = store.insert(new("already here"), None)
    batch = [
        record("fresh"),
        record("already here"),
        record("already here", "PATTERN"),  # another type: not a duplicate
        record("fresh"),  # a repeat inside the batch
        record("gone", expires_at=T0 - 1),
    ]
    outcomes = store.import_memories(batch, T0)
    first = outcomes[0][1]
    assert outcomes == [
        ("imported", first),
        ("duplicate", there),
        ("imported", first + 1),
        ("duplicate", first),
        ("expired", None),
    ]
    edges = [(there, first, "relates_to", T0), (there, first, "relates_to", T0)]
    assert store.import_links(edges) == [(there, first, "relates_to")]
    assert store.import_links(edges) == []
    assert store.remove_imported([(first, first + 1)], []) == 2
    assert ids(store.memories(Filters(), None)) == [there]
    store.after_import()


def test_an_export_snapshot_is_consistent(store):
    a, b = store.insert(new("a", tags=["t"]), None), store.insert(new("b", at=T0 + 1), None)
    store.link(b, a, "caused_by", T0 + 2, ids=(b, a))
    with store.snapshot() as snap:
        assert snap.counts() == (2, 1)
        assert snap.pin() is None
        rows = list(snap.memories())
        assert [r["id"] for r in rows] == [a, b] and rows[0]["tags"] == ["t"]
        assert rows[0]["access_count"] == 0
        assert list(snap.links()) == [(b, a, "caused_by", T0 + 2)]


# -- the sweep --------------------------------------------------------------------------------


def test_expiry_and_decay_run_in_batches_that_can_pause(store):
    for i in range(5):
        store.insert(new(f"short {i}", expires_at=T0 + 5), None)
    kept = store.insert(new("kept", "DECISION"), None)
    assert store.delete_expired(T0 + 4) == (0, pytest.approx(0.0, abs=1))
    removed, longest = store.delete_expired(T0 + 5, lambda: False)
    assert removed == 5 and longest >= 0
    assert ids(store.memories(Filters(), None)) == [kept]
    done, _ = store.refresh_decay(T0 + 180 * 86_400)
    assert done == 1 and store.decay_refreshed_at() == T0 + 180 * 86_400
    assert next(store.memories(Filters(), None))["decay_score"] == pytest.approx(0.5)


def test_get_reads_one_memory_with_its_relations_and_bumps_nothing(store):
    a = store.insert(new("a", "DECISION", tags=["t"]), None)
    b = store.insert(new("b"), vector(1))
    store.link(b, a, "supersedes", T0 + 1, ids=(b, a))
    memory, edges = store.get(b, relations=5)
    assert memory["content"] == "b" and memory["access_count"] == 0
    assert memory["embedding_status"] == 1
    assert [(e["id"], e["kind"], e["direction"]) for e in edges] == [(a, "supersedes", "out")]
    assert store.get(a, relations=0)[1] == []
    assert store.get(999, relations=5) is None
    assert next(store.memories(Filters(memory_type="TODO"), None))["last_accessed"] == T0


def test_stats_count_per_type_and_scope(store):
    for scope in ("kore", "kore", None):
        store.insert(new("x", scope=scope), None)
    store.insert(new("y", "ERROR", scope="web"), vector(1))
    store.link(1, 2, "relates_to", T0, ids=(1, 2))
    assert store.stats(scopes=2) == {
        "memories": 4,
        "by_type": {"ERROR": 1, "TODO": 3},
        "by_scope": [("kore", 2), (None, 1)],
        "links": 1,
        "pending_embedding": 3,
    }


# -- the session brief's reader ---------------------------------------------------------------


@pytest.fixture
def reader(store):
    opened = open_reader(store.location)
    yield opened
    opened.close()


def recent(reader, scope, *types, now=T0 + 3600, limit=10, window=99):
    return reader.recent(scope=scope, types=types, now=now, limit=limit, window=window)


def test_the_reader_gives_the_recent_of_a_scope_leaving_out_expired_and_superseded(store, reader):
    old = store.insert(new("old decision", "DECISION", scope="kore"), None)
    newer = store.insert(new("new decision", "DECISION", scope="kore", at=T0 + 1), None)
    rule = store.insert(new("a rule", "CONSTRAINT", scope="kore", tags=["t"]), None)
    store.insert(new("gone", "CONSTRAINT", scope="kore", expires_at=T0 + 5), None)
    store.insert(new("a todo", "TODO", scope="kore"), None)
    store.insert(new("global rule", "CONSTRAINT"), None)
    store.insert(new("other project", "DECISION", scope="billing"), None)
    store.link(newer, old, "supersedes", T0, ids=(newer, old))
    store.bump({rule: (1, T0 + 2)})
    found = recent(reader, "kore", "DECISION", "CONSTRAINT")
    assert ids(found) == [rule, newer]  # most recently used first
    assert found[0] == {
        "id": rule,
        "content": "a rule",
        "type": "CONSTRAINT",
        "tags": ["t"],
        "source": None,
        "scope": "kore",
        "decay_score": ranking.decay("CONSTRAINT", T0 + 2, T0 + 3600),
        "created_at": T0,
        "last_accessed": T0 + 2,
        "expires_at": None,
        "created_by": "local",
        "updated_by": "local",
    }
    assert [m["content"] for m in recent(reader, None, "CONSTRAINT")] == ["global rule"]
    assert ids(recent(reader, "kore", "DECISION", "CONSTRAINT", limit=1)) == [rule]
    assert ids(recent(reader, "kore", "DECISION", "CONSTRAINT", window=1)) == [newer]  # newest
    assert recent(reader, "kore", "ERROR") == []


def test_the_reader_sees_relations_as_the_store_does(store, reader):
    a, b, c = (store.insert(new(text), None) for text in ("a", "b", "c"))
    store.link(a, b, "caused_by", T0, ids=(a, b))
    store.link(c, a, "supersedes", T0 + 1, ids=(c, a))
    store.link(a, c, "relates_to", T0 + 2, ids=(a, c))
    for per_result in (1, 10):
        assert reader.neighbours([a, b], per_result) == store.neighbours([a, b], per_result)
    assert reader.neighbours([]) == []


def test_the_reader_sees_what_is_written_after_it_opened(store, reader):
    memory_id = store.insert(new("later", "TODO"), None)
    assert ids(recent(reader, None, "TODO")) == [memory_id]
