"""The shortcuts keyword search takes on large databases, and what they give up.

Two give the answer of the full query (issue 8): an unfiltered search ranks candidates in
the index alone and blends decay into them (keyword.KEYWORD_CANDIDATES), and a query
searched as words scores its informative words alone and adds the common ones back
(bm25.PRUNE_MIN_ROWS). The third, on files past bm25.PRUNE_EXACT_ROWS whose kept words
match more than PRUNE_SCORED_SHARE of the rows, scores only the rows of the rarest words:
its pages are the full query's when those rows hold them, and a test shows when they do not.
The references here are the queries decisions.md describes, written out in SQL: for FTS5
syntax every row matching it, by decay - bm25, ties by id (``reference``); for a query
searched as words, the rows holding every word first, then the rows holding an informative
word, each by decay - the bm25 of the OR of all the words (``words_reference``).
"""

from __future__ import annotations

import math
import random
import re

import pytest

from agent_memory import query, ranking
from agent_memory.contract.models import Filters
from agent_memory.contract.vocabulary import PINNED_TYPES
from agent_memory.query import bm25
from agent_memory.query import read as read_query
from agent_memory.storage.base import NewMemory
from agent_memory.storage.sqlite import keyword
from tests.support.files import reading
from tests.support.scale_corpus import DAY, WORDS, fill, ids, keyword_page, the_in_443_of_1000

# FTS5's bm25 as the store asks it: a hit in the tags column weighs bm25.TAG_WEIGHT.
BM25 = f"bm25(memories_fts, 1.0, {bm25.TAG_WEIGHT!r})"

# The shortcuts must give the engine's full page: the page's end is tested apart.
pytestmark = pytest.mark.usefixtures("no_cut")


def words_of(text: str) -> list[str]:
    """The words a question is searched as (runs of \\w)."""
    return re.findall(r"\w+", text)


def or_of(words: list[str]) -> str:
    """The rows holding one of the words, as FTS5 syntax."""
    return " OR ".join(f'"{word}"' for word in words)


def and_of(words: list[str]) -> str:
    """The rows holding every word, as FTS5 syntax."""
    return " ".join(f'"{word}"' for word in words)


def reference(raw, match: str, now: int, limit: int) -> list[int]:
    rows = raw.execute(
        f"SELECT m.id, m.type, m.last_accessed, {BM25} FROM memories_fts "
        "JOIN memories m ON m.id = memories_fts.rowid WHERE memories_fts MATCH ?",
        (match,),
    ).fetchall()

    def score(memory_type: str, last: int, bm25: float) -> float:
        pinned = memory_type in PINNED_TYPES
        half = ranking.PINNED_HALF_LIFE_SECS if pinned else ranking.HALF_LIFE_SECS
        return math.exp(-math.log(2) * max(now - last, 0) / half) - bm25

    ranked = sorted(rows, key=lambda r: (-score(r[1], r[2], r[3]), r[0]))
    return [r[0] for r in ranked[:limit]]


def matching(raw, match: str) -> set[int]:
    query = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?"
    return {row[0] for row in raw.execute(query, (match,))}


def informative(raw, words: list[str]) -> list[str]:
    """The informative words (bm25.informative) by the rows holding each, counted in SQL."""
    total = raw.execute("SELECT count(*) FROM memories").fetchone()[0]
    hits = {word: phrase_rows(raw, word) for word in words}
    chosen = bm25.informative(words, total, hits)
    return [word for word in dict.fromkeys(words) if word in chosen]


def words_reference(raw, question: str, now: int, limit: int) -> list[int]:
    """A query searched as words: the rows holding every word first, then the rows holding
    an informative word, each part by decay - bm25 of the OR of every word, ties by id."""
    words = words_of(question)
    every = matching(raw, and_of(words))
    some = matching(raw, or_of(informative(raw, words)))
    ranked = reference(raw, or_of(words), now, 10**9)
    first = [i for i in ranked if i in every]
    return (first + [i for i in ranked if i in some - every])[:limit]


