"""The PostgreSQL backend as an operator meets it: opening (modes, a newer schema, several
servers migrating at once, upgrades from old revisions), storage errors kept generic, the
keyword totals and their log, the vector leg and the sweep, an unreachable server.

The Store contract itself is tests/engines/test_store_conformance.py, run on both engines."""

from __future__ import annotations

import json
import random
import threading
import time

import psycopg
import pytest

from agent_memory import query, storage
from agent_memory.contract.errors import (
    DatabaseMissing,
    DatabaseOpenError,
    SchemaTooNew,
    SearchTimedOut,
    StorageFault,
)
from agent_memory.contract.models import Embedding, Filters, Pin
from agent_memory.query import read as read_query
from agent_memory.service.core import MemoryService
from agent_memory.storage import EXISTING, READ, open_store
from agent_memory.storage.base import NewMemory
from agent_memory.storage.postgres import keyword, tsquery
from agent_memory.storage.postgres import url as urls
from agent_memory.storage.postgres.database import head_revision
from tests.support.clock import Clock
from tests.support.pg_checks import LEXEMES_AGREE, TEAM_A, TEAM_B, TOTALS_AGREE, service_file

pytest_plugins = ["tests.support.pg_fixtures"]


T0 = 1_767_225_600


def new(content: str, *, expires_at: int | None = None) -> NewMemory:
    return NewMemory("TODO", content, [], None, None, T0, expires_at)


def test_two_services_are_two_databases(pg_url, other_pg_url, tmp_path, monkeypatch):
    """Their URLs differ in nothing but the service's name: the id each database holds
    tells them apart (issue 31, item 16)."""
    services = service_file(tmp_path, teama=pg_url, teamb=other_pg_url)
    monkeypatch.setenv("PGSERVICEFILE", services)
    assert storage.database_key(TEAM_A) is None  # nothing there yet: no daemon to trust
    for url in (TEAM_A, TEAM_B):
        open_store(url).close()
    assert storage.database_key(TEAM_A) == storage.database_key(pg_url)
    assert storage.database_key(TEAM_B) == storage.database_key(other_pg_url)
    assert storage.database_key(TEAM_A) != storage.database_key(TEAM_B)


def test_the_store_logs_and_shows_its_location_without_the_password(pg_url):
    store = open_store(pg_url)
    try:
        assert store.location == urls.redacted(pg_url)
        assert store.schema_version == head_revision()
        assert storage.quick_pin(pg_url) is None
        assert storage.ready_to_serve(pg_url) is False  # opened before the first answer
    finally:
        store.close()


def test_modes_that_need_a_database_create_nothing(pg_url, pg):
    for mode in (EXISTING, READ):
        with pytest.raises(DatabaseMissing):
            open_store(pg_url, mode=mode)
    assert pg.execute("SELECT to_regclass('memories')").fetchone()[0] is None
    open_store(pg_url).close()
    open_store(pg_url, mode=EXISTING).close()


def test_a_newer_schema_is_refused_and_left_untouched(pg_url, pg):
    open_store(pg_url).close()
    pg.execute("UPDATE alembic_version SET version_num = '9999'")
    with pytest.raises(SchemaTooNew) as caught:
        open_store(pg_url)
    assert (caught.value.found, caught.value.supported) == (9999, head_revision())
    assert pg.execute("SELECT version_num FROM alembic_version").fetchall() == [("9999",)]


def test_servers_starting_together_migrate_once(pg_url, pg):
    opened, failed = [], []

    def start() -> None:
        try:
            opened.append(open_store(pg_url))
        except Exception as exc:  # every one of them must open
            failed.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failed == [] and len(opened) == 6
    assert pg.execute("SELECT version_num FROM alembic_version").fetchall() == [
        (f"{head_revision():04d}",)
    ]
    for store in opened:
        store.close()


