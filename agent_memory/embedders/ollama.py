"""The Ollama provider: ``POST /api/embed`` for vectors, ``GET /api/tags`` for status.

The only module that speaks HTTP. ``requests`` is imported on first use: its import is
start-up time that ``serve`` does not need before its first answer.
"""

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING, Any

from agent_memory.contract.models import OLLAMA, Embedding, Pin
from agent_memory.embedders.base import (
    MODEL_MISSING,
    READY,
    RETRY_AFTER_SECS,
    UNREACHABLE,
    Embedder,
    EmbedFailed,
    Provider,
)
from agent_memory.settings import DEFAULT_EMBED_MODEL, DEFAULT_OLLAMA_URL, Settings

if TYPE_CHECKING:
    import requests

CONNECT_TIMEOUT_SECS = 1.0
READ_TIMEOUT_SECS = 10.0
# Task prefixes, by scheme: nomic-embed-text is trained to see them, and vectors made with
# and without them do not compare, so the scheme is part of the model pin.
PREFIX_SCHEMES = {
    "nomic": ("search_document: ", "search_query: "),
    "none": ("", ""),
}
# Dimensions we know before the first answer; any other model's is learned from it.
KNOWN_DIMENSIONS = {"nomic-embed-text": 768}


def prefix_scheme(model: str) -> str:
    return "nomic" if model.startswith("nomic-embed-text") else "none"


def known_dimension(model: str) -> int | None:
    return KNOWN_DIMENSIONS.get(model.split(":")[0])


class Ollama(Embedder):
    provider = OLLAMA
    title = "Ollama"

    def __init__(
        self,
        url: str = DEFAULT_OLLAMA_URL,
        model: str = DEFAULT_EMBED_MODEL,
        *,
        connect_timeout: float = CONNECT_TIMEOUT_SECS,
        read_timeout: float = READ_TIMEOUT_SECS,
        retry_after: float = RETRY_AFTER_SECS,
    ) -> None:
        super().__init__(retry_after=retry_after)
        self.url = url.rstrip("/")
        self.model = model
        self.prefixes = prefix_scheme(model)
        self.dimension = known_dimension(model)
        self._timeout = (connect_timeout, read_timeout)
        self._session: requests.Session | None = None
        self._session_lock = threading.Lock()

    def describe(self) -> str:
        return f"{self.model} at {self.url}"

    def advice(self, status: str) -> str:
        if status == MODEL_MISSING:
            return f"run `ollama pull {self.model}`"
        return f"check that Ollama is running and the model is pulled (ollama pull {self.model})"

    def reembed_command(self) -> str:
        return f"agent-memory --embedder ollama --embed-model {self.model} reembed"

    def _http(self) -> requests.Session:
        """One keep-alive session, made on first use."""
        with self._session_lock:
            if self._session is None:
                import requests

                self._session = requests.Session()
            return self._session

    def status(self) -> str:
        """ready when a pulled model's name starts with ours ("x" matches "x:latest")."""
        import requests

        try:
            response = self._http().get(f"{self.url}/api/tags", timeout=self._timeout)
            response.raise_for_status()
            names = [str(m.get("name", "")) for m in response.json().get("models", [])]
        except (requests.RequestException, ValueError, AttributeError, TypeError):
            return UNREACHABLE
        return READY if any(name.startswith(self.model) for name in names) else MODEL_MISSING

    def _vectors(self, texts: list[str], *, query: bool) -> list[Embedding]:
        import requests

        prefix = PREFIX_SCHEMES[self.prefixes][1 if query else 0]
        try:
            response = self._http().post(
                f"{self.url}/api/embed",
                json={"model": self.model, "input": [prefix + t for t in texts]},
                timeout=self._timeout,
            )
            response.raise_for_status()
            return self._checked(response.json(), len(texts))
        except (requests.RequestException, ValueError) as exc:
            raise EmbedFailed(str(exc)) from exc

    def _checked(self, payload: Any, count: int) -> list[Embedding]:
        """The answer's vectors, if there is one per input and all have one sane dimension."""
        raw = payload.get("embeddings") if isinstance(payload, dict) else None
        if not isinstance(raw, list) or len(raw) != count:
            got = len(raw) if isinstance(raw, list) else "no"
            raise ValueError(f"expected {count} embeddings, got {got}")
        if not all(_finite_numbers(v) for v in raw):
            raise ValueError("an embedding is not a list of finite numbers")
        dimensions = {len(v) for v in raw}
        if len(dimensions) != 1:
            raise ValueError(f"embeddings of mixed dimensions {sorted(dimensions)}")
        dimension = dimensions.pop()
        expected = known_dimension(self.model)
        if expected is not None and dimension != expected:
            raise ValueError(f"{self.model} should give {expected} dimensions, got {dimension}")
        pin = Pin(self.model, dimension, self.prefixes, OLLAMA)
        return [Embedding.of(pin, v) for v in raw]

    def close(self) -> None:
        if self._session is not None:
            self._session.close()


def _finite_numbers(values: Any) -> bool:
    return (
        isinstance(values, list)
        and bool(values)
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        and all(math.isfinite(v) for v in values)
    )


def _make(settings: Settings, model: str | None) -> Ollama:
    return Ollama(settings.ollama_url, model or settings.embed_model)


def _outlook(settings: Settings, model: str | None) -> str:
    return f"Ollama's {model or settings.embed_model}"


PROVIDER = Provider(OLLAMA, _make, _outlook, auto_rank=10, needs_server=True)
