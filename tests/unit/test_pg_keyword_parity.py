"""The documents and queries PostgreSQL's keyword ranking is built from, checked without a
server: FTS5's token count and lexemes, tags apart from the content, what a tsvector cannot
hold, the null tsquery, a column filter's weights."""

from __future__ import annotations

import json

from agent_memory import query
from agent_memory.storage.postgres import document, keyword, tsquery


def test_documents_keep_fts5s_token_count_and_lexemes():
    text, count, tf, tag_tf = keyword.document("Running runs, RAN: the_runner 1e10")
    assert count == 6
    assert json.loads(tf) == {"run": 2, "ran": 1, "the": 1, "runner": 1, "1e10": 1}
    assert text == "'run':1A,2 'ran':3 'the':4 'runner':5 '1e10':6"
    assert json.loads(tag_tf) == {}


def test_documents_put_the_tags_after_the_content_apart_from_it():
    text, count, tf, tag_tf = keyword.document("runs fast", ["Runner", "fast lane"])
    assert count == 5
    # tf: bm25's frequency over both columns, a tag hit weighing TAG_WEIGHT (1.5)
    assert json.loads(tf) == {"run": 1, "fast": 2.5, "runner": 1.5, "lane": 1.5}
    assert json.loads(tag_tf) == {"runner": 1, "fast": 1, "lane": 1}
    tags_at = 2 + document.TAG_GAP + 1
    assert text == (f"'run':1A 'fast':2,{tags_at + 1}C 'runner':{tags_at}B 'lane':{tags_at + 2}C")


def test_documents_count_what_a_tsvector_cannot_hold():
    text, count, tf, _ = keyword.document("word " * 300 + "end")
    assert count == 301
    assert json.loads(tf) == {"word": 300, "end": 1}
    assert text.count(",") == document.MAX_POSITIONS - 1


def test_queries_that_match_nothing_render_as_a_null_tsquery():
    for text in ['""', "-{content tags}:a", 'a AND ""', '"" OR -{tags content}:b', '"" NOT a']:
        assert tsquery.to_tsquery(query.parse(text)) == ("NULL::tsquery", [])
    assert tsquery.to_tsquery(query.parse('a NOT ""'))[1] == ["'a'"]


def test_a_column_filter_asks_its_columns_weights():
    assert tsquery.to_tsquery(query.parse("tags:a"))[1] == ["'a':BC"]
    assert tsquery.to_tsquery(query.parse("-tags:a*"))[1] == ["'a':*AD"]
    assert tsquery.to_tsquery(query.parse("^a"))[1] == ["'a':AB"]
    assert tsquery.to_tsquery(query.parse('tags:^"a b"'))[1] == ["('a':B <-> 'b':BC)"]
