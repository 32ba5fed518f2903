"""The Store seam: every operation the service needs of a storage engine, and what each
one promises. A store is built for one database and shared by a process's threads.

Every write is one transaction; every read is one snapshot (a search with its retries and
shortcuts included). Arguments arrive validated by the service. A store raises only
StorageFault (the engine failed; the detail is for the log, never for a client) and
SearchTimedOut (a search's reads passed their deadline). Engines and drivers are imported
only by the store that uses them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agent_memory.contract import fields
from agent_memory.contract.models import OLLAMA, Embedding, Filters, Noise, Pin, SearchPage
from agent_memory.contract.vocabulary import MAX_EXPANDED_LINKS

if TYPE_CHECKING:
    from agent_memory.query import ParsedQuery
    from agent_memory.storage.hygiene.near import NearWords

# A memory as every read answers it, in this order (rows become dicts by these names), and
# as an export writes it (the JSONL format's fields, in their order): the fields table's.
MEMORY_COLUMNS = fields.read_names()
EXPORT_MEMORY_COLUMNS = fields.export_names()

# The pin, as a store keeps it in key/value rows. A pin written before providers existed
# has no provider key: its vectors came from Ollama.
PIN_KEYS = ("embedding_model", "embedding_dim", "embedding_prefixes")
PROVIDER_KEY = "embedding_provider"
# The meta row holding the database's random id (contract.identity), made with the schema.
IDENTITY_KEY = "database_id"
# The key an OAuth grant is found by when a refresh token it replaced is presented again.
REPLACED = "replaced_refresh_key"

# How open_store treats the location (see there): create a database when there is none,
# open an existing one only, or open an existing one to read (read-only if need be).
CREATE, EXISTING, READ = "create", "existing", "read"
# Called by the sweep between two batches, outside the write lock; True means stop now.
Pause = Callable[[], bool]
# An import's outcome per record: ("imported" | "duplicate", row id) or ("expired", None).
Outcome = tuple[str, int | None]


def pin_of(rows: dict[str, str]) -> Pin | None:
    """The pin these key/value rows name; None when there is none."""
    if not set(PIN_KEYS) <= set(rows):
        return None
    return Pin(
        rows["embedding_model"],
        int(rows["embedding_dim"]),
        rows["embedding_prefixes"],
        rows.get(PROVIDER_KEY, OLLAMA),
    )


@dataclass(frozen=True)
class Finding:
    """One of doctor's checks of a store: what was looked at, whether it holds, what was
    found (for a person), and whether Store.repair puts it right."""

    check: str
    ok: bool
    detail: str = ""
    repairable: bool = False


@dataclass(frozen=True)
class NewMemory:
    memory_type: str
    content: str
    tags: Sequence[str]
    source: str | None
    scope: str | None
    now: int
    expires_at: int | None
    actor: str = fields.LOCAL  # who stores it (service.actor): its created_by and updated_by
    supersedes: tuple[int, ...] = ()  # the memories it replaces (insert_unique links them)


class MissingMemory(Exception):
    """A write named a memory that is not there (``memory_id``); nothing was written."""

    def __init__(self, memory_id: int) -> None:
        super().__init__(memory_id)
        self.memory_id = memory_id


class ChangedMemory(Exception):
    """A write found a memory (``memory_id``) changed since the read it was asked from;
    nothing was written."""

    def __init__(self, memory_id: int) -> None:
        super().__init__(memory_id)
        self.memory_id = memory_id


class Snapshot(Protocol):
    """The whole database as of one read: counts, pin and rows agree with each other."""

    def counts(self) -> tuple[int, int]:
        """(memories, links)."""

    def pin(self) -> Pin | None: ...

    def memories(self) -> Iterator[dict[str, Any]]:
        """Every memory (expired ones too) in id order, with the export's columns."""

    def links(self) -> Iterator[tuple[int, int, str, int]]:
        """Every edge (from, to, kind, created_at) in that order."""

    def versions(self) -> Iterator[dict[str, Any]]:
        """Every earlier version of a memory (storage.history), with its memory_id."""

    def version_count(self) -> int: ...


