"""The PostgreSQL keyword ranking against the SQLite app's own: the same corpus stored through
MemoryService (FTS5) and loaded into PostgreSQL, the same queries, the same top 10 with the
same scores (-bm25, within 1e-6)."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import sqlean
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory import query
from agent_memory.contract.models import Filters
from agent_memory.query import bm25
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.storage.postgres import keyword, tsquery
from agent_memory.storage.sqlite.keyword import FtsQueryError, Run
from bench import corpus

pytest_plugins = ["tests.support.pg_fixtures"]


# The store's own tables (its migrations), with defaults for the columns the ranking does
# not read, so that the tests insert only what it does.
DEFAULTS = {
    "tags": "'[]'",
    "base_weight": "1",
    "decay_score": "1",
    "access_count": "0",
    "created_at": "0",
    "last_accessed": "0",
    "embedding_status": "0",
    "content_hash": "0",
}


@pytest.fixture
def pg(pg_url: str) -> Iterator[psycopg.Connection]:
    """An autocommit connection to this test's database, holding the store's tables."""
    open_store(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for column, value in DEFAULTS.items():
            conn.execute(f"ALTER TABLE memories ALTER COLUMN {column} SET DEFAULT {value}")
        yield conn


MEMORIES = 3_000
TOP = 10
TOLERANCE = 1e-6
EDGE_CASES = [
    ("DECISION", "Café au lait: the naïve résumé parser was RENAMED to resume_parser.", []),
    ("DECISION", "cafe naive resume: the parser runs, ran and is running again", ["parser"]),
    ("PATTERN", "Running runners run; the runner runs faster than running.", ["run"]),
    ("ERROR", "sqlite-vec 0.1.6 fails on v1.2.3 with 1e10 rows and hex 0e84b5ff", ["sqlite"]),
    ("TODO", "TODO: auth token refresh; what's the auth story? AUTH-1234", ["auth"]),
    ("CONSTRAINT", "as is us os a i: short words stay as they are", []),
    ("ARCHITECTURE", "Kafka kafka KAFKA kafka consumer consumer producer", ["kafka"]),
    ("DECISION", "Straße Łódź Ångström ЖУК Ελλάδα İstanbul 東京 ＡＢＣ x² ½", []),
    ("PATTERN", "—", []),
    ("ERROR", "decided decided decided to decide on the decision", ["decide"]),
    ("TODO", "Decided: first token is decided, then advisory lock then lock advisory", []),
    ("DECISION", "assembly assemblies apologies autospecced hopefulness electrical", []),
    ("PATTERN", " ".join(["postgres"] * 300) + " redis", ["long"]),
    ("ARCHITECTURE", "the the the the the the the the kafka", []),
    ("DECISION", "我们选择了数据库PostgreSQL，因为它支持事务。数据库每天备份。", ["kafka"]),
    ("PATTERN", "データベースにはPostgreSQLを選びました。理由は信頼性です。", []),
    ("ERROR", "데이터베이스는 PostgreSQL을 선택했습니다. 데이터베이스를 백업합니다.", []),
    ("TODO", "哈哈哈哈 哈哈 数据数据数据 库", ["auth"]),
    ("DECISION", "ใช้ฐานข้อมูลนี้ kafka", []),
    ("TODO", "tagged apart", ["数据库", "line\nbreak", 'say "hi"', "C:\\temp", "ünïcode"]),
]
QUERIES = [
    # single words
    "kafka", "postgres", "auth", "sqlite", "TypeError", "deadlock", "the", "decided",
    # several words
    "kafka billing", "redis cache", "auth service", "postgres migration worker",
    # phrases
    '"advisory lock"', '"the auth service"', "retry+with+jitter", '"lock advisory"',
    '"decided to decide"',
    # prefixes
    "post*", "invoic*", "ca*", '"deadlock under" *', "run*", "decid*",
    # AND / OR / NOT, precedence, parentheses
    "kafka AND billing", "kafka OR redis", "kafka NOT billing", "(kafka OR redis) AND cache",
    "kafka OR redis AND cache", "redis NOT cache OR kafka", "kafka billing OR redis cache",
    "(auth OR billing) NOT (kafka OR redis)",
    # accents and case
    "café", "CAFE", "naïve", "résumé", "Straße", "łódź", "ελλάδα", "жук", "東京", "ａｂｃ",
    # stemming
    "running", "runs", "runner", "validated", "validation", "assemblies", "apology",
    "hopeful", "electric",
    # first token, column filters, NEAR
    "^decided", "^TODO", "^in", "content:kafka", "{content}: redis", "-content:kafka OR redis",
    "tags:kafka", "tags:parser", "{content tags}: auth", "-tags:kafka", "^parser", "tags:^run",
    "content:^run", "tags:run*", "content:decid*", 'tags:"sqlite"', "NEAR(kafka parser)",
    "tags:(auth OR long) NOT content:auth", "kafka OR tags:kafka", "tags:数据", "hi",
    "nbreak", "temp", "unicode", '"say hi"',  # the last tags of the tagged-apart memory
    "NEAR(kafka billing, 5)", "NEAR(redis cache)", "NEAR(advisory lock, 0)",
    "NEAR(move to, 3)", 'NEAR("advisory lock" lock, 2)',
    # words FTS5 indexes its own way
    "1e10", "0e84b5ff", "v1", "x²", "as", "is", "resume_parser",
    # questions and labels: not FTS5, so the plain-language retry
    "what did we decide about the maven release?", "sqlite-vec", "TODO: auth", "AUTH-1234",
    "what's the auth story?", "src/auth/service_12.py", "it's 1e10, isn't it?",
    # scripts written without spaces: bigrams
    "数据库", "数据", "库", "数据库 AND 事务", '"数据库 PostgreSQL"', "データベース",
    "데이터베이스", "哈哈哈", "数据数据", "NEAR(数据库 事务, 10)", "^我们", "数据*",
    "what about 数据库?", "ฐานข้อมูล", "kafka OR 库",
    # matches nothing
    "zzzzzz", '""', "kafka AND zzzzzz",
]  # fmt: skip
FILTERS = [
    {"memory_type": "DECISION"},
    {"scope": "billing"},
    {"tag": "kafka"},
    {"tag": "auth", "memory_type": "TODO"},
]


def corpus_records() -> list[dict]:
    records = list(corpus.developer_memories(MEMORIES - len(EDGE_CASES)))
    for memory_type, content, tags in EDGE_CASES:
        records.append({"content": content, "type": memory_type, "tags": tags, "scope": None})
    return records


@pytest.fixture
def both(tmp_path: Path, pg: psycopg.Connection):
    """(the SQLite app's service, a PostgreSQL connection) holding the same memories."""
    service = MemoryService(open_store(tmp_path / "memory.db"), clock=lambda: 1_767_225_600.0)
    for record in corpus_records():
        service.store(record)
    with service.db.database.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT id, type, content, tags, scope FROM memories").all()
    with pg.cursor() as cur:
        cur.executemany(
            "INSERT INTO memories (id, type, content, tags, scope, terms, doc_len, tf, tag_tf)"
            " VALUES (%s, %s, %s, %s::jsonb, %s, %s::tsvector, %s, %s::jsonb, %s::jsonb)",
            [
                (i, t, c, tags, s, *keyword.document(c, json.loads(tags)))
                for i, t, c, tags, s in rows
            ],
        )
    pg.execute("ANALYZE memories")
    yield service, pg
    service.close()


def sqlite_top(service: MemoryService, text: str, filters: dict) -> list[tuple[int, float]]:
    """The app's keyword ranking (the hybrid leg's: ids by -bm25, filters before the cut):
    raw FTS5 first, the OR of the words when FTS5 refuses."""
    with service.db.database.engine.connect() as conn:
        run = Run(conn, now=1_767_225_600, filters=Filters(**filters), page=False)
        try:
            return run(query.indexed_match(text), TOP, None)
        except FtsQueryError:
            words = re.findall(r"\w+", text)
            retry = " OR ".join(f'"{word}"' for word in words)
            return run(query.indexed_match(retry), TOP, None) if words else []


def postgres_top(pg: psycopg.Connection, text: str, filters: dict) -> list[tuple[int, float]]:
    if query.is_special(text):
        return []
    try:  # the low-level ranking of the same text as sqlite_top: FTS5's reading, or the OR
        tree = query.parse(text)
    except query.QuerySyntaxError:
        words = re.findall(r"\w+", text)
        tree = query.parse(" OR ".join(f'"{word}"' for word in words)) if words else None
    if tree is None:
        return []
    # Rewritten as the index holds text (query.bigrams), as indexed_match does for SQLite.
    statement, params = keyword.keyword_ranking_sql(query.rewrite(tree), limit=TOP, **filters)
    return [(int(i), float(s)) for i, s in pg.execute(statement, params)]


def same(a: list[tuple[int, float]], b: list[tuple[int, float]]) -> bool:
    return [i for i, _ in a] == [i for i, _ in b] and all(
        abs(x - y) <= TOLERANCE for (_, x), (_, y) in zip(a, b, strict=True)
    )


def test_postgres_ranks_like_fts5(both, capsys):
    service, pg = both
    asked = mismatched = 0
    report = []
    times: list[tuple[float, str]] = []
    sqlite_times: list[float] = []
    for text in QUERIES:
        for filters in [{}, *FILTERS]:
            began = time.perf_counter()
            expected = sqlite_top(service, text, filters)
            sqlite_times.append(time.perf_counter() - began)
            began = time.perf_counter()
            got = postgres_top(pg, text, filters)
            times.append((time.perf_counter() - began, text))
            asked += 1
            if not same(expected, got):
                mismatched += 1
                report.append(json.dumps([text, filters, expected[:3], got[:3]]))
    times.sort()
    sqlite_times.sort()
    with capsys.disabled():
        print(
            f"\nparity: {asked} queries, {mismatched} mismatched; PostgreSQL query time"
            f" p50 {times[len(times) // 2][0] * 1000:.1f} ms, max {times[-1][0] * 1000:.1f} ms"
            f" ({times[-1][1]}); SQLite p50 {sqlite_times[len(sqlite_times) // 2] * 1000:.1f}"
            f" ms, max {sqlite_times[-1] * 1000:.1f} ms"
        )
        for line in report:
            print(line)
    assert mismatched == 0


def test_a_wordless_query_ranks_nothing(pg: psycopg.Connection):
    statement, params = keyword.keyword_ranking_sql(query.parse('""'), limit=5)
    assert pg.execute(statement, params).fetchall() == []


def test_a_word_too_long_for_postgresql_matches_nothing(pg: psycopg.Connection):
    long_word = "x" * 3_000
    text, count, tf, _ = keyword.document(f"short {long_word}")
    pg.execute(
        "INSERT INTO memories (id, type, content, terms, doc_len, tf)"
        " VALUES (1, 'TODO', 'short', %s::tsvector, %s, %s::jsonb)",
        (text, count, tf),
    )
    for words in [long_word, f"{long_word} OR short", f"NEAR(short {long_word})"]:
        statement, params = keyword.keyword_ranking_sql(query.parse(words), limit=5)
        found = [i for i, _ in pg.execute(statement, params)]
        assert found == ([1] if "OR" in words else []), words


# A dense corpus (eight words, every pair of words co-occurs) where every operator matters;
# a third of the rows have tags of the same words.
DENSE_WORDS = ["a", "b", "c", "d", "e", "f", "g", "h"]
LEAVES = ["a", "b", "c", "d", "e*", '"a b"', '"c d e"', "^a", "^b+c", "f", "g h", "content:b",
          '"d"*', '{content}: "b c"', "c+d*", "hello", "café", "tags:a", '{tags}: "b c"',
          "-content:c", "tags:^d", "tags:e*"]  # fmt: skip
OPERATORS = [" AND ", " OR ", " NOT ", " "]


def dense_corpus() -> list[tuple[str, list[str]]]:
    rng = random.Random(5)
    docs = [
        (
            " ".join(rng.choices(DENSE_WORDS, k=rng.randint(1, 30))),
            [" ".join(rng.choices(DENSE_WORDS, k=rng.randint(1, 3))) for _ in range(i % 3)],
        )
        for i in range(300)
    ]
    return [*docs, ("hello café", ["a"]), ("Café a b", []), ("h", ["hello"])]


def dense_tables(pg: psycopg.Connection) -> sqlean.Connection:
    """The dense corpus in an FTS5 table of the index's columns (memory) and in this test's
    PostgreSQL database."""
    docs = dense_corpus()
    fts5 = sqlean.connect(":memory:")
    fts5.execute(
        "CREATE VIRTUAL TABLE t USING fts5(content, tags,"
        " tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    fts5.executemany(
        "INSERT INTO t (rowid, content, tags) VALUES (?, ?, ?)",
        [(i, text, query.tag_text(tags)) for i, (text, tags) in enumerate(docs, 1)],
    )
    with pg.cursor() as cur:
        cur.executemany(
            "INSERT INTO memories (id, type, content, tags, terms, doc_len, tf, tag_tf)"
            " VALUES (%s, 'DECISION', %s, %s::jsonb, %s::tsvector, %s, %s::jsonb, %s::jsonb)",
            [
                (i, text, json.dumps(tags), *keyword.document(text, tags))
                for i, (text, tags) in enumerate(docs, 1)
            ],
        )
    return fts5


BM25 = f"bm25(t, 1.0, {bm25.TAG_WEIGHT!r})"


def fts5_ranking(conn: sqlean.Connection, text: str) -> list[tuple[int, float]]:
    return conn.execute(
        f"SELECT rowid, -{BM25} FROM t WHERE t MATCH ? ORDER BY {BM25}, rowid", (text,)
    ).fetchall()


def assert_ranks_like_fts5(pg: psycopg.Connection, text: str) -> None:
    if not pg.execute("SELECT EXISTS (SELECT 1 FROM memories)").fetchone()[0]:
        DENSE[:] = [dense_tables(pg)]
    expected = fts5_ranking(DENSE[0], text)
    statement, params = keyword.keyword_ranking_sql(query.parse(text), limit=1_000)
    got = [(int(i), float(s)) for i, s in pg.execute(statement, params)]
    assert same(expected, got), (text, expected[:5], got[:5])


DENSE: list[sqlean.Connection] = []
_operand = st.sampled_from(LEAVES) | st.tuples(
    st.sampled_from(LEAVES), st.sampled_from(OPERATORS), st.sampled_from(LEAVES)
).map(lambda t: f"({t[0]}{t[1]}{t[2]})" if t[1] != " " else f"{t[0]} {t[2]}")
SETTINGS = settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)


