"""What the service relies on from any Embedder, written once and run against every
provider (a real HTTP server speaking Ollama's API today)."""

from __future__ import annotations

import logging

import pytest

from agent_memory.embedders.base import MODEL_MISSING, READY, UNREACHABLE
from agent_memory.embedders.local import Local, LocalModel
from tests.support.fake_ollama import FakeOllama, embedder_for
from tests.support.spawned import NO_OLLAMA_URL


@pytest.fixture(params=["ollama", "local"])
def provider(request):
    """(a working embedder, one whose provider is not there)."""
    if request.param == "local":
        absent = LocalModel(check=lambda: "this CPU lacks AVX2 (injected)")
        yield Local(), Local(absent)
        return
    with FakeOllama() as fake:
        yield embedder_for(fake.url), embedder_for(NO_OLLAMA_URL)


def test_documents_get_one_vector_each_of_the_pinned_kind(provider):
    embedder, _ = provider
    made = embedder.embed_documents(["first text", "second text", "first text"])
    assert len(made) == 3
    assert made[0] == made[2] and made[0] != made[1]
    assert {e.pin for e in made} == {embedder.pin}
    assert embedder.serves(embedder.pin)
    assert embedder.pin.dimension == len(made[0].values())
    assert (embedder.pin.provider, embedder.pin.model) == (embedder.provider, embedder.model)


def test_a_query_is_embedded_as_a_query_and_kept(provider):
    embedder, _ = provider
    query = embedder.embed_query("what did we pick?")
    assert query.pin == embedder.pin
    assert embedder.embed_query("what did we pick?") is query  # the cached vector
    assert embedder.embed_documents([]) == []


def test_status_and_what_to_do(provider):
    embedder, missing = provider
    assert embedder.status() == READY
    assert missing.status() in (UNREACHABLE, MODEL_MISSING)
    assert missing.advice(missing.status()) and missing.describe() and missing.reembed_command()


def test_a_provider_that_is_not_there_gives_none_and_says_so_once(provider, caplog):
    _, missing = provider
    with caplog.at_level(logging.WARNING):
        assert missing.embed_documents(["x"]) is None
        assert missing.embed_query("x") is None
        assert missing.embed_documents(["y"], probe=True) is None
    assert len([r for r in caplog.records if "cannot embed" in r.getMessage()]) == 1
