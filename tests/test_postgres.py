"""The PostgreSQL backend as an operator meets it: URLs and what is logged of them, opening
(modes, a newer schema, several servers migrating at once, the missing extra), storage
errors kept generic, and the real executables (MCP, REST, export and import) on a
PostgreSQL database, several processes at once.

The Store contract itself is tests/test_store_conformance.py, run on both engines.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import anyio
import psycopg
import pytest
from mcp import Client, StdioServerParameters
from psycopg import sql

from agent_memory import query, storage
from agent_memory.contract.errors import (
    DatabaseMissing,
    DatabaseOpenError,
    SchemaTooNew,
    SearchTimedOut,
    StorageFault,
)
from agent_memory.contract.models import Embedding, Filters, Pin
from agent_memory.service.core import MemoryService
from agent_memory.storage import EXISTING, READ, open_store
from agent_memory.storage.base import NewMemory
from agent_memory.storage.engines import engine_for
from agent_memory.storage.postgres import keyword, totals, tsquery
from agent_memory.storage.postgres import url as urls
from agent_memory.storage.postgres.database import head_revision
from tests.support.clock import Clock
from tests.support.many_writers import (
    MCP_WORKERS,
    OPS_PER_WORKER,
    Ledger,
    mcp_caller,
    rest_caller,
    run_worker,
)
from tests.support.rest_daemon import RestDaemon
from tests.support.spawned import executable, run_agent_memory, server_env

pytest_plugins = ["tests.support.pg_fixtures"]

T0 = 1_767_225_600


def new(content: str, *, expires_at: int | None = None) -> NewMemory:
    return NewMemory("TODO", content, [], None, None, T0, expires_at)


# -- URLs -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://amy:s3cret@db.example/team", "postgresql://amy:***@db.example/team"),
        ("postgresql://amy@db.example/team?sslmode=require", None),
        (
            "postgres://db/team?user=amy&password=s3cret&sslmode=verify-full",
            "postgres://db/team?user=amy&password=***&sslmode=verify-full",
        ),
        ("postgresql:///team?host=/run/postgresql", None),
    ],
)
def test_a_url_is_shown_without_its_password(url, shown):
    assert urls.redacted(url) == (shown or url)
    assert "s3cret" not in urls.redacted(url)


def service_file(tmp_path, **services: str) -> str:
    """A libpq service file (PGSERVICEFILE) with a service of each name leading to the
    database of its URL."""
    lines = []
    for name, url in services.items():
        parts = urlsplit(url)
        params = dict(parse_qsl(parts.query))
        fields = {
            "host": parts.hostname or params.get("host"),
            "port": parts.port or params.get("port"),
            "user": parts.username or params.get("user"),
            "password": parts.password or params.get("password"),
            "dbname": parts.path.lstrip("/"),
        }
        lines += [f"[{name}]", *(f"{k}={v}" for k, v in fields.items() if v)]
    path = tmp_path / "pg_service.conf"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


TEAM_A, TEAM_B = "postgresql:///?service=teama", "postgresql:///?service=teamb"


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


def test_only_postgresql_urls_are_urls():
    assert engine_for("postgresql://x/y").name == engine_for("postgres://x/y").name == "postgresql"
    assert engine_for("memory.db").name == engine_for(None).name == "sqlite"


# -- opening ----------------------------------------------------------------------------------


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
        found = store.search("kafka", None, now=T0, limit=5, filters=Filters())
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
            found = store.search(word, None, now=T0, limit=5, filters=Filters())
            assert [m["content"] for m in found.results] == [expected]
        found = store.search("kafka", None, now=T0, limit=5, filters=Filters())
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
            found = store.search(word, None, now=T0, limit=5, filters=Filters())
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


def test_an_unreachable_server_is_one_line_without_the_password(tmp_path):
    url = f"postgresql://amy:s3cret@/nothing?host={tmp_path}&connect_timeout=2"
    with pytest.raises(DatabaseOpenError) as caught:
        open_store(url)
    assert "s3cret" not in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith(f"cannot open database {urls.redacted(url)}: ")


@pytest.fixture
def without_pgvector(pg_server: str) -> Iterator[tuple[str, int]]:
    """A URL to a new, empty database on a server that has no pgvector to give it, and the
    server's major version. The session's server, with its extension lookups pointed at an
    empty place for these connections (extension_control_path, PostgreSQL 18)."""
    name = f"agent_memory_no_vector_{os.getpid()}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        major = conn.info.server_version // 10_000
        if major < 18:
            pytest.skip("extension_control_path needs PostgreSQL 18")
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(sql.Identifier(name)))
    parts = urlsplit(pg_server)
    query = "&".join(
        filter(None, [parts.query, "options=-c%20extension_control_path%3D/nonexistent"])
    )
    try:
        yield urlunsplit(parts._replace(path=f"/{name}", query=query)), major
    finally:
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def test_a_server_without_pgvector_says_where_to_get_it(without_pgvector):
    url, major = without_pgvector
    done = run_agent_memory("--db", url, "store", "--type", "TODO", "the first memory")
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"cannot open database {urls.redacted(url)}: ")
    assert 'extension "vector" is not available: install pgvector where PostgreSQL runs' in line
    assert f"(Debian/Ubuntu: postgresql-{major}-pgvector; Homebrew: pgvector)" in line
    assert (
        "the embedded PostgreSQL with pgvector as docs/postgresql.md in agent-memory's "
        "repository describes"
    ) in line


def test_without_the_extra_a_url_is_one_clear_line(monkeypatch):
    for name in [m for m in sys.modules if m.startswith(("psycopg", "agent_memory.storage.pg"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delitem(sys.modules, "agent_memory.storage.postgres.database", raising=False)
    monkeypatch.delitem(sys.modules, "agent_memory.storage.postgres.store", raising=False)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    for call in (storage.open_store, storage.open_reader, storage.quick_pin):
        with pytest.raises(
            DatabaseOpenError, match=r"pip install 'typed-agent-memory\[postgres\]'"
        ):
            call("postgresql://amy:s3cret@db.example/team")


def test_a_sqlite_server_never_imports_the_driver(tmp_path):
    code = (
        "import sys; from agent_memory import storage; from agent_memory.cli import main;"
        f" storage.open_store({str(tmp_path / 'm.db')!r}).close();"
        " print('psycopg' in sys.modules)"
    )
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=server_env()
    )
    assert done.stdout.strip() == "False"


# -- errors -----------------------------------------------------------------------------------


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
                "kafka", None, now=T0 + 60, limit=5, filters=Filters(), deadline=deadline
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
            store.search("slow", None, now=T0, limit=5, filters=Filters(), deadline=0.0)
        slow = "SELECT 1 AS id, 1.0 AS score FROM pg_sleep(30)"
        monkeypatch.setattr(  # a ranking that would take 30 s: statement_timeout stops it
            keyword, "keyword_ranking_sql", lambda *a, **k: (slow, [])
        )
        began = time.monotonic()
        with pytest.raises(SearchTimedOut):
            store.search("slow", None, now=T0, limit=5, filters=Filters(), deadline=began + 0.2)
        assert time.monotonic() - began < 10
        store.ping()  # the pooled connection is usable again
    finally:
        store.close()


TOTALS_AGREE = (
    f"SELECT (SELECT n FROM {keyword.TOTALS} t) = (SELECT count(*) FROM memories)"
    f" AND (SELECT tokens FROM {keyword.TOTALS} t)"
    " = (SELECT coalesce(sum(doc_len), 0) FROM memories)"
)
# Each lexeme's rows as the folded counts and the log say, against the rows themselves.
LEXEMES_AGREE = f"""
WITH truth AS (SELECT k, count(*) AS n FROM memories, jsonb_object_keys(tf) k GROUP BY k),
logged AS (SELECT lexeme AS k, rows AS n FROM lexeme_rows
           UNION ALL {totals.LOGGED_LEXEME_ROWS}),