@pytest.fixture
def small_candidates(monkeypatch):
    """A candidate window small enough that 300 rows run past it."""
    monkeypatch.setattr(keyword, "KEYWORD_CANDIDATES", 40)


@pytest.mark.parametrize("repeats", [False, True], ids=["varied", "near-ties"])
@pytest.mark.parametrize("limit", [1, 5, 50, 200])
@pytest.mark.parametrize("query", ["sqlite", "cache OR kafka", "retry schema", "the"])
def test_blended_candidates_give_the_full_querys_page(
    service, clock, raw, small_candidates, query, limit, repeats
):
    # "near-ties": identical texts, so bm25 cannot separate rows and decay decides,
    # which forces the walk past the first chunks and, often, back to the full query.
    fill(service, clock, 300, repeats=repeats)
    clock.advance(DAY)
    if query == "retry schema":  # plain words: searched as words
        expected = words_reference(raw, query, clock.now, limit)
        assert keyword_page(service, query, limit) == expected
    else:
        expected = reference(raw, query, clock.now, limit)
        assert ids(service.search({"query": query, "limit": limit})["results"]) == expected


def test_filtered_searches_take_the_full_query(service, clock, raw, small_candidates):
    fill(service, clock, 120)
    found = service.search({"query": "sqlite", "type": "ERROR", "limit": 200})["results"]
    assert found and all(memory["type"] == "ERROR" for memory in found)
    every = raw.execute(
        "SELECT count(*) FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid "
        "WHERE memories_fts MATCH 'sqlite' AND m.type = 'ERROR'"
    ).fetchone()[0]
    assert len(found) == every


@pytest.fixture
def pruning(monkeypatch):
    """Pruning from the first row on, and a record of every MATCH the search runs."""
    monkeypatch.setattr(bm25, "PRUNE_MIN_ROWS", 1)
    seen: list[str] = []
    original = keyword.Run.__call__

    def spy(self, match, n, within):
        seen.append(match)
        return original(self, match, n, within)

    monkeypatch.setattr(keyword.Run, "__call__", spy)
    return seen


@pytest.mark.parametrize("limit", [1, 3, 10])
@pytest.mark.parametrize(
    "question", ["what is the sqlite cache?", "the kafka retry, again?", "which docker-oauth?"]
)
def test_common_words_are_left_out_when_the_rest_decide(
    service, clock, raw, pruning, question, limit
):
    fill(service, clock, 300)
    clock.advance(DAY)
    expected = words_reference(raw, question, clock.now, limit)
    assert keyword_page(service, question, limit) == expected
    # The informative words alone (not "the", in every row) decided the page.
    kept = informative(raw, words_of(question))
    assert "the" not in kept and pruning[-1] == or_of(kept)


def test_rows_holding_only_common_words_do_not_fill_the_page(service, clock, raw, pruning):
    fill(service, clock, 300)
    zebra = service.store({"content": "one zebra", "type": "TODO"})["id"]
    clock.advance(DAY)
    # One row has "zebra"; the 300 rows that hold only "the" are not matched.
    expected = words_reference(raw, "the zebra?", clock.now, 5)
    assert expected == [zebra]
    assert ids(service.search({"query": "the zebra?", "limit": 5})["results"]) == expected
    assert pruning[-1] == '"zebra"'


def test_a_fresh_row_of_common_words_only_is_not_matched(service, clock, raw, pruning):
    # "rare" is in 24 of 60 rows (IDF 0.4), "the" in all and "kafka" in none: the one
    # informative word occurs nowhere, so the rarest that occurs is kept too. The
    # just-used rows holding only "the" (decay 1) would outscore the long-unused "rare"
    # rows in the OR of the words, but are not matched.
    for i in range(24):
        service.store({"content": f"the rare note {i}", "type": "TODO"})
        clock.advance(30 * DAY)
    for i in range(36):
        service.store({"content": f"the other thing {i}", "type": "TODO"})
    assert reference(raw, '"the" OR "rare"', clock.now, 1)[0] not in matching(raw, '"rare"')
    expected = words_reference(raw, "the rare kafka?", clock.now, 10)
    found = service.search({"query": "the rare kafka?", "limit": 10})["results"]
    assert ids(found) == expected and len(found) == 10
    assert all("rare" in memory["content"] for memory in found)
    assert pruning[-1] == '"rare" OR "kafka"'