def test_a_database_of_revision_0006_upgrades_and_counts_its_words(pg_url, pg):
    """0007 adds each word's row count (lexeme_rows), filled from the rows already there."""
    from agent_memory.storage.postgres import database

    engine = database.create_engine(pg_url)
    with engine.connect() as conn, conn.begin():
        database._upgrade(conn, 6)
    engine.dispose()
    for i, content in enumerate(["kafka retry", "kafka cache cache", "retry"], start=1):
        terms, length, tf, _ = keyword.document(content)
        pg.execute(
            "INSERT INTO memories (type, content, tags, base_weight, decay_score, access_count,"
            " created_at, last_accessed, embedding_status, content_hash, doc_len, terms, tf)"
            " VALUES ('TODO', %s, '[]', 1, 1, 0, %s, %s, 0, %s, %s, %s::tsvector, %s::jsonb)",
            (content, T0, T0, i, length, terms, tf),
        )
    store = open_store(pg_url)
    try:
        assert store.schema_version == head_revision() >= 7
        assert pg.execute("SELECT * FROM lexeme_rows ORDER BY lexeme").fetchall() == [
            ("cach", 1),
            ("kafka", 2),
            ("retri", 2),
        ]
        assert pg.execute(LEXEMES_AGREE).fetchone() == (True,)
        found = store.search(read_query("kafka"), None, now=T0, limit=5, filters=Filters())
        assert [m["content"] for m in found.results] == ["kafka retry", "kafka cache cache"]
    finally:
        store.close()


def test_a_database_of_revision_0008_upgrades_and_finds_cjk_words(pg_url, pg):
    """Before 0009 a sentence without spaces was one lexeme (as in FTS5's index then); the
    upgrade tokenizes those rows again as bigrams, and the counts follow."""
    from agent_memory.storage.postgres import database

    engine = database.create_engine(pg_url)
    with engine.connect() as conn, conn.begin():
        database._upgrade(conn, 8)
    engine.dispose()
    as_0008_wrote = [
        ("我们选择了数据库", "'我们选择了数据库':1A", 1, {"我们选择了数据库": 1}),
        ("데이터베이스를 선택했습니다", "'데이터베이스를':1A '선택했습니다':2", 2,
         {"데이터베이스를": 1, "선택했습니다": 1}),
        ("kafka retry", "'kafka':1A 'retri':2", 2, {"kafka": 1, "retri": 1}),
    ]  # fmt: skip
    for i, (content, terms, length, tf) in enumerate(as_0008_wrote, start=1):
        pg.execute(
            "INSERT INTO memories (type, content, tags, base_weight, decay_score, access_count,"
            " created_at, last_accessed, embedding_status, content_hash, doc_len, terms, tf)"
            " VALUES ('TODO', %s, '[]', 1, 1, 0, %s, %s, 0, %s, %s, %s::tsvector, %s::jsonb)",
            (content, T0, T0, i, length, terms, json.dumps(tf)),
        )
    store = open_store(pg_url)
    try:
        assert store.schema_version == head_revision() >= 9
        for word, expected in [
            ("数据库", "我们选择了数据库"),
            ("선택", "데이터베이스를 선택했습니다"),
        ]:
            found = store.search(read_query(word), None, now=T0, limit=5, filters=Filters())
            assert [m["content"] for m in found.results] == [expected]
        found = store.search(read_query("kafka"), None, now=T0, limit=5, filters=Filters())
        assert [m["content"] for m in found.results] == ["kafka retry"]
        assert pg.execute(TOTALS_AGREE).fetchone() == (True,)
        assert pg.execute(LEXEMES_AGREE).fetchone() == (True,)
    finally:
        store.close()


