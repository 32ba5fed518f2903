"""A small semantic test set: developer memories, and questions about them in other words.

Why: keyword search (FTS5, porter stemming) cannot find a memory asked about in other words;
that is what the vector leg is for. Each paraphrase below shares no word with its target
memory once both are stemmed and case-folded (tests/slow/test_semantic_set.py proves it with FTS5
itself), so a hit can only come from meaning. Distractors sit on nearby topics and often do
share words with the questions, as real neighbours would. A few exact-term queries name a rare
identifier that only one memory holds: there keyword search must win, and the fused ranking
must put that memory first.

The texts are written as an agent would store them: a statement, the reason, the fix.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Memory:
    key: str
    type: str
    content: str


@dataclass(frozen=True)
class Query:
    query: str
    target: str  # a Memory.key
    also: tuple[str, ...] = ()  # other memories that answer it as well

    @property
    def answers(self) -> tuple[str, ...]:
        """Every memory that answers the question, the target first."""
        return (self.target, *self.also)


TARGETS: tuple[Memory, ...] = (
    # DECISION
    Memory(
        "sqlite-only",
        "DECISION",
        "Chose SQLite in WAL mode as the only storage engine; Postgres was rejected because "
        "users install this as a single-file tool with no server to run.",
    ),
    Memory(
        "rrf",
        "DECISION",
        "Adopted Reciprocal Rank Fusion (k=60) to merge the FTS5 list with the vector list, "
        "instead of weighting raw scores, since BM25 and cosine values live on different scales.",
    ),
    Memory(
        "model-pin",
        "DECISION",
        "Decided to pin each database to one embedding model; switching models requires a full "
        "re-embed, because vectors from two models cannot be compared.",
    ),
    Memory(
        "archive-unused",
        "DECISION",
        "Memories older than 90 days that were never accessed get archived rather than deleted, "
        "so nothing an agent learned is lost for good.",
    ),
    Memory(
        "stdio-only",
        "DECISION",
        "Use the MCP stdio transport only; an HTTP/SSE transport was postponed until clients "
        "actually ask for remote access.",
    ),
    # PATTERN
    Memory(
        "backoff",
        "PATTERN",
        "Rate-limit retries: on HTTP 429 the client backs off exponentially (1s, 2s, 4s, capped "
        "at 60s) with jitter, up to 5 attempts.",
    ),
    Memory(
        "alembic",
        "PATTERN",
        "Every schema change ships as an Alembic migration; never edit the tables by hand, not "
        "even in tests.",
    ),
    Memory(
        "redaction",
        "PATTERN",
        "Secrets are redacted before a memory is written: API keys, tokens and passwords matching "
        "known patterns are replaced by [REDACTED].",
    ),
    Memory(
        "embed-outside-lock",
        "PATTERN",
        "Writes take the database lock only for the insert itself; embeddings are computed "
        "beforehand, outside the transaction.",
    ),
    Memory(
        "test-tmpdirs",
        "PATTERN",
        "Tests that spawn the server use a fresh temporary directory per test and a random free "
        "port; nothing touches the user's home.",
    ),
    # ERROR
    Memory(
        "db-locked",
        "ERROR",
        "sqlite3.OperationalError: database is locked, raised when two processes wrote at once "
        "without busy_timeout; fixed by setting busy_timeout=5000 on every connection.",
    ),
    Memory(
        "model-not-pulled",
        "ERROR",
        "Ollama returned 404 model not found because nomic-embed-text was never pulled; the "
        "server now reports model_missing instead of failing silently.",
    ),
    Memory(
        "stdin-hang",
        "ERROR",
        "Tests hung forever on CI: the child server process inherited stdin and waited for "
        "input; pass stdin=DEVNULL when spawning it.",
    ),
    Memory(
        "bom",
        "ERROR",
        "UnicodeDecodeError when importing JSONL exported on Windows: the file had a UTF-8 BOM; "
        "open it with encoding='utf-8-sig'.",
    ),
    Memory(
        "stale-index",
        "ERROR",
        "Search returned deleted memories: the in-memory vector index was never refreshed after "
        "another process removed rows.",
    ),
    # TODO
    Memory(
        "dry-run",
        "TODO",
        "TODO: add a --dry-run flag to the import command so users can preview what would be "
        "written.",
    ),
    Memory(
        "stats-per-type",
        "TODO",
        "TODO: expose memory counts per type in the stats tool output.",
    ),
    Memory(
        "windows",
        "TODO",
        "TODO: Windows support; paths, file locking and the console encoding all need work "
        "before we claim it.",
    ),
    Memory(
        "prune-backups",
        "TODO",
        "TODO: the nightly backup job should prune copies older than 30 days; the disk filled up "
        "twice.",
    ),
    Memory(
        "recall-1m",
        "TODO",
        "TODO: measure recall of the binary vector scan against exact search at 1M rows before "
        "making it the default.",
    ),
    # ARCHITECTURE
    Memory(
        "one-file",
        "ARCHITECTURE",
        "One SQLite file holds everything: memories, the FTS5 index and the sqlite-vec vectors, "
        "so a backup is a single file copy.",
    ),
    Memory(
        "service-layer",
        "ARCHITECTURE",
        "The MCP server and the REST daemon are thin adapters over one service layer; all "
        "validation lives in the service.",
    ),
    Memory(
        "hybrid-legs",
        "ARCHITECTURE",
        "Hybrid search runs the keyword leg and the vector leg independently, then fuses them; "
        "if the embedder is down, keyword results still come back.",
    ),
    Memory(
        "types-pinned",
        "ARCHITECTURE",
        "Each memory has a type (DECISION, PATTERN, ERROR, TODO, ARCHITECTURE, CONSTRAINT); "
        "pinned types never decay.",
    ),
    Memory(
        "vec0-same-tx",
        "ARCHITECTURE",
        "Vectors are stored in a vec0 virtual table keyed by memory id, next to the row they "
        "describe, written in the same transaction.",
    ),
    # CONSTRAINT
    Memory(
        "offline",
        "CONSTRAINT",
        "Must run fully offline: no model downloads at runtime, no telemetry, no network calls "
        "except the configured Ollama URL.",
    ),
    Memory(
        "python-311",
        "CONSTRAINT",
        "Python 3.11 is the minimum supported version; match statements and ExceptionGroup are "
        "allowed.",
    ),
    Memory(
        "size-cap",
        "CONSTRAINT",
        "A single memory's content is capped at 64 KiB; larger text is rejected with an error, "
        "never truncated silently.",
    ),
    Memory(
        "stdout-frames",
        "CONSTRAINT",
        "The stdout of the MCP server is reserved for JSON-RPC frames; all logging must go to "
        "stderr or the protocol breaks.",
    ),
    Memory(
        "licences",
        "CONSTRAINT",
        "Licences: only MIT, BSD or Apache-2.0 dependencies may be added; GPL code cannot be "
        "linked.",
    ),
)

PARAPHRASES: tuple[Query, ...] = (
    Query("why aren't we using MySQL or another hosted relational DB?", "sqlite-only"),
    Query("how do we combine keyword hits plus embedding hits into a single ordering?", "rrf"),
    Query("what breaks if I replace nomic by another encoder?", "model-pin"),
    Query("what happens to knowledge nobody has looked at in months?", "archive-unused"),
    Query("why can't tools connect over a network socket?", "stdio-only"),
    Query("how do we handle throttling?", "backoff"),
    Query("how should I add a column?", "alembic"),
    Query("do credentials ever end up stored on disk?", "redaction"),
    Query("does a slow Ollama call block other writers?", "embed-outside-lock"),
    Query("could running pytest mess with my own config or data?", "test-tmpdirs"),
    Query("concurrent saves from several agents fail with a contention message", "db-locked"),
    Query("what setup step did I skip? similarity lookups stay broken", "model-not-pulled"),
    Query("pipeline stalls indefinitely during a subprocess launch", "stdin-hang"),
    Query("loading dumps created under Microsoft's OS blows up immediately", "bom"),
    Query("something I forgot keeps showing up for a second agent", "stale-index"),
    Query(
        "check beforehand which entries loading JSONL will create, without committing", "dry-run"
    ),
    Query("show how many entries exist for each category", "stats-per-type"),
    Query("plans for running on Microsoft's operating system?", "windows"),
    Query("old snapshots keep eating storage space", "prune-backups"),
    Query("benchmark approximate nearest-neighbour accuracy on huge datasets", "recall-1m"),
    Query("what do I need to grab when migrating to another laptop?", "one-file"),
    Query("which component enforces argument rules for both APIs?", "service-layer"),
    Query("do lookups keep answering while Ollama cannot be reached?", "hybrid-legs"),
    Query("which categories are exempt from forgetting?", "types-pinned"),
    Query("where do embeddings physically live?", "vec0-same-tx"),
    Query("can it work on an air-gapped machine?", "offline"),
    Query("which CPython do we require at least?", "python-311"),
    Query("size limit for one entry", "size-cap"),
    Query("can I print debugging messages while serving agents?", "stdout-frames"),
    Query("which open-source terms are acceptable for third-party packages?", "licences"),
)

# Neighbours of the targets' topics: they share words with the questions, not their answers.
DISTRACTORS: tuple[Memory, ...] = tuple(
    Memory(f"d{i:02d}", kind, text)
    for i, (kind, text) in enumerate(
        (
            (
                "CONSTRAINT",
                "HTTP client timeouts: 1 s to connect and 10 s to read for every call to Ollama.",
            ),
            (
                "PATTERN",
                "Circuit breaker: after Ollama fails, skip it for 30 seconds instead of waiting on every request.",
            ),
            (
                "DECISION",
                "Postgres support was discussed for teams sharing one memory store; parked until someone asks.",
            ),
            (
                "ARCHITECTURE",
                "Keyword search uses FTS5 BM25 with the porter stemmer; results are ordered by bm25() ascending.",
            ),
            (
                "ARCHITECTURE",
                "Vector search uses cosine distance over 768-dimensional nomic-embed-text vectors.",
            ),
            (
                "PATTERN",
                "Expired memories (expires_at in the past) are deleted by the sweep every ten minutes.",
            ),
            (
                "CONSTRAINT",
                "The REST daemon listens on 127.0.0.1 only and requires a bearer token.",
            ),
            (
                "PATTERN",
                "Database migrations run automatically at startup when the schema version is behind.",
            ),
            ("CONSTRAINT", "Log lines never include memory content, only ids and sizes."),
            (
                "DECISION",
                "SQLite connections use WAL mode and synchronous=NORMAL for write throughput.",
            ),
            (
                "ARCHITECTURE",
                "Export writes one JSON object per line; the format is documented in the README.",
            ),
            (
                "PATTERN",
                "Import skips memories whose content hash already exists, so running it twice is harmless.",
            ),
            (
                "CONSTRAINT",
                "The test suite runs with pytest -q and must stay under five minutes on CI.",
            ),
            (
                "ARCHITECTURE",
                "The CLI's serve command starts the MCP server on stdio; list and search are for humans.",
            ),
            (
                "PATTERN",
                "Decay score: relevance halves every 30 days since last access, unless the memory is pinned.",
            ),
            (
                "TODO",
                "TODO: check macOS support on Intel machines; only Apple Silicon with Homebrew Python is tested.",
            ),
            (
                "PATTERN",
                "Backups copy the database with the SQLite online backup API, never with cp while a writer is active.",
            ),
            (
                "ARCHITECTURE",
                "Search results include a score breakdown: keyword rank, vector rank and the fused value.",
            ),
            (
                "ERROR",
                "sqlite-vec failed to load as an extension on one machine, so vector search was disabled there.",
            ),
            (
                "ARCHITECTURE",
                "Memory links connect related memories; deleting a memory removes its links.",
            ),
            ("PATTERN", "Hypothesis property tests cover the export and import round trip."),
            (
                "DECISION",
                "Databases created by 0.1 are migrated in place, with a copy kept beside them.",
            ),
            (
                "DECISION",
                "Flask and waitress serve the REST API; uvicorn was considered but adds async complexity.",
            ),
            (
                "PATTERN",
                "The backfill sweep embeds memories that were stored while Ollama was down.",
            ),
            (
                "ARCHITECTURE",
                "The scope field separates memories of different projects inside one database.",
            ),
            (
                "PATTERN",
                "CI installs the package from the built wheel to catch files missing from the distribution.",
            ),
            (
                "PATTERN",
                "ERROR memories should quote the exact error message so keyword search can find them.",
            ),
            ("CONSTRAINT", "Queries longer than 10,000 words are refused as too expensive."),
            (
                "PATTERN",
                "Dependency pins are reviewed monthly and relaxed only after the test suite passes.",
            ),
            (
                "ARCHITECTURE",
                "A crash in the middle of a write leaves the database consistent thanks to SQLite transactions.",
            ),
        )
    )
)

# Memories that hold a rare identifier; the exact-term query names it and nothing else.
EXACT_TARGETS: tuple[Memory, ...] = (
    Memory(
        "e5023",
        "ERROR",
        "vec0 raised E5023 on insert: the blob had 1536 bytes but the table expects 768 floats "
        "(3072 bytes); a model switch had not re-embedded old rows.",
    ),
    Memory(
        "skip-sweep-flag",
        "PATTERN",
        "Benchmarks set AGENT_MEMORY_SKIP_SWEEP=1 so the background sweep does not skew timings.",
    ),
    Memory(
        "commit-3f9c2ab",
        "ERROR",
        "Commit 3f9c2ab reverted the int8 re-rank: it returned rows in the wrong order when two "
        "scores tied.",
    ),
    Memory(
        "rrf-k-env",
        "DECISION",
        "Kept rrf_fuse_k at 60 after trying 10 and 200: the fused order barely moved.",
    ),
)

EXACT: tuple[Query, ...] = (
    Query("E5023", "e5023"),
    Query("AGENT_MEMORY_SKIP_SWEEP", "skip-sweep-flag"),
    Query("3f9c2ab", "commit-3f9c2ab"),
    Query("rrf_fuse_k", "rrf-k-env"),
)

MEMORIES: tuple[Memory, ...] = TARGETS + DISTRACTORS + EXACT_TARGETS
TYPES = ("DECISION", "PATTERN", "ERROR", "TODO", "ARCHITECTURE", "CONSTRAINT")
# How many of the 30 paraphrases search by meaning must rank in the top 3 and the top 10
# (docs/search.md has the local model's figures).
TOP3_FLOOR = 15
TOP10_FLOOR = 24

# The tags an agent would give these memories (a few, mostly the topic). The paraphrases
# above are kept free of their targets' words in content only; how much a tag hit weighs is
# chosen on these tags too (docs/search.md).
TAGS: dict[str, tuple[str, ...]] = {
    "sqlite-only": ("storage", "sqlite"),
    "rrf": ("search", "ranking"),
    "model-pin": ("embeddings",),
    "archive-unused": ("lifecycle", "archive"),
    "stdio-only": ("mcp", "transport"),
    "backoff": ("http", "retry"),
    "alembic": ("schema", "migrations"),
    "redaction": ("security", "secrets"),
    "embed-outside-lock": ("sqlite", "locking", "embeddings"),
    "test-tmpdirs": ("testing",),
    "db-locked": ("sqlite", "concurrency"),
    "model-not-pulled": ("ollama", "setup"),
    "stdin-hang": ("testing", "ci", "subprocess"),
    "bom": ("import", "windows", "encoding"),
    "stale-index": ("search", "vectors", "bug"),
    "dry-run": ("import", "cli"),
    "stats-per-type": ("stats",),
    "windows": ("windows", "portability"),
    "prune-backups": ("backups", "ops"),
    "recall-1m": ("vectors", "benchmark"),
    "one-file": ("storage", "backups"),
    "service-layer": ("validation", "rest", "mcp"),
    "hybrid-legs": ("search", "ollama"),
    "types-pinned": ("decay", "types"),
    "vec0-same-tx": ("vectors", "sqlite-vec"),
    "offline": ("privacy", "network"),
    "python-311": ("python",),
    "size-cap": ("limits", "validation"),
    "stdout-frames": ("mcp", "logging"),
    "licences": ("licensing", "dependencies"),
    "d00": ("ollama", "http"),
    "d01": ("ollama", "resilience"),
    "d02": ("postgres", "storage"),
    "d03": ("search", "fts5"),
    "d04": ("search", "vectors"),
    "d05": ("lifecycle", "sweep"),
    "d06": ("rest", "security"),
    "d07": ("schema", "migrations"),
    "d08": ("logging", "privacy"),
    "d09": ("sqlite", "performance"),
    "d10": ("export", "jsonl"),
    "d11": ("import",),
    "d12": ("testing", "ci"),
    "d13": ("cli", "mcp"),
    "d14": ("decay",),
    "d15": ("macos", "portability"),
    "d16": ("backups", "sqlite"),
    "d17": ("search", "explain"),
    "d18": ("sqlite-vec", "bug"),
    "d19": ("links",),
    "d20": ("testing", "export"),
    "d21": ("migrations", "upgrade"),
    "d22": ("rest", "dependencies"),
    "d23": ("embeddings", "sweep"),
    "d24": ("scope",),
    "d25": ("ci", "packaging"),
    "d26": ("conventions", "search"),
    "d27": ("limits", "search"),
    "d28": ("dependencies",),
    "d29": ("sqlite", "durability"),
    "e5023": ("vectors", "bug"),
    "skip-sweep-flag": ("benchmark", "sweep"),
    "commit-3f9c2ab": ("vectors", "regression"),
    "rrf-k-env": ("search", "ranking"),
}