class Reader(Protocol):
    """A read-only view of a store for the session brief (``agent-memory context``), opened
    without building what a Store needs: it must answer at every agent's start. Nothing is
    written, not even a recency bump. Raises only StorageFault, and DatabaseBusy when
    another process holds the database locked for longer than the brief may wait."""

    location: str  # as Store.location

    def recent(
        self, *, scope: str | None, types: Sequence[str], now: int, limit: int, window: int
    ) -> list[dict[str, Any]]:
        """Up to ``limit`` memories of ``types`` whose scope is ``scope`` (None: those with
        no scope), leaving out those expired at ``now`` and those another memory supersedes
        (the to_id of a supersedes relation): of the ``window`` newest of them (created_at,
        then id), the most recently used first (last_accessed, then created_at, then id,
        descending). Wire fields, decay_score as of ``now``."""

    def neighbours(
        self, ids: Sequence[int], per_result: int = MAX_EXPANDED_LINKS
    ) -> list[dict[str, Any]]:
        """As Store.neighbours."""

    def close(self) -> None: ...


@dataclass(frozen=True)
class AsOf:
    """The store as of one time, read in one snapshot: ``memories`` the asked ids that
    stood then, as they stood; ``changed`` the memories changed since, not asked, each as
    {id, content, tags} of its text then (whether it stood then is not known yet);
    ``superseded`` the supersedes relations made by then, {older id: [newer ids]}."""

    memories: dict[int, dict[str, Any]] = field(default_factory=dict)
    changed: list[dict[str, Any]] = field(default_factory=list)
    superseded: dict[int, list[int]] = field(default_factory=dict)