def test_a_database_of_revision_0009_upgrades_and_finds_tags(pg_url, pg):
    """Before 0010 the keyword columns held the content alone; the upgrade indexes the tags
    of the rows already there, and the counts follow."""
    from agent_memory.storage.postgres import database

    engine = database.create_engine(pg_url)
    with engine.connect() as conn, conn.begin():
        database._upgrade(conn, 9)
    engine.dispose()
    as_0009_wrote = [
        ("We picked PostgreSQL.", ["database", "billing"]),
        ("Deploys go out on Fridays.", []),
        ("数据库每天备份", ["存储"]),
    ]
    for i, (content, tags) in enumerate(as_0009_wrote, start=1):
        terms, length, tf, _ = keyword.document(content)
        pg.execute(
            "INSERT INTO memories (type, content, tags, base_weight, decay_score, access_count,"
            " created_at, last_accessed, embedding_status, content_hash, doc_len, terms, tf)"
            " VALUES ('TODO', %s, %s::jsonb, 1, 1, 0, %s, %s, 0, %s, %s, %s::tsvector,"
            " %s::jsonb)",
            (content, json.dumps(tags), T0, T0, i, length, terms, tf),
        )
    assert pg.execute("SELECT count(*) FROM memories WHERE terms @@ 'databas'").fetchone() == (0,)
    store = open_store(pg_url)
    try:
        assert store.schema_version == head_revision() >= 10
        for word, expected in [("database", 1), ("tags:billing", 1), ("存储", 3), ("Fridays", 2)]:
            found = store.search(read_query(word), None, now=T0, limit=5, filters=Filters())
            assert [m["id"] for m in found.results] == [expected], word
        assert pg.execute(TOTALS_AGREE).fetchone() == (True,)
        assert pg.execute(LEXEMES_AGREE).fetchone() == (True,)
        assert pg.execute("SELECT to_regclass('memories_terms') IS NOT NULL").fetchone() == (True,)
    finally:
        store.close()


def test_a_database_of_revision_0013_upgrades_and_weighs_tag_hits_in_one_lookup(
    pg_url, pg, other_pg_url
):
    """Before 0014 a row's tf map counted a tag hit as one (bm25 read tag_tf as well); the
    upgrade makes each value bm25's frequency, a tag hit weighing TAG_WEIGHT, and the
    upgraded rows rank and score as the rows this version stores."""
    from agent_memory.storage.postgres import database

    engine = database.create_engine(pg_url)
    with engine.connect() as conn, conn.begin():
        database._upgrade(conn, 13)
    engine.dispose()
    memories = [
        ("billing runs on PostgreSQL", ["billing"]),
        ("the billing worker", []),
        ("PostgreSQL for search", ["database", "billing"]),
    ]
    for i, (content, tags) in enumerate(memories, start=1):
        terms, length, tf, tag_tf = keyword.document(content, tags)
        in_tags = json.loads(tag_tf)
        as_0013 = {k: round(v - 0.5 * in_tags.get(k, 0)) for k, v in json.loads(tf).items()}
        pg.execute(
            "INSERT INTO memories (type, content, tags, base_weight, decay_score, access_count,"
            " created_at, last_accessed, embedding_status, content_hash, doc_len, terms, tf,"
            " tag_tf) VALUES ('TODO', %s, %s::jsonb, 1, 1, 0, %s, %s, 0, %s, %s, %s::tsvector,"
            " %s::jsonb, %s::jsonb)",
            (content, json.dumps(tags), T0, T0, i, length, terms, json.dumps(as_0013), tag_tf),
        )
    assert pg.execute("SELECT tf ->> 'bill' FROM memories WHERE id = 1").fetchone() == ("2",)
    upgraded, fresh = open_store(pg_url), open_store(other_pg_url)
    try:
        assert upgraded.schema_version == head_revision() >= 14
        for content, tags in memories:
            fresh.insert(NewMemory("TODO", content, tags, None, None, T0, None), None)
        assert pg.execute("SELECT tf ->> 'bill' FROM memories WHERE id = 1").fetchone() == ("2.5",)
        assert pg.execute(TOTALS_AGREE).fetchone() == (True,)
        assert pg.execute(LEXEMES_AGREE).fetchone() == (True,)
        with psycopg.connect(other_pg_url) as other:
            for text in ("billing", "billing postgresql", "tags:billing", "content:billing"):
                statement, params = keyword.keyword_ranking_sql(query.parse(text), limit=5)
                ranked = pg.execute(statement, params).fetchall()
                assert len(ranked) >= 2 and ranked == other.execute(statement, params).fetchall()
    finally:
        upgraded.close()
        fresh.close()


