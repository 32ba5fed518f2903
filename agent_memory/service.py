"""The service seam: every transport calls these methods with the client's raw arguments.

Validation lives here, once (types, bounds, messages), and so do the search pipeline,
merge-patch semantics and the mapping of storage faults to a generic message. Methods
take a mapping as it arrived on the wire (MCP arguments, a JSON body) and return plain
JSON-ready dicts; they raise only the exceptions of :mod:`agent_memory.errors`.
"""

from __future__ import annotations

import bisect
import json
import logging
import math
import time
from collections import defaultdict
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import sqlalchemy
import sqlean

from agent_memory import __version__, fts, gsd, jsonl, wire
from agent_memory.db import Database
from agent_memory.embedder import (
    KNOWN_DIMENSIONS,
    MODEL_MISSING,
    READY,
    UNREACHABLE,
    Embedder,
    Embedding,
    Pin,
)
from agent_memory.errors import (
    EmbedderUnavailable,
    InvalidArgument,
    InvalidType,
    StorageError,
    UnknownField,
)
from agent_memory.redact import redact as redact_secrets
from agent_memory.repository import (
    BM25_K1,
    DeadlinePassed,
    FtsQueryError,
    Pause,
    Repository,
    bm25_idf,
)
from agent_memory.vocabulary import (
    DEFAULT_SEARCH_LIMIT,
    LINK_KINDS,
    MAX_LIMIT,
    MAX_TTL_SECS,
    MEMORY_TYPES,
    SNIPPET_CHARS,
    SQLITE_INT_MAX,
    SQLITE_INT_MIN,
)

# A search's query runner: (match, n, within) -> (item, score) pairs, best first.
Run = Callable[[str, int, str | None], list[Any]]

log = logging.getLogger(__name__)

# Limits that keep one client from filling the disk or the memory of every reader: the
# content's size in UTF-8 bytes (the service's max_content_bytes, set with
# --max-content-bytes), the number and length of tags, and source and scope lengths.
DEFAULT_MAX_CONTENT_BYTES = 1024 * 1024
MAX_TAGS = 64
MAX_TAG_CHARS = 256
MAX_LABEL_CHARS = 1024
# A value echoed in an error message is cut after this many characters (with …) and
# nesting; an integer of more than wire.MAX_INTEGER_DIGITS digits is only counted.
SHOWN_MAX_CHARS = 200
SHOWN_MAX_DEPTH = 8
_SHOWN_INT_BOUND = 10**wire.MAX_INTEGER_DIGITS

PATCH_FIELDS = ("content", "tags", "scope", "ttl_secs")
UPDATE_FIELDS = ("id", *PATCH_FIELDS)
# How a relation reads from its to_id's side, in expansion.
INVERSE_KIND = {"relates_to": "relates_to", "supersedes": "superseded_by", "caused_by": "caused"}
SEARCH_MODE_KEYWORD = "keyword"
SEARCH_MODE_HYBRID = "hybrid"
# Hybrid search: each leg keeps min(LEG_FACTOR x limit, MAX_LEG) candidates, and a memory
# at 1-based rank r in a leg scores 1 / (RRF_K + r).
LEG_FACTOR = 4
MAX_LEG = 800
RRF_K = 60
# The OR-of-words retry leaves out words whose bm25 IDF is at most PRUNE_MAX_IDF (words in
# more than about 44% of rows: "the", "we", ...) when the other words alone fill the page
# with rows that the left-out words could not outscore (see ``_pruned``). Below
# PRUNE_MIN_ROWS memories every word is searched: there that is as fast or faster (bench
# corpus, in process, p50 of 200 questions: 3.0 against 3.8-5.2 ms at 1,000 memories,
# 6.6 against 5.7-6.2 at 2,000, 18 against 8.5-12 at 5,000).
PRUNE_MAX_IDF = 0.25
PRUNE_MIN_ROWS = 2_000
# On a file of more than PRUNE_EXACT_ROWS memories, when the words kept are found in more
# than PRUNE_SCORED_SHARE of the rows in all (counted per word), bm25 is computed only for
# the rows that match the rarest of them (the rarest word, and the next while their rows
# stay within that share): the other words still count in those rows' scores, but a row
# matching none of the rarest words is not ranked. This cuts a question's cost on a large
# file (the rarest word alone can still be in many rows), at the price of a page that can
# differ from the full query's (measured in bench/pruning.py; see the README). Up to
# PRUNE_EXACT_ROWS memories the answer is always the full query's.
PRUNE_EXACT_ROWS = 20_000
PRUNE_SCORED_SHARE = 0.1
# One query term adds at most idf * (k1 + 1) to a row's bm25 score.
BM25_TERM_MAX = BM25_K1 + 1
# When rows past a pruned page nearly tie with its last ones, this many more rows are
# scored with the left-out words added back (see MemoryService._pruned).
PRUNE_RESCORE_ROWS = 200
# A search's reads stop after this long, answered "query is too expensive" (the shape of a
# query is bounded first, in fts.check_cost): an ordinary question takes 30 ms (p50, 66 ms
# p99) at 100,000 memories, and a REST worker is free again within this.
SEARCH_BUDGET_SECS = 2.0
# Pending rows the sweep embeds per tick (one Ollama request), and reembed per batch.
BACKFILL_BATCH_ROWS = 128
REEMBED_BATCH_ROWS = 64
# Import: records per write transaction; a header this far ahead of our clock gets a warning.
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
# An import's report gains these two counts when secrets were redacted in rows it wrote.
REDACTION_COUNTS = ("secrets redacted", "memories redacted")
IMPORT_OUTCOME = {
    "imported": "imported",
    "duplicate": "skipped duplicates",
    "expired": "skipped expired",
}