@SETTINGS
@given(st.tuples(_operand, st.sampled_from(OPERATORS), _operand))
def test_generated_boolean_queries_rank_like_fts5(pg, parts):
    left, op, right = parts
    if op == " " and (left.startswith("(") or right.startswith("(")):
        op = " AND "  # FTS5 has no implicit AND next to parentheses
    assert_ranks_like_fts5(pg, f"{left}{op}{right}")


_near_phrase = st.sampled_from(["a", "b", "c", '"a b"', "c+d*", "e*", '"d e f"', "a"])


@SETTINGS
@given(st.lists(_near_phrase, min_size=2, max_size=4), st.integers(0, 6))
def test_generated_near_groups_rank_like_fts5(pg, group, distance):
    assert_ranks_like_fts5(pg, f"NEAR({' '.join(group)}, {distance})")


def test_a_memory_past_the_tsvector_limit_is_stored_and_still_counted(pg: psycopg.Connection):
    """600 distinct 2,000-byte words: 1.2 MB of lexemes, past the 1 MiB a tsvector holds."""
    content = " ".join(f"{i:05d}" + "x" * 1990 for i in range(600))
    text, count, tf, _ = keyword.document(content)
    pg.execute(
        "INSERT INTO memories (id, type, content, terms, doc_len, tf)"
        " VALUES (1, 'DECISION', %s, %s::tsvector, %s, %s::jsonb)",
        (content, text, count, tf),
    )
    indexed = pg.execute("SELECT length(terms) FROM memories").fetchone()[0]
    assert count == len(json.loads(tf)) == 600
    assert 500 < indexed < 600