class Store(Protocol):
    schema_version: int
    location: str  # for logs: a path, or a URL without its password
    # The secret a daemon proves it knows (agent_memory.contract.identity), from the id the database
    # holds and where it is: the same in every process that opens this database, by whatever
    # path (storage.database_key reads it without an engine). Never sent anywhere. None for
    # a database whose id is gone (someone deleted the meta row): no daemon of it is trusted.
    identity_key: bytes | None
    read_only: bool  # opened for reading only (this process cannot write the file): writes fail

    def close(self) -> None: ...

    # -- memories -------------------------------------------------------------------------
    def insert(self, memory: NewMemory, embedding: Embedding | None) -> int:
        """A new row, and its vector in the same transaction when ``embedding`` fits the
        pin (a database with no pin yet is pinned to it); else the row is pending."""

    def insert_unique(self, memory: NewMemory, embedding: Embedding | None) -> tuple[int, bool]:
        """As insert, unless a memory of the same type and scope holds the same content
        once whitespace is normalised (an exact duplicate, storage.duplicates): then that
        memory takes the tags it lacks and the later expiry, counts a use, and (its id,
        True) comes back. One transaction: two processes storing the same content at once
        make one memory, and both get its id. The memory then supersedes each of
        ``memory.supersedes`` (but itself); MissingMemory, writing nothing, if one is not
        there."""

    def superseded_by(
        self, ids: Sequence[int] | None, scope: str | None = None
    ) -> dict[int, list[int]]:
        """Of ``ids`` (None: of every memory), those a memory supersedes, each with the
        ids of the memories superseding it, ascending; with ``scope`` (ids None only), only
        the supersessions made by memories of that scope (a view filtered by it)."""

    def update(
        self, memory_id: int, changes: dict[str, Any], now: int, embedding: Embedding | None
    ) -> dict[str, Any] | None:
        """Apply ``changes`` (content, tags, scope, expires_at) and count it as a use; None
        if no such row. New content replaces the vector in the same transaction (with
        ``embedding`` when it fits, else the row is pending). The result carries
        ``embedding_status``."""

    def delete(self, memory_id: int) -> bool:
        """Remove a row with its vector, links and history; whether it was there."""

    # -- history (storage.history; update and a duplicate store keep the version replaced)
    def history(self, memory_id: int) -> list[dict[str, Any]] | None:
        """The memory's versions, oldest first, the current one last; None if no such row."""

    def as_of(
        self, at: int, ids: Sequence[int], changed: int = 0, scope: str | None = None
    ) -> AsOf:
        """``ids`` as they stood at ``at``, up to ``changed`` memories changed since, and
        the supersedes relations made by then (with ``scope``: only those made by memories
        of that scope), from one snapshot."""

    def links_at(self, memory_id: int, at: int) -> set[tuple[int, int, str]]:
        """The relations (from, to, kind) touching the memory that were made by ``at``."""

    def import_versions(self, versions: Sequence[dict[str, Any]]) -> int:
        """Insert export records' versions (memory_id set) in one transaction."""

    def purge_history(self, memory_id: int) -> int | None:
        """Delete every earlier version of the memory, the row itself kept, in one
        transaction: how many; None if no such row."""

    def bump(self, uses: Mapping[int, tuple[int, int]]) -> None:
        """The recency bump of search results, {id: (uses, at)} in one transaction:
        last_accessed = the later of its own and ``at``, access_count + uses (saturating at
        the largest 64-bit integer); ids no longer there are skipped."""

    def search(
        self,
        query: ParsedQuery,
        embedding: Embedding | None,
        *,
        now: int,
        limit: int,
        filters: Filters,
        deadline: float | None = None,
        floor: bool | None = None,
        unrelated: Noise | None = None,
        superseded: str = "keep",
    ) -> SearchPage:
        """One page of results, read in one snapshot, decay_score as of ``now``; ``query``
        as the service read it (query.read), once.

        Keyword mode (no embedding, no vector stored yet, or vectors of another pin, that
        pin given back as ``other_pin``): ``decay - bm25`` (words typed together counting
        as a phrase) descending, ties by id, filters before the cut; the query as FTS5
        syntax, else its words OR-ed. Hybrid: ranking.fuse of the keyword leg (bm25, filters
        before its cut) and the vector leg (cosine, filters before its cut), each of
        ranking.leg_size(limit), every candidate weighed on both legs, the model's
        similarity against ``unrelated`` (the query's similarity to unrelated texts).
        ``floor``: whether the page ends where relevance drops (ranking.end; CUT when None),
        the superseded memories left out first. ``deadline`` is a time.monotonic() value.
        ``superseded``: what becomes of the memories another supersedes
        (storage.superseded: keep, hide, mark), read in the same snapshot; with
        ``filters.scope``, only what a memory of that scope supersedes counts."""

    def similar_candidates(
        self,
        embedding: Embedding | None,
        words: Callable[[], NearWords | None],
        scope: str | None,
        now: int,
        limit: int,
        at_least: float | None = None,
    ) -> tuple[str | None, list[tuple[int, float | None, str]]]:
        """Up to ``limit`` memories of ``scope`` (None: without one) nearest a memory about to
        be stored, from one snapshot: ("cosine", (id, cosine similarity, content)) when the
        store is pinned to ``embedding``'s model, else ("keyword", (id, None, content)): the
        memories that may share enough of the words ``words()`` gives (read only then;
        storage.near plans which, unranked, ``limit`` not applying), else (None, []).
        ``at_least``: by cosine, only the nearest at least this similar, and only their rows
        are read (the keyword signal ignores it)."""

    def tidy_read(self, scope: str | None, vectors: bool) -> Any:
        """For ``agent-memory tidy``, from one snapshot: the memories of ``scope`` (None: of
        all), every relation with both ends' expiry, the pin, and with ``vectors`` the
        stored vectors (storage.tidy.TidyRead)."""

    def merge(
        self,
        keep: int,
        others: Sequence[int],
        revisions: Mapping[int, str],
        now: int,
        actor: str,
        max_tags: int,
        scope: str | None = None,
    ) -> list[str] | None:
        """One transaction: ``keep`` supersedes ``others`` and takes their tags, unless one
        of them changed since its revision was read (storage.tidy)."""

    def memories(
        self, filters: Filters, limit: int | None, before: tuple[int, int] | None = None
    ) -> Iterator[dict[str, Any]]:
        """The list, newest first (created_at, then id, descending), streamed from one
        snapshot that stays open until the iterator is exhausted or closed. ``before``
        (created_at, id) keeps only the rows after that point in this order: a keyset
        page, as cheap deep in the list as at its head."""

    def neighbours(
        self, ids: Sequence[int], per_result: int = MAX_EXPANDED_LINKS
    ) -> list[dict[str, Any]]:
        """Per (result, neighbour) edge: self, id, kind, direction ("out" | "in"), type,
        content, tags; newest relation first, at most ``per_result`` per result."""

    def get(
        self, memory_id: int, relations: int
    ) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        """One memory (its wire fields plus access_count and embedding_status) and up to
        ``relations`` of its edges as neighbours gives them, from one snapshot; None if no
        such row. A read: nothing is bumped."""

    def stats(self, scopes: int) -> dict[str, Any]:
        """From one snapshot: memories, by_type {type: count}, by_scope [(scope, count)] for
        the ``scopes`` largest scopes (None is no scope), links, pending_embedding."""

    def ping(self) -> None:
        """A cheap read that fails when the store cannot be read."""

    # -- relations ------------------------------------------------------------------------
    def link(self, a: int, b: int, kind: str, now: int, *, ids: tuple[int, int]) -> int | None:
        """Store the edge a -[kind]-> b unless present (a repeat keeps its created_at);
        return the first of ``ids`` that does not exist, writing nothing then."""

    def unlink(self, a: int, b: int, kind: str) -> bool: ...

    # -- embeddings -----------------------------------------------------------------------
    def pin(self) -> Pin | None: ...

    def pending(self, limit: int) -> list[tuple[int, str]]:
        """Rows whose vector is missing or stale, oldest first: (id, content)."""

    def write_vectors(self, made: Sequence[tuple[int, str, Embedding]]) -> int:
        """Store backfilled vectors, given as (id, the text it was made from, embedding),
        skipping a row edited or forgotten meanwhile; how many were written."""

    def repin(self, pin: Pin) -> None:
        """Start over with another model: drop every vector, pin ``pin``, all pending."""

    def embedding_counts(self) -> tuple[int, int]:
        """(rows, rows pending embedding)."""

    def pending_count(self) -> int:
        """Rows pending embedding, read from the partial index of those rows alone: about
        nothing when none is pending, however many memories there are."""

    # -- import and export ----------------------------------------------------------------
    def import_memories(self, batch: Sequence[dict[str, Any]], now: int) -> list[Outcome]:
        """Insert a batch of export records in one transaction. A record that duplicates a
        live memory as a store would (same type and scope, same content once whitespace is
        normalised: storage.duplicates) is not inserted: its id is that memory's, which
        takes its tags and longer lifetime without counting a use; nor is a repeat inside
        the batch, which gives its tags and lifetime to the first. An expired one is
        skipped. The batch's new rows take consecutive ids."""

    def import_links(
        self, edges: Sequence[tuple[int, int, str, int]]
    ) -> list[tuple[int, int, str]]:
        """Insert (a, b, kind, created_at) edges in one transaction; the new ones, once each."""

    def remove_imported(
        self, ranges: Sequence[tuple[int, int]], edges: Sequence[tuple[int, int, str]]
    ) -> int:
        """Take a failed import out in one transaction: its rows by (first, last) id range
        with their links, and the edges it added between older rows; rows removed."""

    def after_import(self) -> int:
        """Whatever the engine's indexes want after a bulk load (short transactions)."""

    def bulk(self) -> AbstractContextManager[None]:
        """Around a long run of import batches."""

    def snapshot(self) -> AbstractContextManager[Snapshot]: ...

    # -- the sweep ------------------------------------------------------------------------
    def delete_expired(self, now: int, pause: Pause | None = None) -> tuple[int, float]:
        """Remove rows with expires_at <= now in batches that each hold the write lock
        briefly; (rows removed, the longest hold in seconds). ``pause`` runs between
        batches, outside the lock; True stops early."""

    def refresh_decay(self, now: int, pause: Pause | None = None) -> tuple[int, float]:
        """Rewrite every stored decay_score, in batches as delete_expired."""

    def decay_refreshed_at(self) -> int | None:
        """When any process last finished refresh_decay on this database."""

    def merge_index(self, now: int, pause: Pause | None = None) -> tuple[int, float]:
        """Merge what the keyword index's writes left in pieces, in steps as delete_expired
        (steps taken, the longest hold); 0 steps for an engine with nothing to merge."""

    # -- doctor ---------------------------------------------------------------------------
    def check(self) -> list[Finding]:
        """What ``agent-memory doctor`` checks of this engine, writing nothing: its own
        integrity where it can tell, the keyword index against the memories, the vectors
        against the pin and the embedded rows, and the engine's leftover files. Each engine
        lists what it checks, so that doctor says it."""

    def repair(self) -> list[str]:
        """Rebuild what ``check`` finds broken and can be rebuilt (indexes, the keyword
        index, vectors without a memory removed, memories without their vector made
        pending); one line per thing done. Never removes a memory."""