# -- argument checks: one function per kind of value, one message format ------------------


def _shown(value: Any) -> str:
    """A value as the client sent it, for error messages: ``"5"``, ``true``, ``[1.5]``.

    Safe for anything, since it is sent back: cut after SHOWN_MAX_CHARS characters, lone
    surrogates escaped (``"\\ud800"``), an integer too long to print counted (``an integer
    of 5000 digits``), nesting cut after SHOWN_MAX_DEPTH levels. Only what is shown is walked.
    """
    text = ""
    for part in _parts(value, SHOWN_MAX_DEPTH):
        text += part
        if len(text) > SHOWN_MAX_CHARS:
            return text[:SHOWN_MAX_CHARS] + "…"
    return text


def _parts(value: Any, depth: int) -> Iterator[str]:
    """``value`` as JSON text, in pieces (see _shown)."""
    if isinstance(value, str):
        yield wire.printable(json.dumps(value[: SHOWN_MAX_CHARS + 1], ensure_ascii=False))
    elif value is None or isinstance(value, bool | float):
        yield json.dumps(value)
    elif isinstance(value, int):
        yield str(value) if -_SHOWN_INT_BOUND < value < _SHOWN_INT_BOUND else _counted(value)
    elif isinstance(value, wire.LongInteger):
        yield f"an integer of {value.digits} digits"
    elif isinstance(value, Mapping | list | tuple):
        mapping = isinstance(value, Mapping)
        yield "{" if mapping else "["
        for position, item in enumerate(value.items() if mapping else value):
            if depth <= 1:
                yield "…"
                break
            yield ", " if position else ""
            if mapping:
                yield from _parts(item[0], depth - 1)
                yield ": "
                item = item[1]
            yield from _parts(item, depth - 1)
        yield "}" if mapping else "]"
    else:  # not from JSON: an in-process caller's object
        yield wire.printable(repr(value)[: SHOWN_MAX_CHARS + 1])


def _counted(value: int) -> str:
    """``an integer of N digits``, without printing it (str() refuses over 4,300 digits)."""
    magnitude = abs(value)
    estimate = int(magnitude.bit_length() * math.log10(2))  # the count is this or one more
    return f"an integer of {estimate + (magnitude >= 10**estimate)} digits"


def _unicode(value: str, name: str, where: str = "") -> str:
    """``value``, if it is Unicode text: a lone surrogate (JSON's ``"\\ud800"``) can be
    neither stored nor sent back."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidArgument(
                f"{name} must be valid Unicode text "
                f"(got a lone surrogate at index {exc.start}{where})"
            ) from None
    return value


def _integer(
    args: Mapping[str, Any],
    name: str,
    low: int,
    high: int,
    *,
    required: bool = False,
) -> int | None:
    """An integer within [low, high]; None when absent or null. Never coerced."""
    value = args.get(name)
    if value is None:
        if required:
            raise InvalidType(f"{name} is required")
        return None
    if isinstance(value, wire.LongInteger):  # an integer, too long for any range
        raise InvalidArgument(f"{name} must be between {low} and {high} (got {_shown(value)})")
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidType(f"{name} must be an integer (got {_shown(value)})")
    if not low <= value <= high:
        raise InvalidArgument(f"{name} must be between {low} and {high} (got {_shown(value)})")
    return value


def _memory_id(args: Mapping[str, Any], name: str = "id") -> int:
    value = _integer(args, name, SQLITE_INT_MIN, SQLITE_INT_MAX, required=True)
    assert value is not None
    return value


def _limit(args: Mapping[str, Any], default: int | None) -> int | None:
    value = _integer(args, "limit", 1, MAX_LIMIT)
    return default if value is None else value


def _ttl(args: Mapping[str, Any]) -> int | None:
    return _integer(args, "ttl_secs", 1, MAX_TTL_SECS)


def _optional_string(args: Mapping[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidType(f"{name} must be a string (got {_shown(value)})")
    return _unicode(value, name)


def _required_string(args: Mapping[str, Any], name: str) -> str:
    if args.get(name) is None:
        raise InvalidType(f"{name} is required")
    value = _optional_string(args, name)
    assert value is not None
    return value


def _content(value: Any, max_bytes: int) -> str:
    if value is not None and not isinstance(value, str):
        raise InvalidType(f"content must be a non-empty string (got {_shown(value)})")
    if value is None or not value.strip():  # null: "never null or empty", one message for both
        raise InvalidArgument("content must be a non-empty string")
    _unicode(value, "content")
    if len(value) > max_bytes // 4:  # a char is at most 4 bytes: count only when it may matter
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise InvalidArgument(
                f"content must be at most {max_bytes} bytes of UTF-8 (got {size}); "
                "the limit is set with --max-content-bytes"
            )
    return value


def _label(args: Mapping[str, Any], name: str) -> str | None:
    """source and scope: optional strings of at most MAX_LABEL_CHARS characters."""
    value = _optional_string(args, name)
    if value is not None and len(value) > MAX_LABEL_CHARS:
        raise InvalidArgument(
            f"{name} must be at most {MAX_LABEL_CHARS} characters (got {len(value)})"
        )
    return value


def _memory_type(args: Mapping[str, Any], *, required: bool) -> str | None:
    value = _required_string(args, "type") if required else _optional_string(args, "type")
    if value is not None and value not in MEMORY_TYPES:
        raise InvalidArgument(
            f"invalid memory type '{value}' (expected one of {', '.join(MEMORY_TYPES)})",
            prefixed=False,
        )
    return value


def _tags(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise InvalidType(f"tags must be a list of strings (got {_shown(value)})")
    if len(value) > MAX_TAGS:
        raise InvalidArgument(f"tags must hold at most {MAX_TAGS} tags (got {len(value)})")
    for position, tag in enumerate(value):
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidArgument(
                f"each tag must be at most {MAX_TAG_CHARS} characters "
                f"(got {len(tag)} in tag {position})"
            )
        _unicode(tag, "each tag", f" in tag {position}")
    return value


def _mapping(args: Any) -> Mapping[str, Any]:
    if args is None:
        return {}
    if not isinstance(args, Mapping):
        raise InvalidType(f"arguments must be an object (got {_shown(args)})")
    return args


def _kind(args: Mapping[str, Any]) -> str:
    value = args.get("kind")
    if value is None:
        raise InvalidType("kind is required")
    if not isinstance(value, str):
        raise InvalidType(f"kind must be a string (got {_shown(value)})")
    if value not in LINK_KINDS:
        _unicode(value, "kind")
        raise InvalidArgument(f"kind must be one of {', '.join(LINK_KINDS)} (got '{value}')")
    return value


def _flag(args: Mapping[str, Any], name: str) -> bool:
    value = args.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidType(f"{name} must be a boolean (got {_shown(value)})")
    return value


def _edge(args: Mapping[str, Any]) -> tuple[int, int, str, int, int]:
    """The request's ids and kind, and the edge as stored: relates_to smaller id first."""
    from_id = _memory_id(args, "from_id")
    to_id = _memory_id(args, "to_id")
    kind = _kind(args)
    a, b = (min(from_id, to_id), max(from_id, to_id)) if kind == "relates_to" else (from_id, to_id)
    return from_id, to_id, kind, a, b


