"""The Ollama client: is an embedding model there, and (soon) texts to vectors.

It never raises into a caller: a failure is a status, so a store or a search goes on
without embeddings. No call is made while the database write lock is held.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import requests

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECS = 1.0
READ_TIMEOUT_SECS = 10.0

READY = "ready"
MODEL_MISSING = "model_missing"
UNREACHABLE = "unreachable"


class Embedder:
    def __init__(self, url: str, model: str) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self._session: requests.Session | None = None

    def _http(self) -> requests.Session:
        """One keep-alive session, made on first use: importing requests costs ~0.1 s of
        start-up that ``serve`` does not need before its first answer."""
        if self._session is None:
            import requests

            self._session = requests.Session()
        return self._session

    def status(self) -> str:
        """ready when a pulled model's name starts with ours ("x" matches "x:latest")."""
        import requests

        try:
            response = self._http().get(
                f"{self.url}/api/tags", timeout=(CONNECT_TIMEOUT_SECS, READ_TIMEOUT_SECS)
            )
            response.raise_for_status()
            names = [str(m.get("name", "")) for m in response.json().get("models", [])]
        except (requests.RequestException, ValueError, AttributeError, TypeError) as exc:
            log.debug("Ollama at %s is unreachable: %s", self.url, exc)
            return UNREACHABLE
        return READY if any(name.startswith(self.model) for name in names) else MODEL_MISSING

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
