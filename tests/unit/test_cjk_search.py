"""Scripts written without spaces (Chinese, Japanese, Korean, ...) in process: how a run is
indexed as overlapping bigrams (agent_memory/query/bigrams.py), and the service finding a
word inside a sentence with the model and without. tests/engines/test_cjk_search.py holds the
searches on both engines."""

from __future__ import annotations

from agent_memory import query
from tests.support.cjk import SENTENCES, WORDS


def test_the_service_finds_a_cjk_word_with_the_model_and_without(hybrid, service):
    """The same file, searched through the fake Ollama (hybrid) and without an embedder."""
    made = {
        lang: hybrid.store({"content": text, "type": "DECISION"})["id"]
        for lang, text in SENTENCES.items()
    }
    for svc, mode in ((hybrid, "hybrid"), (service, "keyword")):
        for word, language in WORDS:
            answer = svc.search({"query": word, "limit": 1})
            found = (answer["search_mode"], [r["id"] for r in answer["results"]])
            assert found == (mode, [made[language]]), word


def test_latin_text_is_indexed_as_it_is():
    assert query.indexed_text(SENTENCES["en"]) is None
    assert query.indexed_match("kafka OR redis*") == "kafka OR redis*"


def test_runs_are_indexed_as_overlapping_bigrams():
    assert query.indexed_text("选数据库v2。") == " 选数 数据 据库 库 v2。"
    assert query.indexed_match("数据库") == '"数据" + "据库"'
    assert query.indexed_match("库") == '"库" *'
    # Followed in its phrase, a run ends there: its last character is a token of its own.
    assert query.indexed_match('"数据 库"') == '"数据" + "据" + "库" *'
    assert query.indexed_match("v2数据") == '"v2" + "数据"'
