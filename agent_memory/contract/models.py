"""The value types every layer shares, free of any engine: what a store, an embedder and the
service hand each other.

A memory itself travels as a plain JSON-ready dict (the wire shape of the contract: id,
content, type, tags, source, scope, decay_score, created_at, last_accessed, expires_at), so
that no layer converts it twice; the types here are the ones that are not on the wire, and
the shape of a related memory (``related``), which the service and the session brief share.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_memory.contract.vocabulary import INVERSE_KIND, SNIPPET_CHARS

# The embedding providers a database can be pinned to.
OLLAMA = "ollama"
LOCAL = "local"


@dataclass(frozen=True)
class Pin:
    """What a database's vectors were made with; vectors of two pins never mix.

    A pin written before providers existed names no provider: those vectors came from
    Ollama, the only provider then.
    """

    model: str
    dimension: int
    prefixes: str
    provider: str = OLLAMA

    def describe(self) -> str:
        return (
            f"{self.model} ({self.provider}, {self.dimension} dimensions, {self.prefixes} prefixes)"
        )


@dataclass(frozen=True)
class Embedding:
    """A vector and the pin it belongs to.

    ``vector`` is float32, little-endian: the one compact form every store and index reads
    (sqlite-vec, numpy.frombuffer, pgvector), made once by the embedder.
    """

    pin: Pin
    vector: bytes

    @classmethod
    def of(cls, pin: Pin, values: Any) -> Embedding:
        return cls(pin, struct.pack(f"<{len(values)}f", *values))

    def values(self) -> tuple[float, ...]:
        return struct.unpack(f"<{len(self.vector) // 4}f", self.vector)


@dataclass(frozen=True)
class Filters:
    """A search's or a list's filters: type and scope equal, a tag equal to one whole tag,
    ``by`` equal to who stored the memory or who last changed it; ``created_until``: stored
    at or before that time (a search as of then, service.history)."""

    memory_type: str | None = None
    tag: str | None = None
    scope: str | None = None
    by: str | None = None
    created_until: int | None = None

    def __bool__(self) -> bool:
        values = (self.memory_type, self.tag, self.scope, self.by, self.created_until)
        return any(v is not None for v in values)


@dataclass(frozen=True)
class SearchPage:
    """What a store's search found: "hybrid" when the vector ranking took part, else
    "keyword"; ``other_pin`` is the stored pin when the query's embedding did not fit it
    (the search then ran by keyword). ``why`` tells, by id, how each result scored, and
    ``explain`` how the page was made and where it ended (ranking.Fused); ``words``, a
    plain query's words as the relevance weighs them (ranking.relevance.Words), for a caller
    that finds more memories by their words."""

    mode: str
    results: list[dict[str, Any]]
    other_pin: Pin | None = None
    why: Mapping[int, dict[str, Any]] = field(default_factory=dict)
    explain: dict[str, Any] = field(default_factory=dict)
    words: Any = None


@dataclass
class Budget:
    """The characters an answer may spend on memories (``max_chars``). Memories are offered
    best first; each is taken whole when it fits in what is left, and left out (counted in
    ``more``) when it does not, so a long one never stops shorter ones after it. A memory is
    never cut. memory_search and the session brief spend theirs by this one rule."""

    left: int
    more: int = 0

    def take(self, content: str, cost: Callable[[], int]) -> bool:
        """Whether a memory fits; if so, its ``cost()`` characters are spent. No way of
        showing a memory is shorter than its ``content``, so one whose content alone is past
        what is left is refused without being measured."""
        if len(content) > self.left or (spent := cost()) > self.left:
            self.more += 1
            return False
        self.left -= spent
        return True


def json_chars(value: Any) -> int:
    """The characters ``value`` takes as JSON text, non-ASCII written as itself: what a
    memory costs in memory_search's text content, which an agent reads."""
    return len(json.dumps(value, ensure_ascii=False))


@dataclass(frozen=True)
class Noise:
    """How similar the model finds a query to texts it is not about: the mean and spread
    of the query's cosine similarity to them (embedders/calibration.py, ranking.fuse)."""

    mean: float
    std: float
    sample: int

    @classmethod
    def of(cls, similarities: list[float]) -> Noise | None:
        if not similarities:
            return None
        mean = math.fsum(similarities) / len(similarities)
        spread = math.fsum((s - mean) ** 2 for s in similarities) / len(similarities)
        return cls(mean, math.sqrt(spread), len(similarities))


@dataclass(frozen=True)
class WordCounts:
    """What the keyword index says about a plain query's words (ranking.relevance.Words):
    ``rows``, the memories indexed; ``tokens``, their tokens in all (bm25's average length is
    tokens / rows); ``hits``, how many memories hold each word."""

    rows: int
    tokens: int
    hits: dict[str, int]

    @property
    def average_length(self) -> float:
        return self.tokens / self.rows if self.rows else 0.0


def normalised(content: str) -> str:
    """``content`` as exact duplicates are compared: every run of whitespace one space, none
    at either end (decisions, "Content"). Only for comparing: a memory keeps its text."""
    return " ".join(content.split())


def content_hash(content: str) -> int:
    """The 64-bit key under which stores and imports look a memory's content up: of its
    normalised text, so that contents differing only in whitespace share it.

    A stored format: every row written since schema revision 0005 carries it (of the
    normalised text since revision 0011), so changing it needs a revision that
    rewrites them. Equal hashes are only candidates; the caller compares exactly.
    """
    data = normalised(content).encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(data, digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def snippet(content: str) -> str:
    """The first SNIPPET_CHARS characters (code points, not glyphs), with … when cut."""
    return content if len(content) <= SNIPPET_CHARS else content[:SNIPPET_CHARS] + "…"


def related(edge: dict[str, Any]) -> dict[str, Any]:
    """A relation as a memory's ``related`` lists it, read from that memory's side (an edge
    as Store.neighbours gives it)."""
    out = edge["direction"] == "out"
    return {
        "id": edge["id"],
        "kind": edge["kind"] if out else INVERSE_KIND[edge["kind"]],
        "direction": edge["direction"],
        "type": edge["type"],
        "snippet": snippet(edge["content"]),
        "tags": edge["tags"],
    }