def test_few_rows_score_every_word_in_one_query(service, clock, raw, monkeypatch):
    calls: list[tuple[str, str | None]] = []
    original = keyword.Run.__call__
    monkeypatch.setattr(
        keyword.Run,
        "__call__",
        lambda self, match, n, within: (
            calls.append((match, within)) or original(self, match, n, within)
        ),
    )
    fill(service, clock, 50)
    question = "the sqlite cache zebra?"  # no row holds every word
    expected = words_reference(raw, question, clock.now, 10)
    assert keyword_page(service, question, 10) == expected
    kept = informative(raw, words_of(question))
    assert "the" not in kept
    # Below PRUNE_MIN_ROWS: the OR of every word, over the rows of the informative ones.
    assert calls[-1] == ('"the" OR "sqlite" OR "cache" OR "zebra"', or_of(kept))


@pytest.mark.parametrize(("rows", "hits"), [(100, 0), (100, 50), (100, 51), (100, 100), (7, 3)])
def test_idf_is_fts5s(rows, hits):
    expected = math.log((rows - hits + 0.5) / (hits + 0.5))
    assert bm25.idf(rows, hits) == (expected if expected > 0 else 1e-6)


def test_a_count_above_the_rows_of_an_older_snapshot_is_held_to_them():
    # Another thread's newer count against this thread's older row count (soak finding).
    assert bm25.idf(100, 150) == bm25.idf(100, 100) == 1e-6


def test_word_rows_count_rows_and_cache_them(service, clock, raw, db_path, monkeypatch):
    monkeypatch.setattr(bm25, "PRUNE_MIN_ROWS", 1)
    fill(service, clock, 40)
    index = keyword.KeywordIndex()
    with reading(db_path) as conn:
        rows, hits = index.word_rows(conn, ["the", "sqlite", "absent"], clock.now)
    assert rows == 40
    assert hits["the"] == 40 and hits["absent"] == 0
    assert hits["sqlite"] == phrase_rows(raw, "sqlite") > 0
    service.store({"content": "absent no more", "type": "TODO"})  # 41 rows: under the drift?
    with reading(db_path) as conn:
        assert index.word_rows(conn, ["absent"], clock.now)[1]["absent"] == 1
    # 1/40 rows is more than FREQUENCY_CACHE_DRIFT: counted again


def phrase_rows(raw, word: str) -> int:
    query = "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?"
    return raw.execute(query, (f'"{word}"',)).fetchone()[0]


def test_a_row_the_left_out_words_lift_past_the_page_is_not_missed(service, clock, raw, pruning):
    # "the" in 443 of 1,002 rows: IDF about 0.23, so it is left out of the rows scored
    # ("kafka", in no row, keeps any row from holding every word). A and B tie on "vec"
    # alone; B's four "the" put it first in the full query, and the page of one must be
    # B: a pruned page is only taken when its last row leads by more than the left-out
    # words could add.
    the_in_443_of_1000(service)
    a = service.store({"content": "vec alpha beta gamma delta", "type": "TODO"})["id"]
    b = service.store({"content": "vec the the the the", "type": "TODO"})["id"]
    expected = words_reference(raw, "vec the kafka?", clock.now, 1)
    assert expected == [b] and a != b
    assert ids(service.search({"query": "vec the kafka?", "limit": 1})["results"]) == expected
    # The informative words alone ran; their tie was settled by adding "the" back to
    # their best rows, not by the full query.
    assert '"vec" OR "kafka"' in pruning and '"vec" OR "the" OR "kafka"' not in pruning


