"""The service seam: every transport calls these methods with the client's raw arguments.

Orchestration only: check the arguments (validate.py), redact secrets, ask the embedder
before any write lock is taken, call the store once, shape the answer. Methods take a
mapping as it arrived on the wire (MCP arguments, a JSON body) and return plain JSON-ready
dicts; they raise only the exceptions of :mod:`agent_memory.contract.errors`, a store's fault always
as the generic StorageError (its detail goes to the log).

A search, end to end: ``search`` checks the arguments, reads the query once (query.read: its
cost bounds, its tree or its words), embeds it (embedders/), and hands both to
``Store.search``, which ranks in one snapshot (for SQLite: storage/sqlite/keyword.py and
vectors.py, fused by ranking.fuse); then related memories are attached when asked, and the
results' use is recorded (the only write).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from agent_memory.contract import fields as fields_table
from agent_memory.contract.errors import (
    InvalidArgument,
    InvalidType,
    SearchTimedOut,
    StorageError,
    StorageFault,
)
from agent_memory.contract.models import Embedding, Filters, Pin
from agent_memory.contract.models import related as _related
from agent_memory.contract.vocabulary import ARGUMENTS, DEFAULT_SEARCH_LIMIT, MAX_LIMIT
from agent_memory.embedders.base import Embedder
from agent_memory.query import read as read_query
from agent_memory.service import actor, pages, redact, status, uses, validate
from agent_memory.service.embedding_jobs import (
    BACKFILL_BATCH_ROWS,
    REEMBED_BATCH_ROWS,
    EmbeddingJobs,
    Progress,
    no_progress,
)
from agent_memory.service.hygiene import history, similar, supersede, tidy
from agent_memory.service.redact import MEMORY_FIELDS, import_step, redact_fields
from agent_memory.storage.base import NewMemory, Store
from agent_memory.transfer import gsd, jsonl, portable

log = logging.getLogger(__name__)

# What a patch may carry besides the id (REST takes the id from the path).
PATCH_FIELDS = fields_table.argument_names("update")
# A memory shown on its own (get) lists at most this many relations, newest first; stats
# names at most this many scopes, the largest first.
MAX_RELATIONS = 200
STATS_SCOPES = 50
# A search's reads stop after this long, answered "query is too expensive" (the shape of a
# query is bounded first, in query.cost): far past an ordinary question's time on a large
# database, and a REST worker is free again within this.
SEARCH_BUDGET_SECS = 2.0
# The text fields of a memory, all redacted before a write. A tag, a scope and a writer are
# also what filters match, so a filter's are redacted the same way: a filter written as the
# memory was sent finds it.
REDACTED_FIELDS = MEMORY_FIELDS
# What stats adds when search by meaning is off: the waiting memories are then no backlog.
EMBEDDING_OFF = (
    "off (--embedder none): no memory gets a vector while agent-memory runs without an "
    "embedder, so the memories waiting for a vector keep waiting; search is by keyword only"
)


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
        embedding_off: bool | None = None,
        uses_every: float | None = None,
    ) -> None:
        """``embedding_off``: search by meaning is off by the operator's choice (--embedder
        none); by default, when there is no embedder. A command that has no use for vectors
        gets no embedder without turning embedding off. ``uses_every``: a server's interval
        for writing search results' uses behind the answers (service/uses.py)."""
        self.db = store
        self.embedder = embedder
        self.embedding_off = embedder is None if embedding_off is None else embedding_off
        self.max_content_bytes = max_content_bytes
        self.redact = redact
        self._clock = clock
        self.embeddings = EmbeddingJobs(self)
        self.uses = uses.Uses(store.bump, uses_every)

    def close(self) -> None:
        self.uses.close()
        self.db.close()
        if self.embedder is not None:
            self.embedder.close()

    def now(self) -> int:
        return int(self._clock())

    @contextmanager
    def storage(self, operation: str) -> Iterator[None]:
        """A store's fault as the generic message; the detail goes to the log only."""
        try:
            if operation in uses.SHOWN_BY:
                self.uses.flush()
            yield
        except StorageFault as exc:
            log.error("%s: storage error: %s", operation, exc.detail)
            raise StorageError(operation) from exc

    def _redacted(self, fields: dict[str, Any]) -> list[str]:
        """Replace, in ``fields``, the secrets of every text field a memory stores (content,
        source, each tag, scope; those present) by markers, unless redact is off; the kinds
        replaced, field by field. Called after validation: the limits are on what was sent.
        """
        return redact_fields(fields, REDACTED_FIELDS) if self.redact else []

    def _filters(self, args: Mapping[str, Any]) -> Filters:
        """A search's or a list's filters, their tag, scope and writer redacted as stored
        ones are."""
        return redact.filters(self.redact, validate.filters(args))

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
        older = supersede.ids(args)
        fields: dict[str, Any] = {
            "content": content,
            "tags": tags,
            "source": source,
            "scope": scope,
        }
        redacted = self._redacted(fields)
        embedding = self._embed_document(fields["content"])  # before the write lock
        now = self.now()
        expires_at = None if ttl is None else now + ttl
        memory = NewMemory(
            memory_type,
            **fields,
            now=now,
            expires_at=expires_at,
            actor=actor.current(),
            supersedes=older,
        )
        hints = similar.find(self.db, fields["content"], fields["scope"], embedding, now)
        with self.storage("store"), supersede.refused(older):
            memory_id, duplicate = self.db.insert_unique(memory, embedding)
        return similar.stored(memory_id, duplicate, redacted, hints)

    def search(
        self, args: Any, *, record_use: bool = True, fields: tuple[str, ...] | None = None
    ) -> dict[str, Any]:
        """``record_use=False``: a pure read (the session brief); the results are not
        bumped. A read-only store is never bumped. ``fields``: the arguments this transport
        takes, when not the tool's (REST's add ``record_use``, which turns the bump off too).
        What ``max_chars`` leaves out (service/pages.py) is not used."""
        args = self._arguments("search", args, fields)
        query = validate.required_string(args, "query")
        parsed = read_query(query, bounded=True)  # the text is read here, once
        filters = self._filters(args)
        limit = validate.limit(args, DEFAULT_SEARCH_LIMIT)
        assert limit is not None
        expand = validate.flag(args, "expand_links")
        explain = validate.flag(args, "explain")
        record_use = validate.flag(args, "record_use", default=True) and record_use
        how = supersede.how(args)
        at = history.moment(args, self.now())
        max_chars = validate.max_chars(args)
        embedding = None if self.embedder is None else self.embedder.embed_query(query)
        unrelated = None if embedding is None else self.embedder.unrelated(embedding)
        now = self.now()
        deadline = time.monotonic() + SEARCH_BUDGET_SECS
        with self.storage("search"):
            options = {"now": now, "limit": limit, "filters": filters, "deadline": deadline}
            options.update(unrelated=unrelated, superseded=how)
            try:
                if at is None:  # the store as it is: its own search, nothing in between
                    page = self.db.search(parsed, embedding, **options)
                else:
                    page = history.searched(self.db, at, parsed, embedding, **options)
            except SearchTimedOut:
                shown = validate.shown(query[:80] + ("..." if len(query) > 80 else ""))
                raise InvalidArgument(
                    f"query is too expensive: a search must finish within "
                    f"{SEARCH_BUDGET_SECS:g} s (got {shown})"
                ) from None
            if page.other_pin is not None and embedding is not None:
                self.embeddings.log_mismatch(page.other_pin, embedding.pin)
            if expand:
                self._expand(page.results)
        answer = pages.answer(page, explain, max_chars)
        # What is returned only (not neighbours, nor what the budget left out); last, so
        # that a search out of time writes nothing.
        if record_use and at is None and not self.db.read_only:
            self.uses.record([r["id"] for r in answer["results"]], now)
        return answer

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
        filters = self._filters(args)
        limit = validate.limit(args, None)
        expand = validate.flag(args, "expand_links")
        before = validate.cursor(args)
        how = supersede.how(args)
        at = history.moment(args, self.now())
        if expand and limit is None:
            raise InvalidArgument(
                "limit is required when expand_links is true; "
                f"pass a limit between 1 and {MAX_LIMIT}"
            )
        return self._listed(filters, limit, expand, before, how, at)

    def _listed(
        self, filters: Any, limit: int | None, expand: bool, before: Any, how: str, at: Any
    ) -> Generator[dict[str, Any], None, None]:
        with self.storage("list"):
            rows = (
                supersede.listed(self.db, filters, limit, before, how)
                if at is None
                else history.listed(self.db, at, filters, limit, before, how)
            )
            if not expand:
                yield from rows
                return
            found = list(rows)  # bounded: expand needs a limit
            self._expand(found)
        yield from found

    def get(self, args: Any) -> dict[str, Any]:
        """One memory with every field (access_count and embedding_status too) and its
        relations both ways, newest first (at most MAX_RELATIONS). A read: not a use."""
        args = self._arguments("get", args)
        memory_id, at = validate.memory_id(args), history.moment(args, self.now())
        with self.storage("get"):
            if at is not None:
                return history.got(self.db, memory_id, at, MAX_RELATIONS)
            found = self.db.get(memory_id, MAX_RELATIONS)
        if found is None:
            return _not_found(memory_id, "found")
        memory, edges = found
        memory["related"] = [_related(edge) for edge in edges]
        return memory

    def stats(self, args: Any = None) -> dict[str, Any]:
        """What the store holds: memories in all, per type and per scope (the largest
        STATS_SCOPES), links, and how many memories wait for a vector; with embedding off,
        ``embedding`` says that those wait for nothing (EMBEDDING_OFF)."""
        self._arguments("stats", args)
        with self.storage("stats"):
            found = self.db.stats(STATS_SCOPES)
        by_scope = [{"scope": scope, "memories": n} for scope, n in found["by_scope"]]
        answer = {**found, "by_scope": by_scope}
        if self.embedding_off:
            answer["embedding"] = EMBEDDING_OFF
        return answer

    def waiting_for_vectors(self) -> int:
        """The memories without a vector of their current content: what a search from a
        terminal reports beside its mode. Cheap when none is (a partial index)."""
        with self.storage("search"):
            return self.db.pending_count()

    def update(self, args: Any, *, path_id: Any = None) -> dict[str, Any]:
        """A JSON merge-patch: omitted fields stay, null clears where clearing is legal.
        ``path_id`` is the id taken from a URL (REST); the patch then carries no id field."""
        if path_id is None:
            args = self._arguments("update", args)
            memory_id = validate.memory_id(args)
        else:
            args = self._arguments("update", args, PATCH_FIELDS)
            memory_id = validate.memory_id({"id": path_id})
        if not any(name in args for name in PATCH_FIELDS):
            raise InvalidArgument(f"at least one of {', '.join(PATCH_FIELDS)} must be provided")
        changes = {
            argument.name: self._checked(argument, args)
            for argument in fields_table.arguments("update")
            if argument.name in args and argument.check != fields_table.TTL
        }
        ttl = validate.ttl(args)
        if actor.hidden(memory_id) is not None:
            return _not_found(memory_id, "updated")
        redacted = self._redacted(changes)
        embedding = self._embed_document(changes["content"]) if "content" in changes else None
        now = self.now()
        if "ttl_secs" in args:
            changes["expires_at"] = None if ttl is None else now + ttl
        changes["updated_by"] = actor.current()
        with self.storage("update"):
            updated = self.db.update(memory_id, changes, now, embedding)
        if updated is None:
            return _not_found(memory_id, "updated")
        return {**updated, "redacted": redacted} if redacted else updated

    def _checked(self, argument: fields_table.Argument, args: Mapping[str, Any]) -> Any:
        """A field's value as sent, checked as its kind of value is (fields.Argument.check)."""
        if argument.check == fields_table.CONTENT:
            return validate.content(args[argument.name], self.max_content_bytes)
        if argument.check == fields_table.TAGS:
            return validate.tags(args[argument.name])
        return validate.label(args, argument.name)

    def history(self, args: Any) -> dict[str, Any]:
        """memory_history: a memory's versions, oldest first (service/hygiene/history.py)."""
        memory_id = validate.memory_id(self._arguments("history", args))
        with self.storage("history"):
            return history.versions(self.db, memory_id)

    def purge_history(self, args: Any) -> dict[str, Any]:
        """Drop every earlier version of a memory, keeping the current one, so that what an
        update removed (a secret) is gone from its history and from later exports. It takes
        what ``history`` takes."""
        memory_id = validate.memory_id(self._arguments("history", args))
        with self.storage("purge history"):
            return history.purge(self.db, memory_id)

    def forget(self, args: Any) -> dict[str, Any]:
        memory_id = validate.memory_id(self._arguments("forget", args))
        with self.storage("forget"):
            deleted = actor.hidden(memory_id) is None and self.db.delete(memory_id)
        return {"id": memory_id, "deleted": True} if deleted else _not_found(memory_id, "deleted")

    def link(self, args: Any) -> dict[str, Any]:
        from_id, to_id, kind, a, b = validate.edge(self._arguments("link", args))
        if from_id == to_id:
            raise InvalidArgument(f"from_id and to_id must differ (got {from_id})")
        echo = {"from_id": from_id, "to_id": to_id, "kind": kind}
        with self.storage("link"):
            hidden = actor.hidden(from_id, to_id)  # answered as a missing id
            missing = hidden or self.db.link(a, b, kind, self.now(), ids=(from_id, to_id))
        if missing is not None:
            return {**echo, "linked": False, "reason": "not_found", "missing_id": missing}
        return {**echo, "linked": True}

    def unlink(self, args: Any) -> dict[str, Any]:
        """Directed kinds must match the stored direction; relates_to goes from either end."""
        from_id, to_id, kind, a, b = validate.edge(self._arguments("unlink", args))
        echo = {"from_id": from_id, "to_id": to_id, "kind": kind}
        with self.storage("unlink"):
            removed = actor.hidden(from_id, to_id) is None and self.db.unlink(a, b, kind)
        if removed:
            return {**echo, "unlinked": True}
        return {**echo, "unlinked": False, "reason": "not_found"}

    def tidy(self, args: Any = None) -> dict[str, Any]:
        """``agent-memory tidy``'s report (service/hygiene/tidy.py); writes nothing."""
        return tidy.report(self, self._arguments("tidy", args, tidy.ARGUMENTS))

    def tidy_merge(
        self, clusters: list[dict[str, Any]], scope: str | None = None
    ) -> list[dict[str, Any]]:
        """Merge the clusters of a tidy report of ``scope`` (None: of all), one transaction
        each (service/hygiene/tidy.py)."""
        return tidy.merge(self, clusters, scope)

    def health(self, challenge: str | None = None, address: str = "") -> dict[str, Any]:
        """Liveness, the embedder and how searches run now (service/status.py)."""
        return status.health(self, challenge, address)

    def doctor(self, *, repair: bool = False) -> dict[str, Any]:
        """``agent-memory doctor``: the store's checks, and repairs (service/status.py)."""
        return status.doctor(self, repair=repair)

    # -- embeddings -----------------------------------------------------------------------

    def _embed_document(self, content: str) -> Embedding | None:
        if self.embedder is None:
            return None
        made = self.embedder.embed_documents([content])
        return made[0] if made else None

    # The jobs of embedding_jobs.EmbeddingJobs, under the names the sweep and the
    # maintenance commands call.

    def backfill(self, batch: int = BACKFILL_BATCH_ROWS) -> int:
        return self.embeddings.backfill(batch)

    def reembed(
        self,
        *,
        everything: bool = False,
        batch: int = REEMBED_BATCH_ROWS,
        progress: Progress = no_progress,
    ) -> tuple[int, Pin]:
        return self.embeddings.reembed(everything=everything, batch=batch, progress=progress)

    def embed_pending(
        self, *, batch: int = REEMBED_BATCH_ROWS, progress: Progress = no_progress
    ) -> tuple[int, Pin]:
        return self.embeddings.embed_pending(batch=batch, progress=progress)

    def report_embedder(self) -> str:
        return self.embeddings.report()

    # -- export and import ----------------------------------------------------------------

    def export(self, write: Callable[[str], None]) -> tuple[int, int]:
        """The whole store as JSONL v1 through ``write`` (see portable.export). No
        embedder is asked: the header names the database's pin."""
        with self.storage("export"):
            return portable.export(self.db, write, now=self.now())

    def import_jsonl(
        self,
        reader: jsonl.Reader,
        progress: Callable[[int, int], None] = lambda done, total: None,
    ) -> dict[str, int]:
        """Import a file the reader has already checked (see portable.import_jsonl)."""
        with self.storage("import"):
            return portable.import_jsonl(
                self.db,
                reader,
                now=self.now(),
                redact=import_step(self.redact),
                progress=progress,
            )

    def import_gsd(self, items: list[gsd.Item], malformed: int, scope: str) -> dict[str, int]:
        """Store GSD STATE.md items; an item already present (same key) is skipped."""
        with self.storage("import"):
            return portable.import_gsd(
                self.db,
                items,
                malformed,
                scope,
                now=self.now(),
                redact=import_step(self.redact),
            )