def test_engine_errors_reach_the_log_not_the_client(pg_url, pg, caplog):
    service = MemoryService(open_store(pg_url), clock=Clock())
    try:
        pg.execute("DROP TABLE memories CASCADE")
        with pytest.raises(Exception) as caught:
            service.store({"content": "lost", "type": "TODO"})
        assert "memories" not in str(caught.value) and "relation" not in str(caught.value)
        with pytest.raises(StorageFault, match='relation "memories" does not exist'):
            service.db.insert(new("direct"), None)
    finally:
        service.close()


def test_a_keyword_page_reads_its_memories_with_the_ranking(pg_url):
    """Each statement is a round trip to the server: the snapshot starts with its deadline in
    one (BEGIN on the driver's connection), and the page's memories come with the ranking,
    so SQLAlchemy sends three statements, not six: the
    third counts the words' rows for their weight in the page's end (ranking.relevance)."""
    import sqlalchemy
    from sqlalchemy import event

    store = open_store(pg_url)
    sent: list[str] = []

    def record(conn, cursor, statement, *rest) -> None:
        sent.append(statement)

    try:
        for content in ("kafka retry", "kafka cache cache", "retry"):
            store.insert(new(content), None)
        event.listen(sqlalchemy.engine.Engine, "before_cursor_execute", record)
        try:
            deadline = time.monotonic() + 30
            found = store.search(
                read_query("kafka"),
                None,
                now=T0 + 60,
                limit=5,
                filters=Filters(),
                deadline=deadline,
            )
        finally:
            event.remove(sqlalchemy.engine.Engine, "before_cursor_execute", record)
        assert [m["content"] for m in found.results] == ["kafka retry", "kafka cache cache"]
        assert all(m["decay_score"] > 0 for m in found.results)
        assert len(sent) == 3 and sent[0] == "SET LOCAL enable_seqscan = off"
    finally:
        store.close()


def test_a_search_past_its_deadline_is_stopped_by_the_server(pg_url, monkeypatch):
    from agent_memory.storage.postgres import keyword

    store = open_store(pg_url)
    try:
        store.insert(new("slow words"), None)
        with pytest.raises(SearchTimedOut):
            store.search(read_query("slow"), None, now=T0, limit=5, filters=Filters(), deadline=0.0)
        slow = "SELECT 1 AS id, 1.0 AS score FROM pg_sleep(30)"
        monkeypatch.setattr(  # a ranking that would take 30 s: statement_timeout stops it
            keyword, "keyword_ranking_sql", lambda *a, **k: (slow, [])
        )
        began = time.monotonic()
        with pytest.raises(SearchTimedOut):
            store.search(
                read_query("slow"), None, now=T0, limit=5, filters=Filters(), deadline=began + 0.2
            )
        assert time.monotonic() - began < 10
        store.ping()  # the pooled connection is usable again
    finally:
        store.close()


def test_the_keyword_totals_log_follows_every_write_and_folds_in_the_sweep(pg_url, pg):
    store = open_store(pg_url)
    try:
        a = store.insert(new("one two three"), None)
        b = store.insert(new("four five", expires_at=T0 + 1), None)
        store.update(a, {"content": "one two three four five six"}, T0, None)
        store.update(a, {"tags": ["x"]}, T0, None)
        logged = pg.execute("SELECT count(*) FROM keyword_totals").fetchone()
        store.bump({a: (1, T0 + 1), b: (1, T0 + 1)})  # changes no lexeme: appends nothing
        assert pg.execute("SELECT count(*) FROM keyword_totals").fetchone() == logged
        batch = [
            {"type": "TODO", "content": f"imported {i} words", "tags": [], "source": None,
             "scope": None, "created_at": T0, "access_count": 0, "expires_at": None}
            for i in range(5)
        ]  # fmt: skip
        store.import_memories(batch, T0)
        store.delete(store.insert(new("gone again"), None))
        store.update(b, {"content": "five four four"}, T0, None)  # the same lexemes
        for check in (TOTALS_AGREE, LEXEMES_AGREE):
            assert pg.execute(check).fetchone() == (True,)
        assert pg.execute("SELECT count(*) FROM keyword_totals").fetchone()[0] > 1
        assert store.delete_expired(T0 + 5)[0] == 1
        for check in (TOTALS_AGREE, LEXEMES_AGREE):
            assert pg.execute(check).fetchone() == (True,)
        assert pg.execute("SELECT count(*) FROM keyword_totals").fetchone() == (0,)
    finally:
        store.close()