def test_a_pruned_page_is_in_the_full_querys_order(service, clock, raw, pruning):
    # A and B tie on "vec" (same length, same age); only B's "the" puts it first.
    the_in_443_of_1000(service)
    a = service.store({"content": "vec alpha beta gamma", "type": "TODO"})["id"]
    b = service.store({"content": "vec the the the", "type": "TODO"})["id"]
    expected = words_reference(raw, "vec the kafka?", clock.now, 2)
    assert expected == [b, a]
    assert ids(service.search({"query": "vec the kafka?", "limit": 2})["results"]) == expected
    assert pruning[-1] == '"vec" OR "kafka"'


def test_a_tie_the_best_rows_cannot_settle_takes_the_full_query(
    service, clock, raw, pruning, monkeypatch
):
    monkeypatch.setattr(keyword, "PRUNE_RESCORE_ROWS", 0)
    the_in_443_of_1000(service)
    service.store({"content": "vec alpha beta gamma delta", "type": "TODO"})
    service.store({"content": "vec the the the the", "type": "TODO"})
    expected = words_reference(raw, "vec the kafka?", clock.now, 1)
    assert ids(service.search({"query": "vec the kafka?", "limit": 1})["results"]) == expected
    assert pruning[-1] == '"vec" OR "the" OR "kafka"'


@pytest.mark.parametrize("word", ["the", "sqlite", "note", "x", "absent"])
def test_term_scores_are_what_bm25_gives_the_word(service, clock, raw, word, db_path, monkeypatch):
    monkeypatch.setattr(bm25, "PRUNE_MIN_ROWS", 1)
    fill(service, clock, 120)
    service.store({"content": "sqlite sqlite sqlite x x the", "type": "TODO"})
    all_ids = [row[0] for row in raw.execute("SELECT id FROM memories")]
    with reading(db_path) as conn:
        rows, hits = keyword.KeywordIndex().word_rows(conn, [word], clock.now)
        got = keyword.term_scores(conn, all_ids, {word: bm25.idf(rows, hits[word])})
    expected = dict.fromkeys(all_ids, 0.0)
    expected.update(
        raw.execute(
            f"SELECT rowid, -{BM25} FROM memories_fts WHERE memories_fts MATCH ?",
            (f'"{word}"',),
        ).fetchall()
    )
    assert got.keys() == expected.keys()
    assert all(math.isclose(got[i], expected[i], rel_tol=1e-12) for i in all_ids)
    assert any(got.values()) == (word != "absent")


def test_term_scores_of_no_rows_or_no_words_are_empty(service, clock, db_path):
    fill(service, clock, 3)
    with reading(db_path) as conn:
        assert keyword.term_scores(conn, [], {"the": 1.0}) == {}
        assert keyword.term_scores(conn, [1, 2], {}) == {1: 0.0, 2: 0.0}


