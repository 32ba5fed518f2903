"""Scripts written without spaces (Chinese, Japanese, Korean, ...): a word is found inside a
sentence, by keyword and in hybrid search, on both engines (agent_memory/query/bigrams.py)."""

from __future__ import annotations

from tests.support.cjk import SENTENCES, WORDS
from tests.support.stores import T0, ids, new, record, search, vector

pytest_plugins = ["tests.support.pg_fixtures"]


ABSENT = ["数据仓库", "キャッシュ", "캐시"]


def stored(store, embedded: bool = False) -> dict[str, int]:
    """The sentences, each with a vector of its own (when ``embedded``) that no query shares."""
    out = {}
    for i, (language, content) in enumerate(SENTENCES.items()):
        embedding = vector(*[0.0] * i, 1.0) if embedded else None
        out[language] = store.insert(new(content), embedding)
    return out


def test_a_word_is_found_inside_a_sentence_by_keyword(store):
    made = stored(store)
    for word, language in WORDS:
        page = search(store, word)
        assert (page.mode, ids(page.results)) == ("keyword", [made[language]]), word
    for word in ABSENT:
        assert search(store, word).results == [], word


def test_a_word_is_found_inside_a_sentence_in_hybrid_search(store):
    """Every memory has a vector far from the query's, so the keyword leg must bring the one
    holding the word to the top."""
    made = stored(store, embedded=True)
    for word, language in WORDS:
        page = search(store, word, vector(0, 0, 0, 0, 0, 1.0), limit=1)
        assert (page.mode, ids(page.results)) == ("hybrid", [made[language]]), word


def test_a_single_character_finds_each_word_holding_it(store):
    a = store.insert(new("数据库"), None)
    b = store.insert(new("仓库管理"), None)
    store.insert(new("数据"), None)
    assert sorted(ids(search(store, "库").results)) == [a, b]


def test_latin_words_next_to_cjk_are_words_of_their_own(store):
    made = stored(store)
    assert sorted(ids(search(store, "PostgreSQL").results)) == [made["zh"], made["ja"], made["ko"]]
    assert ids(search(store, "数据库PostgreSQL").results) == [made["zh"]]
    assert ids(search(store, '"PostgreSQL을"').results) == [made["ko"]]


def test_phrases_and_operators_keep_their_meaning(store):
    made = stored(store)
    assert ids(search(store, "数据库 AND 事务").results) == [made["zh"]]
    assert sorted(ids(search(store, "事务 OR 信頼").results)) == [made["zh"], made["ja"]]
    assert ids(search(store, "データベース NOT 信頼").results) == []
    assert ids(search(store, "^我们").results) == [made["zh"]]
    assert ids(search(store, "^数据库").results) == []
    assert ids(search(store, "NEAR(数据库 事务, 8)").results) == [made["zh"]]
    assert ids(search(store, "NEAR(数据库 事务, 3)").results) == []
    # A question FTS5 cannot parse is searched for its words.
    assert ids(search(store, "数据库？ what about 事务?").results) == [made["zh"]]


def test_bm25_ranks_the_closer_match_first(store):
    once = store.insert(new("团队讨论了很久以后决定用数据库保存所有的会话记录和用户资料。"), None)
    twice = store.insert(new("数据库的备份：每天备份数据库。"), None)
    store.insert(new("今天的会议改到明天下午。"), None)
    page = search(store, "数据库")
    assert ids(page.results) == [twice, once]


def test_new_content_changes_the_meaning(store):
    memory_id = store.insert(new("我们选择了数据库"), None)
    store.update(memory_id, {"content": "缓存放在内存里"}, T0, None)
    assert search(store, "数据库").results == []
    assert ids(search(store, "内存").results) == [memory_id]
    store.update(memory_id, {"content": "back to plain words"}, T0, None)
    assert search(store, "内存").results == []
    assert ids(search(store, "plain").results) == [memory_id]


def test_imported_memories_are_found_inside_a_sentence(store):
    store.import_memories([record(SENTENCES["zh"]), record(SENTENCES["ko"])], T0)
    store.after_import()
    assert [m["content"] for m in search(store, "事务").results] == [SENTENCES["zh"]]
    assert [m["content"] for m in search(store, "선택").results] == [SENTENCES["ko"]]


def test_a_plain_question_finds_the_memory_holding_one_of_its_words(store):
    """Plain words, one of them in no memory: the memory holding the other is still found."""
    made = stored(store)
    assert ids(search(store, "数据库 缓存").results) == [made["zh"]]
    assert ids(search(store, "缓存 데이터베이스").results) == [made["ko"]]


def test_a_plain_question_ranks_the_memory_holding_every_word_first(store):
    """The rows holding every word come first, even below another's bm25."""
    often = store.insert(new("数据库：数据库的数据库，数据库。"), None)
    both = store.insert(new(SENTENCES["zh"]), None)
    for i in range(3):
        store.insert(new(f"事务 {i}"), None)
    assert ids(search(store, "数据库 事务").results)[:2] == [both, often]