def test_every_few_stores_the_log_is_folded_off_the_stores_path(pg_url, pg, monkeypatch):
    from agent_memory.storage.postgres import store as pg_store

    monkeypatch.setattr(pg_store, "COMPACT_EVERY_STORES", 3)
    store = open_store(pg_url)
    try:
        for i in range(3):
            store.insert(new(f"word{i} shared"), None)
        assert store._folding is not None
        store._folding.join()
        assert pg.execute("SELECT count(*) FROM keyword_totals").fetchone() == (0,)
        assert pg.execute("SELECT rows FROM lexeme_rows WHERE lexeme = 'share'").fetchone() == (3,)
        for check in (TOTALS_AGREE, LEXEMES_AGREE):
            assert pg.execute(check).fetchone() == (True,)
    finally:
        store.close()


def test_a_fold_leaves_no_dead_log_behind(pg_url, pg):
    """Searches read the whole log: after an import's fold its dead batch maps are vacuumed
    away at once, not when autovacuum comes by."""
    store = open_store(pg_url)
    try:
        batch = [
            {"type": "TODO", "content": f"word{i} other{i % 7} shared", "tags": [],
             "source": None, "scope": None, "created_at": T0, "access_count": 0,
             "expires_at": None}
            for i in range(2_000)
        ]  # fmt: skip
        for start in range(0, 2_000, 500):
            store.import_memories(batch[start : start + 500], T0)
        size = "SELECT pg_relation_size('keyword_totals')"
        assert pg.execute(size).fetchone()[0] > 0
        store.after_import()
        assert pg.execute(size).fetchone()[0] == 0
        for check in (TOTALS_AGREE, LEXEMES_AGREE):
            assert pg.execute(check).fetchone() == (True,)
    finally:
        store.close()


def test_a_words_row_count_is_the_rows_that_hold_it(pg_url, pg):
    """What bm25's n reads (lexeme_rows and the log), against the GIN index's own count, for
    words, a word no row holds, and leaves counted from the index (a phrase, a prefix)."""
    store = open_store(pg_url)
    try:
        for i in range(30):
            store.insert(new(f"run {'kafka ' * (i % 3)}cache {i % 4} runner"), None)
        store.delete(1)
        store.update(2, {"content": "only kafka now"}, T0, None)
        parsed = query.read("run kafka zebra cache_1 runner")  # cache_1: a phrase
        statement, params = keyword.word_rows_sql(parsed.leaves)
        total, counts = pg.execute(statement, params).fetchone()

        def gin(text: str) -> int:
            rendered, args = tsquery.to_tsquery(query.parse(text))
            where = f"SELECT count(*) FROM memories WHERE terms @@ {rendered}"
            return pg.execute(where, args).fetchone()[0]

        assert total == 29
        assert counts == [gin(w) for w in ["run", "kafka", "zebra", '"cache 1"', "runner"]]
        assert counts[:3] == [28, 20, 0]
        prefixed = keyword.word_rows_sql([query.parse("run*")])[0]
        assert "lexeme_rows" not in prefixed  # a prefix is counted from the index
    finally:
        store.close()


# -- the vector leg's filters ------------------------------------------------------------------


def toy(rng: random.Random, *centre: float) -> Embedding:
    """An 8-d vector near ``centre``."""
    values = [*centre, *[0.0] * (8 - len(centre))]
    return Embedding.of(TOY_PIN, [v + rng.gauss(0, 0.05) for v in values])


TOY_PIN = Pin("toy", 8, "none", "ollama")