def _encodable(name: str, value: str, tag: int | None = None) -> str:
    """Text UTF-8 can carry, as SQLite stores it: a lone surrogate (JSON can spell one,
    ``"\\ud800"``) has no encoding, and the driver would refuse it at the write. ``tag``:
    the value's position in the list ``name``."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        where = "" if tag is None else f" in tag {tag}"
        raise InvalidArgument(
            f"{name} must be valid Unicode, without lone surrogates "
            f"(got \\u{ord(value[exc.start]):04x} at character {exc.start}{where})"
        ) from None
    return value


def check_import_record(record: Mapping[str, Any], max_content_bytes: int) -> None:
    """Refuse in a record of an export file what SQLite cannot store (integers beyond 64
    bits, text UTF-8 cannot encode) and what a store would refuse (the same limits).

    The reader calls this in its first pass, before the database is opened, once the
    record's fields have their JSON types; it names the line.
    """
    for name, value in record.items():  # by exact type: an import checks 100,000s of these
        kind = type(value)
        if kind is str:
            _encodable(name, value)
        elif kind is int:
            if not SQLITE_INT_MIN <= value <= SQLITE_INT_MAX:
                _integer(record, name, SQLITE_INT_MIN, SQLITE_INT_MAX)  # its message
        elif kind is list:
            for position, tag in enumerate(value):
                _encodable(name, tag, position)
    if record["record"] == "memory":
        _memory_type(record, required=True)
        _content(record["content"], max_content_bytes)
        _tags(record["tags"])
        _label(record, "source")
        _label(record, "scope")
    elif record["record"] == "link":
        _kind(record)


def jsonl_reader(path: Any, max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES) -> jsonl.Reader:
    """The strict reader of an export file, refusing what this service's stores refuse."""
    return jsonl.Reader(path, lambda record: check_import_record(record, max_content_bytes))


def snippet(content: str) -> str:
    """The first SNIPPET_CHARS characters (code points, not glyphs), with … when cut."""
    return content if len(content) <= SNIPPET_CHARS else content[:SNIPPET_CHARS] + "…"


def rrf(rankings: list[list[int]]) -> dict[int, float]:
    """Reciprocal rank fusion: the sum over rankings of 1 / (RRF_K + rank), ranks from 1."""
    fused: dict[int, float] = defaultdict(float)
    for ranking in rankings:
        for rank, memory_id in enumerate(ranking, start=1):
            fused[memory_id] += 1.0 / (RRF_K + rank)
    return dict(fused)


def _not_found(memory_id: int, flag: str) -> dict[str, Any]:
    return {"id": memory_id, flag: False, "reason": "not_found"}


def _rarest(kept: list[str], hits: Mapping[str, int], budget: float) -> str | None:
    """The OR of the rarest kept words: the rarest found, and more while their rows number
    at most ``budget``; None when that is all of them, or their rows all fit."""
    rarest = sorted(set(kept), key=lambda w: (hits[w], w))
    if sum(hits[w] for w in rarest) <= budget:
        return None
    chosen, total = [], 0
    for word in rarest:
        if total and total + hits[word] > budget:
            break
        chosen.append(word)
        total += hits[word]
    return fts.or_of(chosen) if len(chosen) < len(rarest) else None


def _tally(redacted: list[int], secrets: list[int], outcomes: list[tuple[str, Any]]) -> None:
    """Add an import batch's secrets and memories redacted, counting only the rows written."""
    for found, (outcome, _) in zip(secrets, outcomes, strict=True):
        if found and outcome == "imported":
            redacted[0] += found
            redacted[1] += 1


def _with_redactions(report: dict[str, int], secrets: int, memories: int) -> dict[str, int]:
    """An import's report, plus how many secrets were redacted in how many of the memories
    written, when any were (REDACTION_COUNTS)."""
    if not secrets:
        return report
    return {**report, **dict(zip(REDACTION_COUNTS, (secrets, memories), strict=True))}


def _ident(item: Any) -> int:
    """A ranked item's id: a memory (keyword mode) or an id (the hybrid keyword leg)."""
    return item if isinstance(item, int) else item["id"]


