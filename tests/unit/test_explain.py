"""explain: true says why each result ranks where it does, over the service, MCP and REST."""

from __future__ import annotations

import pytest

from agent_memory.http.rest import create_app
from tests.support.mcp_session import run
from tests.support.paraphrase_set import PARAPHRASE, fill
from tests.support.rest_client import Client


def test_without_explain_the_answer_is_unchanged(hybrid):
    fill(hybrid)
    answer = hybrid.search({"query": PARAPHRASE})
    assert set(answer) == {"search_mode", "results"}
    assert all("why" not in r for r in answer["results"])


def test_a_hybrid_answer_explains_each_leg_and_where_the_page_ended(hybrid):
    ids = fill(hybrid)
    answer = hybrid.search({"query": "PostgreSQL", "explain": True})  # both legs find it
    first = answer["results"][0]
    assert first["id"] == ids["datastore"]
    why = first["why"]
    assert why["keyword"]["rank"] == 1 and why["keyword"]["bm25"] > 0
    assert why["keyword"]["words"] == ["PostgreSQL"] and why["keyword"]["share"] > 0.5
    assert why["vector"]["rank"] == 1 and why["vector"]["share"] > 0
    assert why["vector"]["sigmas"] > 2  # stands clearly above the unrelated texts
    assert why["score"] == pytest.approx(why["fused"] * why["decay"])
    assert why["reason"].startswith("holds ") and "σ above unrelated text" in why["reason"]
    explain = answer["explain"]
    assert explain["fusion"] == "calibrated" and explain["keyword_trust"] == 1.0
    assert explain["unrelated"]["std"] > 0
    cut = explain["cut"]
    assert cut["candidates"] == 5 and cut["returned"] == len(answer["results"]) == 1
    assert cut["reason"].startswith("1 of 5 candidates kept: a keyword share of at least")


def test_a_keyword_answer_explains_bm25_and_decay(service):
    memory_id = service.store({"content": "sqlite-vec pins the vector", "type": "TODO"})["id"]
    answer = service.search({"query": "sqlite-vec", "explain": True})
    why = answer["results"][0]["why"]
    assert answer["results"][0]["id"] == memory_id
    assert why["vector"] is None and why["keyword"]["rank"] == 1
    # "sqlite" and "vec" are held as they were typed: a phrase's worth on top of bm25
    assert why["keyword"]["together"] == ["sqlite vec"]
    assert why["fused"] > why["keyword"]["bm25"]
    assert why["score"] == pytest.approx(why["decay"] + why["fused"])
    explain = answer["explain"]
    assert explain["score"] == "decay + bm25 + words typed together"
    assert explain["words"]["used"] == ["sqlite", "vec"]  # searched as plain words
    assert explain["words"]["rows"] == {"sqlite": 1, "vec": 1}
    assert explain["cut"]["reason"] == "1 of 1 candidates kept: a keyword share of at least 30%"


def test_a_keyword_answer_names_the_words_a_question_was_searched_as(service):
    service.store({"content": "We picked PostgreSQL for the billing database", "type": "DECISION"})
    answer = service.search({"query": "which database did we pick?", "explain": True})
    assert answer["search_mode"] == "keyword" and answer["results"]
    words = answer["explain"]["words"]
    assert words["used"] == ["which", "database", "did", "we", "pick"]


def test_explain_is_a_flag(service):
    with pytest.raises(Exception, match="explain"):
        service.search({"query": "x", "explain": "yes"})


def test_mcp_search_takes_explain_and_its_output_schema_holds(hybrid):
    fill(hybrid)
    (found,) = run(hybrid, ("memory_search", {"query": PARAPHRASE, "explain": True}))
    assert not found.is_error
    assert "why" in found.structured_content["results"][0]
    assert found.structured_content["explain"]["fusion"] == "calibrated"


def test_rest_search_takes_explain(hybrid):
    fill(hybrid)
    client = Client(create_app(hybrid))
    status, answer = client("POST", "/api/search", body={"query": PARAPHRASE, "explain": True})
    assert status == 200 and "why" in answer["results"][0] and "explain" in answer


def test_explain_names_the_words_and_what_each_tells(hybrid):
    fill(hybrid)
    for i in range(12):  # "note" in most memories: it tells little
        hybrid.store({"content": f"note {i} on the rollout", "type": "TODO"})
    words = hybrid.search({"query": "PostgreSQL note", "explain": True})["explain"]["words"]
    assert words["used"] == ["PostgreSQL", "note"]
    assert words["rows"] == {"PostgreSQL": 1, "note": 12}
    assert words["information"]["PostgreSQL"] > 4 * words["information"]["note"] > 0
    assert words["together"] == ["PostgreSQL note"]


def test_an_unknown_field_next_to_explain_is_refused(service):
    with pytest.raises(Exception, match="explian"):
        service.search({"query": "x", "explain": True, "explian": True})
