"""What the service's helpers (embedding jobs, status, tidy, tokens) use of the service: its
store and embedder, its clock, and the guard that turns a storage fault into the generic
message. A protocol, so that they depend on it rather than on the service they serve."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

from agent_memory.embedders.base import Embedder
from agent_memory.storage.base import Store


class Context(Protocol):
    db: Store
    embedder: Embedder | None
    embedding_off: bool
    redact: bool
    embeddings: Any  # the service's EmbeddingJobs

    def now(self) -> int: ...

    def storage(self, operation: str) -> AbstractContextManager[None]: ...