counted AS (SELECT k, sum(n) AS n FROM logged GROUP BY k HAVING sum(n) <> 0)
SELECT NOT EXISTS (SELECT k, n FROM truth EXCEPT SELECT k, n FROM counted)
   AND NOT EXISTS (SELECT k, n FROM counted EXCEPT SELECT k, n FROM truth)
   AND (SELECT count(*) FROM truth) > 0
"""


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
        exact = store.search("", query, now=T0, limit=5, filters=wanted, floor=False).results
        monkeypatch.setattr(vectors, "EXACT_MIN_ROWS", 0)
        monkeypatch.setattr(vectors, "ITERATIVE_COST", 0)
        if plan == "iterative":
            monkeypatch.setattr(vectors, "_EXACT_PASSING", None)  # it must not be needed
        else:
            monkeypatch.setattr(vectors, "ITERATIVE_MAX_TUPLES", 50)
        found = store.search("", query, now=T0, limit=5, filters=wanted, floor=False).results
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


# -- the executables --------------------------------------------------------------------------


# (tests/test_e2e_mcp.py and tests/test_e2e_rest.py run their sessions on both engines.)


def test_ui_does_not_take_one_service_for_another(pg_url, other_pg_url, tmp_path):
    """A daemon serving team B's database at --addr: ui --db for team B uses it, ui --db for
    team A refuses it, though both URLs name the same host, port and no database."""
    services = service_file(tmp_path, teama=pg_url, teamb=other_pg_url)
    open_store(pg_url).close()
    env = server_env(PGSERVICEFILE=services, DISPLAY="", WAYLAND_DISPLAY="")
    with RestDaemon(TEAM_B, env={"PGSERVICEFILE": services}) as daemon:
        addr = ("ui", "--no-browser", "--addr", f"127.0.0.1:{daemon.port}")
        run = {"capture_output": True, "text": True, "env": env, "timeout": 60}
        same = subprocess.run([executable(), "--db", TEAM_B, *addr], **run)
        other = subprocess.run([executable(), "--db", TEAM_A, *addr], **run)
        assert daemon.stop() == 0
    assert (same.returncode, same.stdout) == (0, f"http://127.0.0.1:{daemon.port}/\n")
    assert "serves this database" in same.stderr
    assert (other.returncode, other.stdout) == (1, ""), other.stderr
    assert "does not prove it serves this database" in other.stderr


def exported(path) -> tuple[list, list]:
    """(memory records, link records) of an export file, without the header and the
    records' last_accessed (an import counts as a use, on either engine)."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    memories = [{k: v for k, v in r.items() if k != "last_accessed"} for r in lines[1:]]
    return [r for r in memories if "content" in r], [r for r in memories if "content" not in r]


