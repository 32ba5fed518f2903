"""The Ollama client: texts to vectors, and whether an embedding model is there at all.

It never raises into a caller: a failure is ``None`` (or a status), so a store or a search
goes on without embeddings. The service calls it before it takes the database write lock,
never while holding it.

When Ollama fails, it is left alone for RETRY_AFTER_SECS: stores and searches in that
window do not each wait for a timeout, they go on keyword-only at once. The sweep's
backfill asks anyway (``probe=True``), so embeddings come back within one sweep interval
of Ollama coming back.
"""

from __future__ import annotations

import logging
import math
import struct
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import requests

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECS = 1.0
READ_TIMEOUT_SECS = 10.0
RETRY_AFTER_SECS = 30.0

READY = "ready"
MODEL_MISSING = "model_missing"
UNREACHABLE = "unreachable"

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


@dataclass(frozen=True)
class Pin:
    """What a database's vectors were made with; vectors of two pins never mix."""

    model: str
    dimension: int
    prefixes: str

    def describe(self) -> str:
        return f"{self.model} ({self.dimension} dimensions, {self.prefixes} prefixes)"


@dataclass(frozen=True)
class Embedding:
    pin: Pin
    vector: bytes  # float32, little-endian: what vec0 takes


def _pack(values: Any) -> bytes | None:
    """A JSON list of finite numbers as float32 bytes; None for anything else."""
    if not isinstance(values, list) or not values:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return None
    if not all(math.isfinite(v) for v in values):
        return None
    return struct.pack(f"<{len(values)}f", *values)


class Embedder:
    def __init__(
        self,
        url: str,
        model: str,
        *,
        connect_timeout: float = CONNECT_TIMEOUT_SECS,
        read_timeout: float = READ_TIMEOUT_SECS,
        retry_after: float = RETRY_AFTER_SECS,
    ) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self.prefixes = prefix_scheme(model)
        self._timeout = (connect_timeout, read_timeout)
        self._retry_after = retry_after
        self._session: requests.Session | None = None
        self._session_lock = threading.Lock()
        self._down_until = 0.0  # monotonic; failures open this window
        self._failing = False  # so that an outage is logged once, not per call

    def _http(self) -> requests.Session:
        """One keep-alive session, made on first use: importing requests costs ~0.1 s of
        start-up that ``serve`` does not need before its first answer."""
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
        except (requests.RequestException, ValueError, AttributeError, TypeError) as exc:
            log.debug("Ollama at %s is unreachable: %s", self.url, exc)
            return UNREACHABLE
        return READY if any(name.startswith(self.model) for name in names) else MODEL_MISSING

    def embed_documents(
        self, texts: Sequence[str], *, probe: bool = False
    ) -> list[Embedding] | None:
        """Vectors for texts to store, in order; None when Ollama cannot give them all."""
        return self._embed([PREFIX_SCHEMES[self.prefixes][0] + t for t in texts], probe)

    def embed_query(self, text: str) -> Embedding | None:
        found = self._embed([PREFIX_SCHEMES[self.prefixes][1] + text], probe=False)
        return found[0] if found else None

    def _embed(self, inputs: list[str], probe: bool) -> list[Embedding] | None:
        if not inputs:
            return []
        if not probe and time.monotonic() < self._down_until:
            return None
        import requests

        try:
            response = self._http().post(
                f"{self.url}/api/embed",
                json={"model": self.model, "input": inputs},
                timeout=self._timeout,
            )
            response.raise_for_status()
            vectors = self._checked(response.json(), len(inputs))
        except (requests.RequestException, ValueError) as exc:
            self._failed(str(exc))
            return None
        if self._failing:
            self._failing = False
            log.info("Ollama at %s answers again: embedding with %s", self.url, self.model)
        self._down_until = 0.0
        return vectors

    def _checked(self, payload: Any, count: int) -> list[Embedding]:
        """The answer's vectors, if there is one per input and all have one sane dimension."""
        raw = payload.get("embeddings") if isinstance(payload, dict) else None
        if not isinstance(raw, list) or len(raw) != count:
            got = len(raw) if isinstance(raw, list) else "no"
            raise ValueError(f"expected {count} embeddings, got {got}")
        packed = [_pack(v) for v in raw]
        if any(p is None for p in packed):
            raise ValueError("an embedding is not a list of finite numbers")
        dimensions = {len(v) for v in raw}
        if len(dimensions) != 1:
            raise ValueError(f"embeddings of mixed dimensions {sorted(dimensions)}")
        dimension = dimensions.pop()
        expected = KNOWN_DIMENSIONS.get(self.model.split(":")[0])
        if expected is not None and dimension != expected:
            raise ValueError(f"{self.model} should give {expected} dimensions, got {dimension}")
        pin = Pin(self.model, dimension, self.prefixes)
        return [Embedding(pin, p) for p in packed if p is not None]

    def _failed(self, detail: str) -> None:
        self._down_until = time.monotonic() + self._retry_after
        if not self._failing:
            self._failing = True
            log.warning(
                "cannot embed with %s at %s (%s): storing without vectors and searching by "
                "keyword; the sweep embeds what is pending once it answers",
                self.model,
                self.url,
                detail,
            )
        else:
            log.debug("embedding still failing: %s", detail)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
