"""The embedder seam: texts in, vectors of one pinned model out, or None; never an exception.

One abstract batch method, as llm's ``EmbeddingModel`` has: a provider implements
``_vectors`` (and may say more of its status and advice); this base turns a failure into
None with one log line, leaves a failing provider alone for a while (so that stores and
searches do not each wait for it), and keeps the vectors of repeated queries. The service
calls an embedder before it takes a store's write lock, never while holding it.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent_memory.contract.models import Embedding, Noise, Pin
from agent_memory.embedders.calibration import UNRELATED
from agent_memory.settings import Settings

log = logging.getLogger(__name__)

# Statuses, as /health states them.
READY = "ready"
MODEL_MISSING = "model_missing"
UNREACHABLE = "unreachable"
# A failing provider is not asked again for this long (the sweep's backfill asks anyway).
RETRY_AFTER_SECS = 30.0
# Query vectors kept, most recently used first: agents repeat their questions.
QUERY_CACHE_SIZE = 256


_SAID = {MODEL_MISSING: "has no model", UNREACHABLE: "unreachable for"}


class EmbedFailed(Exception):
    """The provider could not give a vector for every text; the message says why."""


class Embedder(ABC):
    """What the service needs of an embedding provider.

    ``provider``, ``model`` and ``prefixes`` name what this embedder's vectors would be
    pinned as; ``pin`` is set once it has answered (with the dimension it answered in).
    """

    provider: str
    title: str  # the provider as a person knows it: "Ollama"
    model: str
    prefixes: str
    dimension: int | None = None  # when known before the first answer

    def __init__(self, *, retry_after: float = RETRY_AFTER_SECS) -> None:
        self.pin: Pin | None = None
        self._retry_after = retry_after
        self._down_until = 0.0  # monotonic; a failure opens this window
        self._failing = False  # so that an outage is logged once, not per call
        self._queries: OrderedDict[str, Embedding] = OrderedDict()
        self._queries_lock = threading.Lock()
        self._unrelated: list[Embedding] | None = None

    # -- what a provider implements ---------------------------------------------------------

    @abstractmethod
    def _vectors(self, texts: list[str], *, query: bool) -> list[Embedding]:
        """One vector per text, in order, made with this embedder's pin; EmbedFailed if not."""

    # -- what a provider may say of itself (these defaults fit one that needs no server) ---

    def status(self) -> str:
        """READY, MODEL_MISSING or UNREACHABLE, asked now."""
        return READY

    def describe(self) -> str:
        """Which model, where: for logs and messages."""
        return self.model

    def advice(self, status: str) -> str:
        """What a person can do when the embedder is not READY (a clause, no full stop)."""
        return f"see the log for why {self.describe()} failed"

    def reembed_command(self) -> str:
        """The command that moves a database to this embedder's vectors."""
        return f"agent-memory --embedder {self.provider} reembed"

    def close(self) -> None:  # noqa: B027 - providers with nothing to release keep this
        """Release what the provider holds (a session, a model)."""

    # -- what the service calls -------------------------------------------------------------

    def serves(self, pin: Pin) -> bool:
        """Whether vectors pinned as ``pin`` are this embedder's (any dimension it learns)."""
        return (pin.provider, pin.model, pin.prefixes) == (self.provider, self.model, self.prefixes)

    def embed_documents(
        self, texts: Sequence[str], *, probe: bool = False
    ) -> list[Embedding] | None:
        """Vectors for texts to store, in order; None when they cannot all be made.

        ``probe`` asks even inside the window after a failure (the backfill and reembed do,
        so vectors come back within one sweep of the provider coming back).
        """
        return self._embed(list(texts), query=False, probe=probe)

    def embed_query(self, text: str) -> Embedding | None:
        with self._queries_lock:
            cached = self._queries.get(text)
            if cached is not None:
                self._queries.move_to_end(text)
                return cached
        made = self._embed([text], query=True, probe=False)
        if not made:
            return None
        with self._queries_lock:
            self._queries[text] = made[0]
            while len(self._queries) > QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        return made[0]

    def unrelated(self, embedding: Embedding) -> Noise | None:
        """The query's cosine similarity to texts it is not about (calibration.UNRELATED,
        embedded once): the scale of the model's similarity in a hybrid search. None if they
        cannot be embedded with the query's model."""
        passages = self._unrelated
        if passages is None or passages[0].pin != embedding.pin:
            try:  # not through _embed: a failure here leaves searching by meaning on
                passages = self._vectors(list(UNRELATED), query=False)
            except EmbedFailed as exc:
                log.warning("no unrelated texts to measure meaning against for now: %s", exc)
                return None
            if not passages or passages[0].pin != embedding.pin:
                return None
            self._unrelated = passages
        import numpy as np  # here, not at start-up (agent-memory serve starts without it)

        matrix = np.frombuffer(b"".join(p.vector for p in passages), dtype="<f4")
        matrix = matrix.reshape(len(passages), -1)
        query = np.frombuffer(embedding.vector, dtype="<f4")
        norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
        return Noise.of((matrix @ query / np.maximum(norms, 1e-12)).tolist())

    def _embed(self, texts: list[str], *, query: bool, probe: bool) -> list[Embedding] | None:
        if not texts:
            return []
        if not probe and time.monotonic() < self._down_until:
            return None
        try:
            made = self._vectors(texts, query=query)
        except EmbedFailed as exc:
            self._failed(str(exc))
            return None
        if self._failing:
            self._failing = False
            log.info("%s answers again: embedding", self.describe())
        self._down_until = 0.0
        if made and self.pin != made[0].pin:
            self.pin = made[0].pin
            with self._queries_lock:
                self._queries.clear()
        return made

    def _failed(self, detail: str) -> None:
        self._down_until = time.monotonic() + self._retry_after
        if not self._failing:
            self._failing = True
            log.warning(
                "cannot embed with %s (%s): storing without vectors and searching by keyword; "
                "the sweep embeds what is pending once it answers",
                self.describe(),
                detail,
            )
        else:
            log.debug("embedding still failing: %s", detail)

    def report(self) -> str:
        """Log, once at start, whether searches can be hybrid and what to do if not."""
        status = self.status()
        if status == READY:
            log.info("embedder ready: %s; searches are hybrid", self.describe())
        else:
            log.warning(
                "%s %s %s: searches are keyword-only (%s)",
                self.title,
                _SAID.get(status, status),
                self.describe(),
                self.advice(status),
            )
        return status


@dataclass(frozen=True)
class Provider:
    """How ``--embedder NAME`` makes an embedder, and how ``auto`` weighs it.

    ``make(settings, model)``: the embedder of ``model`` (a pinned database's), or of the
    configured one when None. ``blocked()``: why it cannot run on this machine, or None;
    cheap (no network, no model loaded). ``auto_rank``: ``auto`` asks the lower first and
    takes the first that is ready. ``outlook(settings, model)``: how searches run with it,
    a phrase for an agent ("the local model ... (in process)").
    """

    name: str
    make: Callable[[Settings, str | None], Embedder]
    outlook: Callable[[Settings, str | None], str]
    blocked: Callable[[], str | None] = lambda: None
    auto_rank: int = 100
    needs_server: bool = False  # searches by meaning wait for a server to answer
