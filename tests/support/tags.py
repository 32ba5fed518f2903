"""Rows and a search for the tag tests that speak to the Store directly."""

from __future__ import annotations

from agent_memory.contract.models import Embedding, Filters
from agent_memory.query import read as read_query
from agent_memory.storage.base import NewMemory

T0 = 1_767_225_600


def new(content: str, tags: list[str]) -> NewMemory:
    return NewMemory("DECISION", content, tags, None, None, T0, None)


def found(store, text: str, embedding: Embedding | None = None) -> list[int]:
    page = store.search(read_query(text), embedding, now=T0, limit=10, filters=Filters())
    assert page.mode == ("hybrid" if embedding is not None else "keyword")
    return [m["id"] for m in page.results]