@pytest.mark.parametrize("plan", ["iterative", "short-then-exact"])
def test_a_filtered_vector_leg_walks_the_hnsw_graph_past_the_memories_it_rejects(
    pg_url, pg, monkeypatch, plan
):
    """1,000 memories nearer the query than any of the 1,000 that pass the filter: the
    index's first ef_search answers are all rejected, and the iterative scan goes on (or,
    stopped short by max_scan_tuples, the exact plan answers)."""
    from agent_memory.storage.postgres import vectors

    rng = random.Random(5)
    query = toy(rng, 1.0)
    rows = [
        {"type": "TODO", "content": f"{scope} {i}", "tags": [], "source": None, "scope": scope,
         "created_at": T0, "access_count": 0, "expires_at": None}
        for scope in ("other", "wanted") for i in range(1_000)
    ]  # fmt: skip
    wanted = Filters(scope="wanted")
    store = open_store(pg_url)
    try:
        made = store.import_memories(rows, T0)
        store.write_vectors(
            [
                (memory_id, row["content"], toy(rng, *((1.0,) if i < 1_000 else (0.3, 1.0))))
                for i, ((_, memory_id), row) in enumerate(zip(made, rows, strict=True))
            ]
        )
        pg.execute("ANALYZE")  # the planner then takes the index for a filter half the rows pass
        exact = store.search(
            read_query(""), query, now=T0, limit=5, filters=wanted, floor=False
        ).results
        monkeypatch.setattr(vectors, "EXACT_MIN_ROWS", 0)
        monkeypatch.setattr(vectors, "ITERATIVE_COST", 0)
        if plan == "iterative":
            monkeypatch.setattr(vectors, "_EXACT_PASSING", None)  # it must not be needed
        else:
            monkeypatch.setattr(vectors, "ITERATIVE_MAX_TUPLES", 50)
        found = store.search(
            read_query(""), query, now=T0, limit=5, filters=wanted, floor=False
        ).results
        assert [m["content"] for m in found] == [m["content"] for m in exact]
        assert len(found) == 5 and all(m["scope"] == "wanted" for m in found)
    finally:
        store.close()


# -- the sweep with stores at the same time ---------------------------------------------------


def test_the_sweep_runs_in_batches_while_another_writer_stores(pg_url, monkeypatch):
    from agent_memory.storage.postgres import store as pg_store

    monkeypatch.setattr(pg_store, "SWEEP_BATCH_ROWS", 20)
    store = open_store(pg_url)
    try:
        for i in range(200):
            store.insert(new(f"short {i}", expires_at=T0 + 5), None)
        stored: list[int] = []
        stop = threading.Event()

        def writer() -> None:
            while not stop.is_set() or len(stored) < 5:
                stored.append(store.insert(new(f"kept {len(stored)}"), None))

        thread = threading.Thread(target=writer)
        thread.start()
        try:
            removed, longest = store.delete_expired(T0 + 5)
        finally:
            stop.set()
            thread.join()
        assert removed == 200 and longest < 5
        assert store.embedding_counts()[0] == len(stored)
    finally:
        store.close()


@pytest.mark.parametrize("stopped", [False, True])
def test_a_whole_decay_refresh_vacuums_the_rows_it_rewrote(pg_url, pg, monkeypatch, stopped):
    """Every row gets a new version: searches would read the dead ones until a vacuum (a
    question took twice as long at 100,000 memories); a refresh stopped early leaves it."""
    from agent_memory.storage.postgres import store as pg_store

    monkeypatch.setattr(pg_store, "SWEEP_BATCH_ROWS", 2)
    vacuums = "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'memories'"
    store = open_store(pg_url)
    try:
        for i in range(5):
            store.insert(new(f"row {i}"), None)
        before = pg.execute(vacuums).fetchone()[0]
        done, _ = store.refresh_decay(T0 + 86_400, lambda: stopped)
        assert done == (2 if stopped else 5)
        assert pg.execute(vacuums).fetchone()[0] == before + (0 if stopped else 1)
    finally:
        store.close()


def test_an_unreachable_server_is_one_line_without_the_password(tmp_path):
    url = f"postgresql://amy:s3cret@/nothing?host={tmp_path}&connect_timeout=2"
    with pytest.raises(DatabaseOpenError) as caught:
        open_store(url)
    assert "s3cret" not in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith(f"cannot open database {urls.redacted(url)}: ")