def fts5_rows(conn: sqlean.Connection, text: str) -> set[int]:
    return {rowid for (rowid,) in conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (text,))}


def postgres_rows(pg: psycopg.Connection, where: str, params: list) -> set[int]:
    return {i for (i,) in pg.execute(f"SELECT id FROM memories m WHERE {where}", params)}


_near_leaf = st.tuples(st.lists(_near_phrase, min_size=2, max_size=3), st.integers(0, 4)).map(
    lambda t: f"NEAR({' '.join(t[0])}, {t[1]})"
)


@SETTINGS
@given(st.tuples(_near_leaf | _operand, st.sampled_from(OPERATORS[:3]), _near_leaf | _operand))
def test_nested_near_groups_match_the_rows_fts5_matches(pg, parts):
    """Scores may differ here (see keyword.py: FTS5 counts phrases parked on a row); the rows
    that match may not."""
    text = "".join(parts)
    assert_ranks_like_fts5(pg, "a")  # loads the corpus
    statement, params = keyword.keyword_ranking_sql(query.parse(text), limit=1_000)
    got = {int(i) for i, _ in pg.execute(statement, params)}
    assert got == fts5_rows(DENSE[0], text), text


_pair_phrase = st.sampled_from(["a", "b", "e*", '"a b"', '"a b c"', "b+c*", '"c d"', "b*", "a+a"])


@SETTINGS
@given(_pair_phrase, _pair_phrase, st.integers(0, 5))
def test_the_tsquery_of_a_near_pair_matches_fts5s_rows(pg, left, right, distance):
    """to_tsquery alone (no exact check): two phrases near each other, overlaps included."""
    text = f"NEAR({left} {right}, {distance})"
    assert_ranks_like_fts5(pg, "a")
    rendered, params = tsquery.to_tsquery(query.parse(text))
    assert postgres_rows(pg, f"terms @@ {rendered}", params) == fts5_rows(DENSE[0], text), text


def test_the_tsquery_of_longer_near_groups_is_looser_than_fts5(pg):
    assert_ranks_like_fts5(pg, "a")
    for text in ["NEAR(a b c, 2)", "NEAR(a b, 40)", 'NEAR("a b c" b, 1)']:
        rendered, params = tsquery.to_tsquery(query.parse(text))
        assert postgres_rows(pg, f"terms @@ {rendered}", params) >= fts5_rows(DENSE[0], text)