@pytest.fixture
def scored(monkeypatch):
    """The rarest words' restriction from 100 rows on, with at most a sixth of the rows
    scored, and each search's (match, within)."""
    monkeypatch.setattr(bm25, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(bm25, "PRUNE_EXACT_ROWS", 100)
    monkeypatch.setattr(bm25, "PRUNE_SCORED_SHARE", 1 / 6)
    seen: list[tuple[str, str | None]] = []
    original = keyword.Run.__call__

    def spy(self, match, n, within):
        seen.append((match, within))
        return original(self, match, n, within)

    monkeypatch.setattr(keyword.Run, "__call__", spy)
    return seen


def zebras(service, clock, count: int) -> list[int]:
    """300 rows of fill(), then ``count`` rows with the rare word "zebra"."""
    fill(service, clock, 300, tagged=False)  # the word counts these tests were built on
    made = [service.store({"content": "zebra sqlite 0", "type": "TODO"})["id"]]
    made += [
        service.store({"content": f"zebra {i}", "type": "TODO"})["id"] for i in range(1, count)
    ]
    clock.advance(DAY)
    return made


@pytest.mark.parametrize(
    ("hits", "expected"),
    [
        ({"a": 10, "b": 20}, None),  # 30 rows: every row is scored
        ({"a": 10, "b": 45}, ["a"]),
        ({"a": 10, "b": 30, "c": 45}, ["a", "b"]),
        ({"a": 60, "b": 70}, ["a"]),  # the rarest word, whatever its rows
        ({"a": 0, "b": 60, "c": 70}, ["a", "b"]),  # with the words no row has
        ({"a": 0, "b": 60}, None),  # that would be every word: no restriction
        ({"b": 10, "a": 10, "c": 60}, ["a", "b"]),  # ties by the word
    ],
)
def test_the_rarest_words_that_fit_the_scored_rows(hits, expected):
    assert bm25.rarest(list(hits), hits, 50) == expected


def test_only_rows_matching_within_are_scored_with_every_word(service, clock, raw, db_path):
    fill(service, clock, 120)
    match, within = '"sqlite" OR "cache" OR "note"', '"sqlite"'
    full = dict(
        raw.execute(
            f"SELECT rowid, -{BM25} FROM memories_fts WHERE memories_fts MATCH ?",
            (match,),
        ).fetchall()
    )
    sqlite_rows = {
        r[0]
        for r in raw.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (within,))
    }
    todo = {
        i
        for i in sqlite_rows
        if raw.execute("SELECT type FROM memories WHERE id = ?", (i,)).fetchone()[0] == "TODO"
    }
    with reading(db_path) as conn:

        def run(page: bool, filters: Filters = Filters()) -> list:  # noqa: B008 (frozen)
            return keyword.Run(conn, now=clock.now, filters=filters, page=page)(match, 200, within)

        ranked = run(page=False)
        assert {i for i, _ in ranked} == sqlite_rows and len(sqlite_rows) < len(full)
        assert all(score == full[i] for i, score in ranked)  # bm25 over every word of match
        assert {m["id"] for m, _ in run(page=True)} == sqlite_rows
        assert {i for i, _ in run(page=False, filters=Filters(memory_type="TODO"))} == todo
        assert {m["id"] for m, _ in run(page=True, filters=Filters(memory_type="TODO"))} == todo


def test_many_matches_score_only_the_rows_of_the_rarest_words(service, clock, raw, scored):
    made = zebras(service, clock, 3)
    question = "the zebra sqlite cache?"
    expected = words_reference(raw, question, clock.now, 3)
    assert sorted(expected) == sorted(made) and expected[0] == made[0]  # "sqlite" counts too
    assert ids(service.search({"query": question, "limit": 3})["results"]) == expected
    assert scored[-1] == ('"zebra" OR "sqlite" OR "cache"', '"zebra"')


def test_rows_of_the_rarest_words_that_cannot_fill_the_page_score_every_row(
    service, clock, raw, scored
):
    zebras(service, clock, 3)
    question = "the zebra sqlite cache?"
    expected = words_reference(raw, question, clock.now, 5)
    assert ids(service.search({"query": question, "limit": 5})["results"]) == expected
    assert scored[-2:] == [
        ('"zebra" OR "sqlite" OR "cache"', '"zebra"'),
        ('"zebra" OR "sqlite" OR "cache"', None),
    ]


def test_past_the_scored_rows_a_row_without_the_rarest_words_is_not_ranked(
    service, clock, raw, scored
):
    # The price of the restriction, as documented: a fresh, short row with two of the
    # commoner words outscores an old, long row with the rare one in the full query, but
    # only rows with "zebra" are scored.
    fill(service, clock, 300, tagged=False)
    old = service.store({"content": "zebra " + "filler " * 40, "type": "TODO"})["id"]
    clock.advance(400 * DAY)
    fresh = service.store({"content": "sqlite cache", "type": "TODO"})["id"]
    question = "the zebra sqlite cache?"
    assert words_reference(raw, question, clock.now, 1) == [fresh]
    assert ids(service.search({"query": question, "limit": 1})["results"]) == [old]
    bm25.PRUNE_SCORED_SHARE = 1.0  # (monkeypatched: restored after the test)
    assert ids(service.search({"query": question, "limit": 1})["results"]) == [fresh]


