"""Building blocks for tests that speak to the Store protocol directly, on any engine:
rows to insert, toy vectors, and a search with the service's defaults."""

from __future__ import annotations

from agent_memory.contract.models import Embedding, Filters, Pin
from agent_memory.query import read as read_query
from agent_memory.storage.base import NewMemory

T0 = 1_767_225_600
DIMENSION = 8  # sqlite-vec's sign bits come in bytes
PIN = Pin("toy", DIMENSION, "none", "ollama")
OTHER = Pin("other", DIMENSION, "none", "ollama")


def new(content: str, memory_type: str = "TODO", *, at: int = T0, **fields) -> NewMemory:
    return NewMemory(
        memory_type,
        content,
        fields.get("tags", []),
        fields.get("source"),
        fields.get("scope"),
        at,
        fields.get("expires_at"),
    )


def vector(*values: float, pin: Pin = PIN) -> Embedding:
    """A vector of the first few components given, the rest 0."""
    return Embedding.of(pin, [*values, *[0.0] * (DIMENSION - len(values))])


def ids(memories) -> list[int]:
    return [m["id"] for m in memories]


def search(
    store,
    query: str,
    embedding: Embedding | None = None,
    *,
    limit=10,
    now=T0,
    floor=None,
    **f,
):
    return store.search(
        read_query(query), embedding, now=now, limit=limit, filters=Filters(**f), floor=floor
    )


def record(content: str, memory_type: str = "TODO", **fields) -> dict:
    return {
        "type": memory_type,
        "content": content,
        "tags": fields.get("tags", []),
        "source": fields.get("source"),
        "scope": None,
        "created_at": T0,
        "access_count": 3,
        "expires_at": fields.get("expires_at"),
    }