class MemoryService:
    """One per process; safe to call from several threads (each call uses its own connection)."""

    def __init__(
        self,
        database: Database,
        clock: Callable[[], float] = time.time,
        embedder: Embedder | None = None,
        max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES,
        redact: bool = True,
    ) -> None:
        self.database = database
        self.max_content_bytes = max_content_bytes
        self.redact = redact
        self.repo = Repository(database.engine)
        self.embedder = embedder
        self._clock = clock
        self._mismatch_logged = False

    def close(self) -> None:
        self.repo.close()
        self.database.close()
        if self.embedder is not None:
            self.embedder.close()

    def now(self) -> int:
        return int(self._clock())

    @contextmanager
    def _storage(self, operation: str) -> Iterator[None]:
        """Turn an engine fault into the generic message; the detail goes to the log only."""
        try:
            yield
        except (sqlalchemy.exc.SQLAlchemyError, sqlean.Error) as exc:
            log.error("%s: storage error: %s", operation, getattr(exc, "orig", None) or exc)
            raise StorageError(operation) from exc

    def _redacted(self, content: str) -> tuple[str, list[str]]:
        """Content as it may be stored: secrets replaced by markers (unless redact is off),
        and the kinds replaced. Called after validation: the size limit is on what was sent."""
        return redact_secrets(content) if self.redact else (content, [])

    def _redact_records(self, records: list[dict[str, Any]]) -> list[int]:
        """Redact import records in place; per record, how many secrets were replaced."""
        found = []
        for record in records:
            record["content"], kinds = self._redacted(record["content"])
            found.append(len(kinds))
        return found

    # -- operations -----------------------------------------------------------------------

    def store(self, args: Any) -> dict[str, Any]:
        args = _mapping(args)
        if args.get("content") is None:
            raise InvalidType("content is required")
        content = _content(args["content"], self.max_content_bytes)
        memory_type = _memory_type(args, required=True)
        assert memory_type is not None
        tags = _tags(args.get("tags"))
        source = _label(args, "source")
        scope = _label(args, "scope")
        ttl = _ttl(args)
        content, redacted = self._redacted(content)
        embedding = self._embed_document(content)  # before the write lock, never under it
        now = self.now()
        with self._storage("store"):
            memory_id = self.repo.insert_memory(
                memory_type=memory_type,
                content=content,
                tags=tags,
                source=source,
                scope=scope,
                now=now,
                expires_at=None if ttl is None else now + ttl,
                embedding=embedding,
            )
        return {"id": memory_id, "redacted": redacted} if redacted else {"id": memory_id}

    def search(self, args: Any) -> dict[str, Any]:
        args = _mapping(args)
        query = _required_string(args, "query")
        fts.check_cost(query)
        memory_type = _memory_type(args, required=False)
        tag = _optional_string(args, "tag")
        scope = _optional_string(args, "scope")
        limit = _limit(args, DEFAULT_SEARCH_LIMIT)
        assert limit is not None
        expand = _flag(args, "expand_links")
        filters = {"memory_type": memory_type, "tag": tag, "scope": scope}
        embedding = None if self.embedder is None else self.embedder.embed_query(query)
        now = self.now()
        with self._storage("search"), self._budget(query):
            mode, results = SEARCH_MODE_HYBRID, None
            if embedding is not None:
                results = self._hybrid(query, embedding, now, limit, filters)
            if results is None:  # Ollama is not there, or the database has another model's
                mode, results = SEARCH_MODE_KEYWORD, self._keyword(query, now, limit, filters)
            if expand:
                self._expand(results)
            # The results only, not neighbours; last, so that a search out of time writes nothing.
            self._bump([r["id"] for r in results], now)
        return {"search_mode": mode, "results": results}

    @contextmanager
    def _budget(self, query: str) -> Iterator[None]:
        """The search's reads within SEARCH_BUDGET_SECS, or an invalid argument."""
        try:
            with self.repo.deadline(SEARCH_BUDGET_SECS):
                yield
        except DeadlinePassed:
            raise InvalidArgument(
                f"query is too expensive: a search must finish within {SEARCH_BUDGET_SECS:g} s"
                f" (got {_shown(query[:80] + ('...' if len(query) > 80 else ''))})"
            ) from None

    def _bump(self, ids: list[int], now: int) -> None:
        """Record the use of results; a file that takes no writes (full, read-only) loses
        only this, not the answer."""
        try:
            self.repo.bump(ids, now)
        except (sqlalchemy.exc.SQLAlchemyError, sqlean.Error) as exc:
            detail = getattr(exc, "orig", None) or exc
            log.error("search: answered, but could not record the use of its results: %s", detail)

    def _expand(self, results: list[dict[str, Any]]) -> None:
        """Attach each result's 1-hop relations (one query for the whole page; a pure read)."""
        related: dict[int, list[dict[str, Any]]] = {r["id"]: [] for r in results}
        for edge in self.repo.neighbours(list(related)):
            out = edge["direction"] == "out"
            related[edge["self"]].append(
                {
                    "id": edge["id"],
                    "kind": edge["kind"] if out else INVERSE_KIND[edge["kind"]],
                    "direction": edge["direction"],
                    "type": edge["type"],
                    "snippet": snippet(edge["content"]),
                    "tags": edge["tags"],
                }
            )
        for result in results:
            result["related"] = related[result["id"]]

    def _match(self, query: str, run: Run, limit: int, ceiling: float) -> list[Any]:
        """Raw FTS5 first; if it cannot parse, once more as OR-ed words; wordless is empty.

        ``run(match, n, within)`` returns (item, score) pairs best first, at most n of them
        (only rows also matching ``within``, unless it is None); a row that matches no word
        of the query at all could still score ``ceiling`` (its decay).
        """
        try:
            return run(query, limit, None)
        except FtsQueryError as exc:
            log.debug("query %r is not FTS5 syntax (%s); searching for its words", query, exc)
        words = fts.words(query)
        if not words:
            return []
        try:
            found = self._pruned(words, run, limit, ceiling)
            return found if found is not None else run(fts.or_of(words), limit, None)
        except FtsQueryError as exc:
            raise exc.error from None  # quoted words always parse: the database is at fault

    def _pruned(self, words: list[str], run: Run, limit: int, ceiling: float) -> list[Any] | None:
        """The OR of the words that carry weight decides the page, when it can; else None.

        Words of IDF at most PRUNE_MAX_IDF are left out and added back to the best rows
        (see ``_decided``). When the words kept match many rows, first only the rows that
        match their rarest words are scored (``_rarest``), then, if those cannot decide the
        page, every row the kept words match.
        """
        if len(set(words)) < 2:
            return None
        rows, hits = self.repo.word_rows(words, self._clock(), min_rows=PRUNE_MIN_ROWS)
        if rows < PRUNE_MIN_ROWS:
            return None
        weights: dict[str, float] = {}  # left-out word -> its IDF times its repeats
        for word in words:
            idf = bm25_idf(rows, hits[word])
            if idf <= PRUNE_MAX_IDF:
                weights[word] = weights.get(word, 0.0) + idf
        kept = [w for w in words if w not in weights]
        if not kept:
            return None
        match = fts.or_of(kept)
        within = None
        if rows > PRUNE_EXACT_ROWS:
            within = _rarest(kept, hits, PRUNE_SCORED_SHARE * rows)
        if within is not None:
            page = self._decided(match, within, run, limit, ceiling, weights)
            if page is not None:
                return page
        if not weights:
            return None  # without a restriction, this would be the full query
        return self._decided(match, None, run, limit, ceiling, weights)

    def _decided(
        self,
        match: str,
        within: str | None,
        run: Run,
        limit: int,
        ceiling: float,
        weights: dict[str, float],
    ) -> list[Any] | None:
        """The page of ``match`` with the left-out words (``weights``) added back, or None.

        The left-out words add at most ``bound`` (BM25_TERM_MAX x their IDFs) to a row's
        score: a row past the best ``n`` scores at most the next one's score plus that, and
        a row matching only those words its decay (``ceiling``) plus that. The best ``n``
        rows get the left-out words added back (bm25's own arithmetic,
        repository.term_scores); when the ``limit``-th of them still beats every row past
        them, it is the page, in the full query's order. First with n = limit; when rows
        past the page nearly tie with it, once more with PRUNE_RESCORE_ROWS more rows.
        """
        if not weights:
            found = run(match, limit, within)
            return found if len(found) >= limit else None
        bound = BM25_TERM_MAX * sum(weights.values())
        for n in (limit, limit + PRUNE_RESCORE_ROWS):
            found = run(match, n + 1, within)
            if len(found) < limit:
                return None  # rows matching only the left-out words are needed to fill it
            added = self.repo.term_scores([_ident(item) for item, _ in found[:n]], weights)
            exact = sorted(
                ((item, score + added[_ident(item)]) for item, score in found[:n]),
                key=lambda pair: (-pair[1], _ident(pair[0])),
            )
            if exact[limit - 1][1] > max([ceiling] + [s for _, s in found[n:]]) + bound:
                return exact[:limit]
            if len(found) <= n:
                return None  # every match was seen: only ceiling stands in the way
        return None

    def _keyword(
        self, query: str, now: int, limit: int, filters: dict[str, Any]
    ) -> list[dict[str, Any]]:
        def run(match: str, n: int, within: str | None) -> list[tuple[dict[str, Any], float]]:
            return self.repo.keyword_search(match, now=now, limit=n, within=within, **filters)

        return [memory for memory, _ in self._match(query, run, limit, ceiling=1.0)]

    def _hybrid(
        self, query: str, embedding: Embedding, now: int, limit: int, filters: dict[str, Any]
    ) -> list[dict[str, Any]] | None:
        """RRF of the bm25 and the cosine rankings, times decay; None if the pin differs."""
        leg = min(LEG_FACTOR * limit, MAX_LEG)
        nearest = self.repo.vector_ranking(embedding, limit=leg)
        if nearest is None:
            self._log_mismatch(embedding.pin)
            return None

        def run(match: str, n: int, within: str | None) -> list[tuple[int, float]]:
            return self.repo.keyword_ranking(match, limit=n, within=within, **filters)

        keyword = [memory_id for memory_id, _ in self._match(query, run, leg, ceiling=0.0)]
        rows = self.repo.rows(list({*keyword, *nearest}), now=now, **filters)
        # The vector leg is filtered after its cut (rows holds only rows that pass); a row
        # forgotten between the reads drops out of both legs.
        fused = rrf([[i for i in keyword if i in rows], [i for i in nearest if i in rows]])
        best = sorted(fused, key=lambda i: (-fused[i] * rows[i]["decay_score"], i))
        return [rows[memory_id] for memory_id in best[:limit]]

    def list(self, args: Any) -> list[dict[str, Any]]:
        return list(self.iter_list(args))

    def iter_list(self, args: Any) -> Generator[dict[str, Any], None, None]:
        """``list``'s rows one at a time, so a transport can send an unlimited list without
        holding it: bad arguments raise here, storage faults (StorageError) while iterating.
        """
        args = _mapping(args)
        memory_type = _memory_type(args, required=False)
        tag = _optional_string(args, "tag")
        scope = _optional_string(args, "scope")
        limit = _limit(args, None)
        expand = _flag(args, "expand_links")
        if expand and limit is None:
            raise InvalidArgument(
                "limit is required when expand_links is true; "
                f"pass a limit between 1 and {MAX_LIMIT}"
            )
        filters = {"memory_type": memory_type, "tag": tag, "scope": scope, "limit": limit}
        return self._listed(filters, expand)

    def _listed(
        self, filters: dict[str, Any], expand: bool
    ) -> Generator[dict[str, Any], None, None]:
        with self._storage("list"):
            if not expand:
                yield from self.repo.iter_memories(**filters)
                return
            found = self.repo.list_memories(**filters)  # bounded: expand needs a limit
            self._expand(found)
        yield from found

    def update(self, args: Any, *, path_id: Any = None) -> dict[str, Any]:
        """A JSON merge-patch: omitted fields stay, null clears where clearing is legal.

        ``path_id`` is the id taken from a URL (REST); the patch then carries no id field.
        """
        args = _mapping(args)
        allowed = UPDATE_FIELDS if path_id is None else PATCH_FIELDS
        for name in args:
            if name not in allowed:
                raise UnknownField(wire.printable(str(name))[:SHOWN_MAX_CHARS], allowed)
        memory_id = _memory_id(args if path_id is None else {"id": path_id})
        if not any(name in args for name in PATCH_FIELDS):
            raise InvalidArgument("at least one of content, tags, scope, ttl_secs must be provided")
        changes: dict[str, Any] = {}
        redacted: list[str] = []
        if "content" in args:
            changes["content"], redacted = self._redacted(
                _content(args["content"], self.max_content_bytes)
            )
        if "tags" in args:
            changes["tags"] = _tags(args["tags"])
        if "scope" in args:
            changes["scope"] = _label(args, "scope")
        ttl = _ttl(args)
        embedding = self._embed_document(changes["content"]) if "content" in changes else None
        now = self.now()
        if "ttl_secs" in args:
            changes["expires_at"] = None if ttl is None else now + ttl
        with self._storage("update"):
            updated = self.repo.update_memory(memory_id, changes, now, embedding)
        if updated is None:
            return _not_found(memory_id, "updated")
        return {**updated, "redacted": redacted} if redacted else updated

    def forget(self, args: Any) -> dict[str, Any]:
        memory_id = _memory_id(_mapping(args))
        with self._storage("forget"):
            deleted = self.repo.delete_memory(memory_id)
        return {"id": memory_id, "deleted": True} if deleted else _not_found(memory_id, "deleted")

    def link(self, args: Any) -> dict[str, Any]:
        args = _mapping(args)
        from_id, to_id, kind, a, b = _edge(args)
        if from_id == to_id:
            raise InvalidArgument(f"from_id and to_id must differ (got {from_id})")
        echo = {"from_id": from_id, "to_id": to_id, "kind": kind}
        with self._storage("link"):
            missing = self.repo.insert_link(a, b, kind, self.now(), ids=(from_id, to_id))
        if missing is not None:
            return {**echo, "linked": False, "reason": "not_found", "missing_id": missing}
        return {**echo, "linked": True}

    def unlink(self, args: Any) -> dict[str, Any]:
        """Directed kinds must match the stored direction; relates_to goes from either end."""
        from_id, to_id, kind, a, b = _edge(_mapping(args))
        echo = {"from_id": from_id, "to_id": to_id, "kind": kind}
        with self._storage("unlink"):
            removed = self.repo.delete_link(a, b, kind)
        return (
            {**echo, "unlinked": True}
            if removed
            else {**echo, "unlinked": False, "reason": "not_found"}
        )

    def health(self) -> dict[str, Any]:
        """Liveness: the store answers a read; and whether embeddings are available."""
        with self._storage("health"):
            self.repo.ping()
        return {
            "status": "ok",
            "embedder": UNREACHABLE if self.embedder is None else self.embedder.status(),
            "schema_version": self.database.schema_version,
            "version": __version__,
        }

    def sweep(self, pause: Pause | None = None, decay_every: int | None = None) -> dict[str, Any]:
        """TTL expiry, decay materialization, then a batch of backfill.

        A failing step is logged and skipped; the next step and the next tick still run.
        ``longest_hold_ms`` is the longest any of the sweep's transactions held the write
        lock; ``pause`` runs between two of them (see Repository._in_batches). With
        ``decay_every``, decay scores are left alone if any process on the file rewrote
        them less than that many seconds ago: every server starting on a large file would
        otherwise rewrite every row (14 s of batches at 1,000,000 memories).
        """
        report: dict[str, Any] = {"expired": 0, "decayed": 0, "embedded": 0}
        longest = 0.0
        now = self.now()
        batched: list[tuple[str, Callable[[int, Pause | None], tuple[int, float]]]] = [
            ("expired", self.repo.delete_expired)
        ]
        if decay_every is None or not self._decay_is_recent(now, decay_every):
            batched.append(("decayed", self.repo.materialize_decay))
        stopped = False

        def paused() -> bool:  # remembers a stop, so that the remaining steps are skipped
            nonlocal stopped
            stopped = stopped or (pause is not None and pause())
            return stopped

        for key, step in batched:
            if stopped:
                break
            try:
                with self._storage("sweep"):
                    report[key], held = step(now, paused)
                    longest = max(longest, held)
            except StorageError:
                pass  # already logged with its detail; the next step and tick still run
        try:
            if not stopped:
                with self._storage("sweep"):
                    report["embedded"] = self.backfill()
        except StorageError:
            pass
        report["longest_hold_ms"] = round(longest * 1e3, 1)
        return report

    def _decay_is_recent(self, now: int, within: int) -> bool:
        try:
            with self._storage("sweep"):
                last = self.repo.decay_materialized_at()
        except StorageError:
            return False  # logged; the step then runs and reports its own fault
        return last is not None and 0 <= now - last < within

    # -- embeddings -----------------------------------------------------------------------

    def _embed_document(self, content: str) -> Embedding | None:
        if self.embedder is None:
            return None
        made = self.embedder.embed_documents([content])
        return made[0] if made else None

    def _configured_differs(self, pin: Pin | None) -> bool:
        """The database holds vectors of another model or prefix scheme than configured."""
        if pin is None or self.embedder is None:
            return False
        return (pin.model, pin.prefixes) != (self.embedder.model, self.embedder.prefixes)

    def _log_mismatch(self, configured: Pin | None = None) -> None:
        if self._mismatch_logged or self.embedder is None:
            return
        self._mismatch_logged = True
        pin = self.repo.pin()
        described = configured.describe() if configured else self.embedder.model
        log.warning(
            "this database's vectors were made with %s, not %s: searches stay keyword-only "
            "until you run `agent-memory --embed-model %s reembed` (or start with "
            "--embed-model %s)",
            pin.describe() if pin else "another model",
            described,
            self.embedder.model,
            pin.model if pin else "MODEL",
        )

    def backfill(self, batch: int = BACKFILL_BATCH_ROWS) -> int:
        """Embed up to ``batch`` pending rows; how many got a vector (0 if Ollama is not there)."""
        if self.embedder is None:
            return 0
        if self._configured_differs(self.repo.pin()):
            self._log_mismatch()
            return 0
        return self._embed_pending(batch) or 0

    def _embed_pending(self, batch: int) -> int | None:
        """One batch of pending rows: how many got a vector; None when Ollama failed.

        Ollama is asked with no lock held; the write then skips any row edited or forgotten
        while its vector was being made, so an old text's vector never lands on new content.
        """
        assert self.embedder is not None
        todo = self.repo.pending(batch)
        if not todo:
            return 0
        made = self.embedder.embed_documents([content for _, content in todo], probe=True)
        if made is None:
            return None
        return self.repo.write_vectors(
            [(memory_id, content, e) for (memory_id, content), e in zip(todo, made, strict=True)]
        )

    def reembed(
        self,
        *,
        everything: bool = False,
        batch: int = REEMBED_BATCH_ROWS,
        progress: Callable[[int, int], None] = lambda done, total: None,
    ) -> tuple[int, Pin]:
        """Give every memory a vector of the configured model; returns (embedded, pin).

        A database pinned to another model (or ``everything``) is re-pinned first, which
        marks every row pending; then pending rows are embedded batch by batch, each batch
        committed. An interrupted run therefore resumes where it stopped: the pin already
        matches, and only the rows still pending are left. ``progress(done, total)`` is
        called after each batch.
        """
        if self.embedder is None:
            raise ValueError("reembed needs an embedder")
        probe = self.embedder.embed_documents(["agent-memory"], probe=True)
        if not probe:
            raise EmbedderUnavailable(self.embedder.model, self.embedder.url)
        pin = probe[0].pin
        with self._storage("reembed"):
            stored = self.repo.pin()
            if everything or (stored is not None and stored != pin):
                self.repo.repin(pin)
                log.info("re-pinned to %s (was %s)", pin.describe(), stored and stored.describe())
            total, pending = self.repo.embedding_counts()
        embedded = 0
        progress(total - pending, total)
        while pending:
            with self._storage("reembed"):
                done = self._embed_pending(batch)
                if done is None:
                    raise EmbedderUnavailable(self.embedder.model, self.embedder.url, embedded)
                embedded += done
                total, pending = self.repo.embedding_counts()
            progress(total - pending, total)
        return embedded, pin

    def report_embedder(self) -> str:
        """Log, once at start, whether searches can be hybrid and what to do if not."""
        if self.embedder is None:
            return UNREACHABLE
        status = self.embedder.status()
        where = f"{self.embedder.model} at {self.embedder.url}"
        if status == READY:
            log.info("embedder ready: %s; searches are hybrid", where)
        elif status == MODEL_MISSING:
            log.warning(
                "Ollama has no model %s (run `ollama pull %s`): searches are keyword-only",
                where,
                self.embedder.model,
            )
        else:
            log.warning(
                "Ollama unreachable for %s: searches are keyword-only; stores are queued "
                "for embedding until it answers",
                where,
            )
        with self._storage("sweep"):
            if self._configured_differs(self.repo.pin()):
                self._log_mismatch()
        return status

    # -- export ---------------------------------------------------------------------------

    def export(self, write: Callable[[str], None], embed_model: str) -> tuple[int, int]:
        """Write the whole database as JSONL v1 lines through ``write``; (memories, links).

        One read snapshot, streamed: the header's counts match the records, and memory use
        does not grow with the database. Without a pin (nothing embedded yet) the header
        names ``embed_model``, the configured model, and its dimension when known (else 0).
        """
        with self._storage("export"), self.repo.snapshot() as snap:
            rows, links = snap.counts()
            pin = snap.pin()
            model = pin.model if pin else embed_model
            dimension = pin.dimension if pin else KNOWN_DIMENSIONS.get(model.split(":")[0], 0)
            write(
                jsonl.line(
                    jsonl.header(
                        exported_at=self.now(),
                        embedding_model=model,
                        embedding_dim=dimension,
                        schema_version=self.database.schema_version,
                        agent_memory_version=__version__,
                        exported_rows=rows,
                        exported_links=links,
                    )
                )
            )
            for row in snap.memories():
                write(jsonl.line(jsonl.memory(row)))
            for edge in snap.links():
                write(jsonl.line(jsonl.link(*edge)))
        return rows, links

    # -- import ---------------------------------------------------------------------------

    def import_jsonl(
        self,
        reader: jsonl.Reader,
        progress: Callable[[int, int], None] = lambda done, total: None,
    ) -> dict[str, int]:
        """Import a file the reader has already checked: one transaction per batch.

        Keys map to the new rows' ids (or to the row a duplicate collapsed onto), never to
        ids that merely equal them. Rows land pending embedding; Ollama is not contacted.
        Batches keep the write lock short for every other writer, and a kill -9 leaves
        whole batches that a re-run completes. Any exception takes out again what this run
        had committed (see _take_out); an error is then raised as StorageError (its detail
        logged), an interrupt as itself.
        """
        header = reader.header
        assert header is not None, "call reader.check() first"
        now = self.now()
        if header["exported_at"] > now + CLOCK_SKEW_WARN_SECS:
            log.warning(
                "the file was exported at %d, %d s ahead of this machine's clock; importing "
                "anyway (check the clocks: created_at and expires_at are kept as written)",
                header["exported_at"],
                header["exported_at"] - now,
            )
        report = dict.fromkeys(IMPORT_COUNTS, 0)
        total = header["exported_rows"] + header["exported_links"]
        done = [0]
        redacted = [0, 0]  # secrets, memories: counted over the rows written
        ids: dict[int, int | None] = {}
        memories: list[dict[str, Any]] = []
        edges: list[tuple[int, int, str, int]] = []
        inserted: list[tuple[int, int]] = []  # (first id, last id) of each batch's new rows
        between_old: list[tuple[int, int, str]] = []  # new edges between rows not inserted

        def ours(memory_id: int) -> bool:
            at = bisect.bisect_right(inserted, (memory_id, SQLITE_INT_MAX)) - 1
            return at >= 0 and inserted[at][0] <= memory_id <= inserted[at][1]

        def flush_memories() -> None:
            secrets = self._redact_records(memories)  # the duplicate check sees the result
            outcomes = self.repo.import_memories(memories, now)
            new = [memory_id for outcome, memory_id in outcomes if outcome == "imported"]
            if new:  # a batch's new rows take consecutive ids, in ascending batches
                inserted.append((min(new), max(new)))
            for record, (outcome, memory_id) in zip(memories, outcomes, strict=True):
                ids[record["key"]] = memory_id
                report[IMPORT_OUTCOME[outcome]] += 1
            _tally(redacted, secrets, outcomes)
            done[0] += len(memories)
            progress(done[0], total)
            memories.clear()

        def flush_links() -> None:
            added = self.repo.import_links(edges)
            report["links imported"] += len(added)
            report["links skipped duplicates"] += len(edges) - len(added)
            between_old.extend(e for e in added if not (ours(e[0]) or ours(e[1])))
            done[0] += len(edges)
            progress(done[0], total)
            edges.clear()

        try:
            with self._storage("import"), self.repo.bulk():
                for record in reader.records():
                    if record["record"] == "memory":
                        memories.append(record)
                        if len(memories) >= IMPORT_BATCH_ROWS:
                            flush_memories()
                        continue
                    if memories:
                        flush_memories()
                    a, b = ids[record["from"]], ids[record["to"]]
                    if a is None or b is None or a == b:  # an end expired, or both collapsed
                        report["links dropped"] += 1
                        continue
                    if record["kind"] == "relates_to":
                        a, b = min(a, b), max(a, b)
                    edges.append((a, b, record["kind"], record["created_at"]))
                    if len(edges) >= IMPORT_BATCH_ROWS:
                        flush_links()
                if memories:
                    flush_memories()
                if edges:
                    flush_links()
                if report["imported"]:
                    self.repo.merge_index()
        except BaseException as exc:  # Ctrl-C too: then the interrupt goes on up
            self._take_out(inserted, between_old)
            if isinstance(exc, Exception) and not isinstance(exc, StorageError):
                log.error("import: %s: %s", type(exc).__name__, exc)
                raise StorageError("import") from exc
            raise
        return _with_redactions(report, *redacted)

    def _take_out(self, inserted: list[tuple[int, int]], edges: list[tuple[int, int, str]]) -> None:
        """Remove what a failed import had committed, in one transaction: its rows by id
        (AUTOINCREMENT never hands an id out twice, so these are its own) with their links,
        and the edges it added between rows that were there before. Logged either way: the
        fault may well persist, and then a re-run of the import completes it."""
        if not inserted and not edges:
            return
        rows = sum(last - first + 1 for first, last in inserted)
        try:
            with self._storage("import"):
                removed = self.repo.remove_imported(inserted, edges)
        except StorageError:
            log.error(
                "import: the %d memories and %d links it had written could not be taken out "
                "again; importing the same file once the fault is gone completes the import "
                "(what is already there is skipped as duplicates)",
                rows,
                len(edges),
            )
            return
        log.info("import: took out the %d memories it had written, and their links", removed)

    def import_gsd(self, items: list[gsd.Item], malformed: int, scope: str) -> dict[str, int]:
        """Store GSD STATE.md items; an item already present (same key) is skipped."""
        now = self.now()
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
        report = {"imported": 0, "skipped duplicates": 0, "malformed lines skipped": malformed}
        redacted = [0, 0]
        with self._storage("import"):
            for start in range(0, len(records), IMPORT_BATCH_ROWS):
                batch = records[start : start + IMPORT_BATCH_ROWS]
                secrets = self._redact_records(batch)
                outcomes = self.repo.import_memories(batch, now)
                for outcome, _ in outcomes:
                    report[IMPORT_OUTCOME[outcome]] += 1
                _tally(redacted, secrets, outcomes)
        return _with_redactions(report, *redacted)