def test_the_hybrid_keyword_leg_is_restricted_too(service, clock, scored, db_path):
    made = zebras(service, clock, 3)
    with reading(db_path) as conn:
        index = keyword.KeywordIndex()
        found, _ = index.leg(
            conn, read_query("the zebra sqlite cache?"), now=clock.now, limit=3, filters=Filters()
        )
    assert sorted(i for i, _ in found) == sorted(made)
    assert scored[-1] == ('"zebra" OR "sqlite" OR "cache"', '"zebra"')


def test_up_to_the_scored_rows_every_row_is_scored(service, clock, scored, monkeypatch):
    monkeypatch.setattr(bm25, "PRUNE_EXACT_ROWS", 303)  # the rows zebras() makes
    zebras(service, clock, 3)
    service.search({"query": "the zebra sqlite cache?", "limit": 3})
    assert all(within is None for _, within in scored)


@pytest.mark.parametrize(
    ("question", "last"),
    [
        ("the note?", '"the" "note"'),  # every row holds both: they fill the page
        ("the note kafkaesque?", '"the" OR "note" OR "kafkaesque"'),
    ],
)
def test_a_question_of_common_words_only_takes_the_full_query(
    service, clock, raw, pruning, question, last
):
    # "the" and "note" are in every row and "kafkaesque" in none: the rarest words that
    # occur count as informative, so a question is never emptied, and with no word left
    # out of the rows scored the page is the full query's.
    fill(service, clock, 300, tagged=False)
    clock.advance(DAY)
    expected = words_reference(raw, question, clock.now, 5)
    assert ids(service.search({"query": question, "limit": 5})["results"]) == expected
    assert len(expected) == 5 and pruning[-1] == last


def test_the_candidates_of_a_restricted_search_are_the_rarest_words_rows(
    service, clock, raw, scored, small_candidates
):
    # 40 candidates, 60 rows with "zebra": the restricted page comes through the ranking
    # in the index (keyword.Run._candidates_page), from rows with "zebra" only, although a
    # fresh short row without it tops the full query.
    made = zebras(service, clock, 60)
    fresh = service.store({"content": "sqlite cache", "type": "TODO"})["id"]
    question = "the zebra sqlite cache?"
    full = words_reference(raw, question, clock.now, 400)
    assert full[0] == fresh
    expected = [i for i in full if i in set(made)][:10]
    assert ids(service.search({"query": question, "limit": 10})["results"]) == expected
    assert scored[-1] == ('"zebra" OR "sqlite" OR "cache"', '"zebra"')


def test_a_restricted_question_without_common_words_is_one_query(service, clock, raw, scored):
    made = zebras(service, clock, 3)
    question = "zebra sqlite cache?"  # no word in most rows: nothing is left out
    expected = words_reference(raw, question, clock.now, 3)
    assert sorted(expected) == sorted(made)
    scored.clear()  # (each store's near-duplicate check ran keyword queries too)
    assert ids(service.search({"query": question, "limit": 3})["results"]) == expected
    assert scored[-1] == ('"zebra" OR "sqlite" OR "cache"', '"zebra"')
    # The rows holding every word, then the restricted one; the text, which FTS5 refuses (the
    # parser tells), is not sent to FTS5.
    assert len(scored) == 2 and scored[0] == ('"zebra" "sqlite" "cache"', None)


def test_a_nul_in_content_leaves_the_pruned_page_the_full_querys(service, clock, raw):
    # Issue 18: past PRUNE_MIN_ROWS, "common" (in 45% of rows) is left out and added back
    # by term_scores; SQL length() stopped at the NUL, so the row after it seemed to hold
    # "common" many times and the shortcut's page (2102) differed from the full query's.
    with service.db.bulk():
        for i in range(bm25.PRUNE_MIN_ROWS + 100):
            word = "common" if i % 20 < 9 else "other"
            service.store({"content": f"{word} filler{i}", "type": "TODO"})
    plain = service.store({"content": "zebra common common f1", "type": "TODO"})["id"]
    # A NUL is refused now, but a file written before may hold one.
    nul = service.db.insert(
        NewMemory("TODO", "zebra\x00 common f1 f2", [], None, None, clock.now, None), None
    )
    expected = reference(raw, '"zebra" OR "common"', clock.now, 1)
    assert expected == [plain] and nul == plain + 1
    assert ids(service.search({"query": "zebra OR common", "limit": 1})["results"]) == expected
    assert ids(service.search({"query": "zebra common?", "limit": 1})["results"]) == expected


