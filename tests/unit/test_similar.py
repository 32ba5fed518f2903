"""Near-duplicate hints at store time, their parts: the fallback to keywords for an
unmeasured model, bounded one-line snippets, and how many informative words keyword overlap
needs."""

from __future__ import annotations

from agent_memory.embedders.local import MODEL_NAME
from agent_memory.service.hygiene import similar


def test_an_unmeasured_model_falls_back_to_keywords():
    assert similar.model_key(MODEL_NAME) in similar.COSINE_THRESHOLDS
    assert similar.model_key("nomic-embed-text") not in similar.COSINE_THRESHOLDS


def test_snippets_are_one_line_and_bounded():
    assert similar.snippet("a\n  b\tc") == "a b c"
    long = similar.snippet("word " * 100)
    assert len(long) == similar.SNIPPET_CHARS and long.endswith("...")


def test_keyword_overlap_needs_enough_informative_words():
    assert similar.keyword_overlap("the API", "the API") == 0.0  # too few to judge
    assert similar.keyword_overlap("deploy runs migrations first", "migrations first deploy runs")
    assert similar.keyword_overlap("Deploying runs migrations", "deploys run the migration") == 1.0
