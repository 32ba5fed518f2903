"""The peers' fixture files (tests/fixtures/peers), what each holds, and the round trip of
an import from one: each item found again by keyword, its links kept, a re-run adding
nothing. On any engine: ``db`` is a path or a PostgreSQL URL."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from agent_memory.cli.main import cli
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store

PEERS = Path(__file__).parent.parent / "fixtures" / "peers"
# source -> (path, {phrase: (type, tags that must be there)}, links as (phrase, kind, phrase))
CASES = {
    "server-memory": (
        PEERS / "server-memory" / "memory.jsonl",
        {
            "Alice: Prefers tabs over spaces": ("PATTERN", {"Alice", "person"}),
            "billing reconciliation job": ("PATTERN", {"Alice"}),
            "Reviews every schema change": ("PATTERN", {"Alice"}),
            "Billing runs nightly": ("ARCHITECTURE", {"Billing", "system"}),
            "never double-charge": ("ARCHITECTURE", {"Billing"}),
            # the memories that stand for the entities a relation names
            "Alice (person): works on Billing": ("PATTERN", {"Alice", "person"}),
            "Billing (system)": ("ARCHITECTURE", {"Billing", "system"}),
            "Postgres migration": ("DECISION", {"Postgres migration", "decision"}),
        },
        [
            ("Alice (person): works on Billing", "relates_to", "Billing (system)"),
            ("Postgres migration", "supersedes", "Billing (system)"),
            ("Prefers tabs over spaces", "relates_to", "Alice (person): works on Billing"),
            ("never double-charge", "relates_to", "Billing (system)"),
        ],
    ),
    "mcp-memory-service": (
        PEERS / "mcp-memory-service" / "sqlite_vec.db",
        {
            "stale Docker layer cache": ("ERROR", {"deploy", "docker"}),
            "pin numpy below": ("DECISION", {"deps"}),
            "staging API keys": ("TODO", {"security", "action_item"}),
            "inverted index in Redis": ("ARCHITECTURE", {"search", "redis"}),
        },
        [
            ("stale Docker layer cache", "caused_by", "pin numpy below"),
            ("staging API keys", "relates_to", "inverted index in Redis"),
        ],
    ),
    "basic-memory": (
        PEERS / "basic-memory",
        {
            "cleaner cup than the French press": ("PATTERN", {"Coffee Brewing", "brewing"}),
            "just off the boil": ("CONSTRAINT", {"Coffee Brewing", "preference"}),
            "burr grinder to medium-fine": ("DECISION", {"Grinder Setup", "decision"}),
            "espresso machine budget": ("PATTERN", {"Meeting Notes"}),
        },
        [
            ("cleaner cup than the French press", "relates_to", "burr grinder to medium-fine"),
            ("espresso machine budget", "relates_to", "cleaner cup than the French press"),
        ],
    ),
    "engram": (
        PEERS / "engram" / "engram.db",
        {
            "Switched auth to JWT": ("DECISION", {"decision", "architecture/auth"}),
            "Eager-load the order lines": ("ERROR", {"bugfix"}),
            "never npm": ("CONSTRAINT", {"preference"}),
        },
        [],
    ),
}
# The scope each source's memories get without --scope, by phrase (default: none).
SCOPES = {"engram": {"Switched auth to JWT": "shop", "Eager-load the order lines": "shop"}}


def run(db, source: str, path: Path, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db), "import", "--from", source, *args, str(path)])


def found(svc: MemoryService, phrase: str) -> dict:
    # (a peer's "supersedes" relation leaves its target out of a default search)
    query = f'content:"{phrase}"'  # not the tags: an entity's name and type are tags too
    results = svc.search({"query": query, "include_superseded": True})["results"]
    assert len(results) == 1, (phrase, results)
    return results[0]


def check_round_trip(db, source: str) -> None:
    path, phrases, links = CASES[source]
    result = run(db, source, path)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"imported: {len(phrases)}, skipped duplicates: 0")
    svc = MemoryService(open_store(db))
    for phrase, (memory_type, tags) in phrases.items():
        memory = found(svc, phrase)
        assert memory["type"] == memory_type
        assert tags <= set(memory["tags"])
        assert memory["source"] == f"import:{source}"
        assert memory["scope"] == SCOPES.get(source, {}).get(phrase)
    for a, kind, b in links:
        related = svc.get({"id": found(svc, a)["id"]})["related"]
        ways = ("out", "in") if kind == "relates_to" else ("out",)  # relates_to: either way
        seen = [(r["id"], r["kind"]) for r in related if r["direction"] in ways]
        assert (found(svc, b)["id"], kind) in seen, (a, kind, b, related)
    again = run(db, source, path)  # re-run: nothing doubles
    assert again.stdout.startswith(f"imported: 0, skipped duplicates: {len(phrases)}")
    assert len(svc.list({"limit": 200, "include_superseded": True})) == len(phrases)


# What an import says of the notes it passed over.
NOT_REGULAR = "skipped notes that are not regular files (a FIFO, a socket, a device)"