def test_a_left_out_cjk_word_takes_no_shortcut(service, clock, raw, pruning):
    """A common word of a script written without spaces is a phrase of bigrams whose
    occurrences overlap ("哈哈哈" twice in "哈哈哈哈"): highlight() would count it once, so it
    is not added back by term_scores; the page is the full query's."""
    rng = random.Random(3)
    for i in range(60):
        laugh = "哈哈哈哈" if i % 2 else "哈哈哈"
        service.store({"content": f"{laugh} {rng.choice(WORDS)} {i}", "type": "TODO"})
        clock.advance(rng.randint(0, 5 * DAY))
    question = "哈哈哈 kafka retry"
    assert bm25.plan(["哈哈哈", "kafka"], 3000, {"哈哈哈": 3000, "kafka": 1}).shortcut is False
    words = words_of(question)
    every = matching(raw, query.indexed_match(and_of(words)))
    ranked = reference(raw, query.indexed_match(or_of(words)), clock.now, 10**9)
    some = matching(raw, or_of(["kafka", "retry"]))
    expected = ([i for i in ranked if i in every] + [i for i in ranked if i in some - every])[:10]
    assert ids(service.search({"query": question, "limit": 10})["results"]) == expected


def traced_search(service, args: dict) -> tuple[list, list[str]]:
    """The results of one search, and the statements SQLite ran for it (sub-statements of
    virtual tables, which start with "--", left out)."""
    from sqlalchemy import event

    traced: list[str] = []
    engine = service.db.database.engine

    def on_checkout(dbapi_conn, _record, _proxy):
        dbapi_conn.set_trace_callback(traced.append)

    def on_checkin(dbapi_conn, _record):
        dbapi_conn.set_trace_callback(None)

    event.listen(engine, "checkout", on_checkout)
    event.listen(engine, "checkin", on_checkin)
    try:
        found = service.search(args, record_use=False)["results"]
    finally:
        event.remove(engine, "checkout", on_checkout)
        event.remove(engine, "checkin", on_checkin)
    return found, [s for s in traced if not s.startswith("--")]


def test_a_search_probes_nothing_and_reads_the_averages_once(service, clock, monkeypatch):
    """Through the retry, the pruning and its added-back words: no MATCH is run only to see
    whether FTS5 parses it, and FTS5's averages record (the row count) is read once."""
    monkeypatch.setattr(bm25, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(bm25, "PRUNE_EXACT_ROWS", 10)
    for i in range(60):
        service.store(
            {"content": f"the note {i} about {'zebra' if i < 3 else 'sqlite'}", "type": "TODO"}
        )
    found, statements = traced_search(service, {"query": "the zebra sqlite note?", "limit": 3})
    assert len(found) == 3
    assert sum("FROM memories_fts_data WHERE id = 1" in s for s in statements) == 1
    probes = [s for s in statements if "MATCH" in s and s.rstrip().endswith("LIMIT 1")]
    assert probes == []


def test_fts5_refusing_what_the_parser_read_searches_the_words(service, monkeypatch, caplog):
    """Should FTS5 refuse a MATCH the parser accepted, the refusal of the search's own
    statement (no probe) sends it to its words, as the probe did."""
    service.store({"content": "the zebra crossing", "type": "TODO"})
    service.store({"content": "a sqlite note", "type": "TODO"})
    monkeypatch.setattr(keyword, "match_text", lambda parsed: f"{parsed.text} AND")
    found = service.search({"query": "zebra OR nothing", "limit": 5})["results"]
    assert [m["content"] for m in found] == ["the zebra crossing"]
    assert "FTS5 refuses" in caplog.text
