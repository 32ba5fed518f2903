"""Export and import, the same on every store: the JSONL format v2 (jsonl.py) written from
one snapshot, and read back in batches that each are one transaction.

An import's batches keep the write lock short for every other writer, and a kill -9 leaves
whole batches that a re-run completes (duplicates are skipped). Any exception during the
write takes out again what this run had committed (see _take_out).
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable
from typing import Any

from agent_memory import __version__
from agent_memory.contract.errors import StorageError, StorageFault
from agent_memory.contract.vocabulary import SQLITE_INT_MAX
from agent_memory.service import validate
from agent_memory.storage.base import Outcome, Store
from agent_memory.transfer import gsd, jsonl

log = logging.getLogger(__name__)

# Records per write transaction; a header this far ahead of our clock gets a warning.
IMPORT_BATCH_ROWS = 1_000
CLOCK_SKEW_WARN_SECS = 3600
IMPORT_COUNTS = (
    "imported",
    "skipped duplicates",
    "skipped expired",
    "links imported",
    "links skipped duplicates",
    "links dropped",
)
# An import's report gains these when the file carries earlier versions (format v2): those
# kept, and those of memories it did not insert (duplicates, expired), left out.
VERSION_COUNTS = ("versions imported", "versions dropped")
# An import's report gains these two counts when secrets were redacted in rows it wrote.
REDACTION_COUNTS = ("secrets redacted", "memories redacted")
IMPORT_OUTCOME = {
    "imported": "imported",
    "duplicate": "skipped duplicates",
    "expired": "skipped expired",
}

Progress = Callable[[int, int], None]
# Makes a record (a memory's or a version's) what is written: its secrets replaced; the
# kinds of secret replaced
Redact = Callable[[dict[str, Any]], list[str]]


def jsonl_reader(
    path: Any, max_content_bytes: int = validate.DEFAULT_MAX_CONTENT_BYTES
) -> jsonl.Reader:
    """The strict reader of an export file, refusing what a store call would refuse."""
    return jsonl.Reader(path, lambda record: validate.import_record(record, max_content_bytes))


def export(store: Store, write: Callable[[str], None], *, now: int) -> tuple[int, int]:
    """Write the whole store as JSONL v2 lines through ``write``; (memories, links).

    One read snapshot, streamed: the header's counts match the records, and memory use does
    not grow with the database. The header names the database's pin; without one (no vector
    yet) its model is "" and its dimension 0, whatever embedder is configured now.
    """
    with store.snapshot() as snap:
        memories, links = snap.counts()
        pin = snap.pin()
        header = jsonl.header(
            exported_at=now,
            embedding_model=pin.model if pin else "",
            embedding_dim=pin.dimension if pin else 0,
            schema_version=store.schema_version,
            agent_memory_version=__version__,
            exported_rows=memories,
            exported_links=links,
            exported_versions=snap.version_count(),
        )
        write(jsonl.line(header))
        for row in snap.memories():
            write(jsonl.line(jsonl.memory(row)))
        for edge in snap.links():
            write(jsonl.line(jsonl.link(*edge)))
        for version in snap.versions():
            write(jsonl.line(jsonl.version(version["memory_id"], version)))
    return memories, links


class _Import:
    """One import run: its counts, the ids its keys map to, and what it has committed."""

    def __init__(self, store: Store, now: int, redact: Redact, total: int, progress: Progress):
        self.store = store
        self.now = now
        self.redact = redact
        self.total = total
        self.progress = progress
        self.report = dict.fromkeys(IMPORT_COUNTS, 0)
        self.done = 0
        self.secrets = 0  # counted over the rows and versions written
        self.redacted: set[int] = set()  # the memories written with a secret replaced
        self.ids: dict[int, int | None] = {}
        self.inserted: list[tuple[int, int]] = []  # (first id, last id) of each batch's new rows
        self.between_old: list[tuple[int, int, str]] = []  # new edges between rows not inserted
        self.versions: list[dict[str, Any]] = []  # waiting for their batch

    def ours(self, memory_id: int) -> bool:
        at = bisect.bisect_right(self.inserted, (memory_id, SQLITE_INT_MAX)) - 1
        return at >= 0 and self.inserted[at][0] <= memory_id <= self.inserted[at][1]

    def memories(self, batch: list[dict[str, Any]]) -> list[Outcome]:
        found = []
        for record in batch:  # the duplicate check sees the redacted fields
            found.append(len(self.redact(record)))
        outcomes = self.store.import_memories(batch, self.now)
        new = [memory_id for outcome, memory_id in outcomes if outcome == "imported"]
        if new:  # a batch's new rows take consecutive ids, in ascending batches
            self.inserted.append((min(new), max(new)))
        for record, secrets, (outcome, memory_id) in zip(batch, found, outcomes, strict=True):
            self.ids[record.get("key", 0)] = memory_id
            self.report[IMPORT_OUTCOME[outcome]] += 1
            if secrets and outcome == "imported":
                self.secrets += secrets
                self.redacted.add(memory_id)
        self._advance(len(batch))
        return outcomes

    def links(self, edges: list[tuple[int, int, str, int]]) -> None:
        added = self.store.import_links(edges)
        self.report["links imported"] += len(added)
        self.report["links skipped duplicates"] += len(edges) - len(added)
        self.between_old.extend(e for e in added if not (self.ours(e[0]) or self.ours(e[1])))
        self._advance(len(edges))

    def version(self, record: dict[str, Any]) -> None:
        """An earlier version of a memory of the file: kept with the memory this run
        inserted for its key; left out when there is none (a duplicate, an expired one)."""
        self.report.setdefault(VERSION_COUNTS[0], 0)
        self.report.setdefault(VERSION_COUNTS[1], 0)
        memory_id = self.ids.get(record["key"])
        if memory_id is None or not self.ours(memory_id):
            self.report[VERSION_COUNTS[1]] += 1
            self._advance(1)
            return
        secrets = len(self.redact(record))
        if secrets:
            self.secrets += secrets
            self.redacted.add(memory_id)
        self.versions.append({**record, "memory_id": memory_id})
        if len(self.versions) >= IMPORT_BATCH_ROWS:
            self.flush_versions()

    def flush_versions(self) -> None:
        if self.versions:
            self.report[VERSION_COUNTS[0]] += self.store.import_versions(self.versions)
            self._advance(len(self.versions))
            self.versions = []

    def _advance(self, count: int) -> None:
        self.done += count
        self.progress(self.done, self.total)

    def result(self) -> dict[str, int]:
        """The report, plus REDACTION_COUNTS when secrets were redacted in rows written."""
        if not self.secrets:
            return self.report
        return {
            **self.report,
            **dict(zip(REDACTION_COUNTS, (self.secrets, len(self.redacted)), strict=True)),
        }

    def take_out(self) -> None:
        """Remove what a failed import had committed, in one transaction: its rows by id
        (ids are never handed out twice, so these are its own) with their links, and the
        edges it added between rows that were there before. Logged either way: the fault
        may well persist, and then a re-run of the import completes it."""
        if not self.inserted and not self.between_old:
            return
        rows = sum(last - first + 1 for first, last in self.inserted)
        try:
            removed = self.store.remove_imported(self.inserted, self.between_old)
        except StorageFault as exc:
            log.error(
                "import: the %d memories and %d links it had written could not be taken out "
                "again (%s); importing the same file once the fault is gone completes the "
                "import (what is already there is skipped as duplicates)",
                rows,
                len(self.between_old),
                exc.detail,
            )
            return
        log.warning("import: took out the %d memories it had written, and their links", removed)


def _warn_of_skew(header: dict[str, Any], now: int) -> None:
    if header["exported_at"] > now + CLOCK_SKEW_WARN_SECS:
        log.warning(
            "the file was exported at %d, %d s ahead of this machine's clock; importing "
            "anyway (check the clocks: created_at and expires_at are kept as written)",
            header["exported_at"],
            header["exported_at"] - now,
        )


def import_jsonl(
    store: Store, reader: jsonl.Reader, *, now: int, redact: Redact, progress: Progress
) -> dict[str, int]:
    """Import a file the reader has already checked, batch by batch (see the module doc).

    Keys map to the new rows' ids (or to the row a duplicate collapsed onto), never to ids
    that merely equal them. Rows land pending embedding; no embedder is asked. An exception
    takes out what this run had committed, then leaves as StorageFault (an engine's) or
    StorageError (anything else, logged), an interrupt as itself.
    """
    header = reader.header
    assert header is not None, "call reader.check() first"
    _warn_of_skew(header, now)
    total = header["exported_rows"] + header["exported_links"] + (header["exported_versions"] or 0)
    run = _Import(store, now, redact, total, progress)
    memories: list[dict[str, Any]] = []
    edges: list[tuple[int, int, str, int]] = []
    try:
        with store.bulk():
            for record in reader.records():
                if record["record"] == "memory":
                    memories.append(record)
                    if len(memories) >= IMPORT_BATCH_ROWS:
                        run.memories(memories)
                        memories = []
                    continue
                if memories:
                    run.memories(memories)
                    memories = []
                if record["record"] == "version":
                    run.version(record)
                    continue
                a, b = run.ids[record["from"]], run.ids[record["to"]]
                if a is None or b is None or a == b:  # an end expired, or both collapsed
                    run.report["links dropped"] += 1
                    continue
                if record["kind"] == "relates_to":
                    a, b = min(a, b), max(a, b)
                edges.append((a, b, record["kind"], record["created_at"]))
                if len(edges) >= IMPORT_BATCH_ROWS:
                    run.links(edges)
                    edges = []
            if memories:
                run.memories(memories)
            if edges:
                run.links(edges)
            run.flush_versions()
            if run.report["imported"]:
                store.after_import()
    except BaseException as exc:  # Ctrl-C too: then the interrupt goes on up
        run.take_out()
        if isinstance(exc, Exception) and not isinstance(exc, StorageFault | StorageError):
            log.error("import: %s: %s", type(exc).__name__, exc)
            raise StorageError("import") from exc
        raise
    return run.result()


def import_gsd(
    store: Store, items: list[gsd.Item], malformed: int, scope: str, *, now: int, redact: Redact
) -> dict[str, int]:
    """Store GSD STATE.md items; an item already present (same key) is skipped."""
    records = [
        {
            "type": item.type,
            "content": item.content,
            "tags": item.tags,
            "source": gsd.SOURCE,
            "scope": scope,
            "created_at": now,
            "access_count": 0,
            "expires_at": None,
        }
        for item in items
    ]
    run = _Import(store, now, redact, len(records), lambda done, total: None)
    for start in range(0, len(records), IMPORT_BATCH_ROWS):
        run.memories(records[start : start + IMPORT_BATCH_ROWS])
    report = run.result()
    out = {
        "imported": report["imported"],
        "skipped duplicates": report["skipped duplicates"],
        "malformed lines skipped": malformed,
    }
    return {**out, **{k: report[k] for k in REDACTION_COUNTS if k in report}}