def test_a_team_moves_its_memories_from_sqlite_to_postgresql_and_back(tmp_path, pg_url):
    source = tmp_path / "memory.db"
    service = MemoryService(open_store(source), clock=Clock())
    try:
        for i in range(30):
            service.store(
                {
                    "content": f"decision {i}: café and the résumé parser",
                    "type": "DECISION" if i % 3 else "TODO",
                    "tags": [f"t{i % 4}"],
                    "scope": "kore" if i % 2 else None,
                }
            )
        service.link({"from_id": 2, "to_id": 1, "kind": "supersedes"})
        service.link({"from_id": 3, "to_id": 5, "kind": "caused_by"})
    finally:
        service.close()
    first, second, third = (tmp_path / f"{n}.jsonl" for n in ("sqlite", "pg", "back"))
    done = run_agent_memory("--db", str(source), "export", "-o", str(first))
    assert done.returncode == 0, done.stderr
    done = run_agent_memory("--db", pg_url, "import", "--from", "jsonl", str(first))
    assert done.returncode == 0, done.stderr
    done = run_agent_memory("--db", pg_url, "export", "-o", str(second))
    assert done.returncode == 0, done.stderr
    assert exported(second) == exported(first)
    again = run_agent_memory("--db", pg_url, "import", "--from", "jsonl", str(first))
    assert again.returncode == 0 and "30" in again.stdout + again.stderr  # all duplicates
    back = tmp_path / "back.db"
    assert (
        run_agent_memory("--db", str(back), "import", "--from", "jsonl", str(second)).returncode
        == 0
    )
    assert run_agent_memory("--db", str(back), "export", "-o", str(third)).returncode == 0
    assert exported(third) == exported(first)
    found = run_agent_memory("--db", pg_url, "search", "--json", "résumé parser")
    assert found.returncode == 0, found.stderr


def test_six_processes_write_one_database_at_once_and_nothing_is_lost(pg_url):
    params = StdioServerParameters(
        command=executable(),
        args=["--db", pg_url, "--sweep-interval", "1", "--log-level", "warning", "serve"],
        env=server_env(),
    )
    daemon = RestDaemon(pg_url, log_level="warning", env={"AGENT_MEMORY_SWEEP_INTERVAL": "1"})
    ledgers = [Ledger() for _ in range(MCP_WORKERS + 1)]

    async def main() -> None:
        clients = [Client(params) for _ in range(MCP_WORKERS)]
        for client in clients:
            await client.__aenter__()
        try:
            async with anyio.create_task_group() as group:
                for i, client in enumerate(clients):
                    group.start_soon(
                        run_worker,
                        f"mcp{i}",
                        mcp_caller(client),
                        random.Random(i),
                        ledgers[i],
                    )
                group.start_soon(
                    run_worker, "rest", rest_caller(daemon), random.Random(99), ledgers[-1]
                )
        finally:
            for client in reversed(clients):
                await client.__aexit__(None, None, None)

    try:
        anyio.run(main)
    finally:
        assert daemon.stop() == 0

    assert [e for ledger in ledgers for e in ledger.errors] == []
    assert sum(ledger.ops for ledger in ledgers) == (MCP_WORKERS + 1) * OPS_PER_WORKER
    expected = {i: c for ledger in ledgers for i, c in ledger.contents.items()}
    forgotten = set().union(*(ledger.forgotten for ledger in ledgers))
    links = set().union(*(ledger.links for ledger in ledgers))
    assert len(expected) == sum(len(ledger.contents) for ledger in ledgers)  # ids never shared
    with psycopg.connect(pg_url) as conn:
        rows = dict(conn.execute("SELECT id, content FROM memories").fetchall())
        assert rows == expected  # every acknowledged write once, with its last content
        assert not forgotten & set(rows)
        assert links <= set(conn.execute("SELECT from_id, to_id, kind FROM memory_links"))
        assert conn.execute("SELECT count(*) FROM alembic_version").fetchone() == (1,)
        assert conn.execute(TOTALS_AGREE).fetchone() == (True,)
        assert conn.execute(LEXEMES_AGREE).fetchone() == (True,)
        for memory_id, content in list(expected.items())[:: max(1, len(expected) // 40)]:
            word = content.split()[0]  # the worker's name: found through the keyword index
            hits = conn.execute(
                "SELECT id FROM memories WHERE terms @@ %s::tsquery", (f"'{word}'",)
            ).fetchall()
            assert (memory_id,) in hits
