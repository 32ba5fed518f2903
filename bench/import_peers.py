"""Import rate from each other memory server's format next to the JSONL import's, keyword-only.

    .venv/bin/python -m bench.import_peers [--size 10000]

Writes SIZE items in each format (bench/corpus.py texts): a JSONL export (bench_portable's
file), a server-memory memory.jsonl (entities of 10 observations, a relation per entity), an
mcp-memory-service database (its memories and memory_graph tables, an association per 10
memories), a basic-memory folder (notes of 10 observations and a relation each), a
CLAUDE.md (headings of 20 bullets) and an engram database (its observations table). Each is
imported into an empty database by ``agent-memory import`` in a fresh process of its own (no
embedder is ever asked); the rate is memories per second of the whole command, start-up
included.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

from bench import corpus
from bench._common import table
from bench.bench_portable import timed_command, write_file

PER_ENTITY = 10
PER_HEADING = 20
T0 = 1_767_225_600


def texts(size: int) -> list[str]:
    return [m["content"] for m in corpus.memories(size)]


def server_memory(path: Path, size: int) -> None:
    items = texts(size)
    with path.open("w", encoding="utf-8") as out:
        groups = range(0, size, PER_ENTITY)
        for n, start in enumerate(groups):
            entity = {"type": "entity", "name": f"entity {n}", "entityType": "concept"}
            entity["observations"] = items[start : start + PER_ENTITY]
            out.write(json.dumps(entity) + "\n")
        for n in range(1, len(groups)):
            relation = {"from": f"entity {n}", "to": f"entity {n - 1}", "relationType": "uses"}
            out.write(json.dumps({"type": "relation", **relation}) + "\n")


def mcp_memory_service(path: Path, size: int) -> None:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "CREATE TABLE memories (id INTEGER PRIMARY KEY AUTOINCREMENT, content_hash TEXT UNIQUE"
            " NOT NULL, content TEXT NOT NULL, tags TEXT, memory_type TEXT, metadata TEXT,"
            " created_at REAL, updated_at REAL, created_at_iso TEXT, updated_at_iso TEXT,"
            " deleted_at REAL DEFAULT NULL)"
        )
        conn.execute(
            "CREATE TABLE memory_graph (source_hash TEXT NOT NULL, target_hash TEXT NOT NULL,"
            " similarity REAL NOT NULL, connection_types TEXT NOT NULL, metadata TEXT,"
            " created_at REAL NOT NULL, relationship_type TEXT DEFAULT 'related',"
            " PRIMARY KEY (source_hash, target_hash))"
        )
        rows = [
            (f"h{n}", text, "bench,corpus", "note", T0 + n + 0.5)
            for n, text in enumerate(texts(size))
        ]
        conn.executemany(
            "INSERT INTO memories (content_hash, content, tags, memory_type, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            rows,
        )
        edges = [(f"h{n}", f"h{n - 1}", 0.5, "[]", T0) for n in range(PER_ENTITY, size, PER_ENTITY)]
        conn.executemany("INSERT INTO memory_graph VALUES (?, ?, ?, ?, NULL, ?, 'related')", edges)
        conn.commit()


def basic_memory(folder: Path, size: int) -> None:
    items = texts(size)
    for n, start in enumerate(range(0, size, PER_ENTITY)):
        lines = ["---", f"title: Note {n}", "type: note", f"permalink: note-{n}", "---", ""]
        lines += ["## Observations"] + [f"- [fact] {t}" for t in items[start : start + PER_ENTITY]]
        if n:
            lines += ["", "## Relations", f"- relates_to [[Note {n - 1}]]"]
        (folder / f"note-{n}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def claude_md(path: Path, size: int) -> None:
    items = texts(size)
    with path.open("w", encoding="utf-8") as out:
        for start in range(0, size, PER_HEADING):
            out.write(f"\n## Topic {start // PER_HEADING}\n\n")
            out.writelines(f"- {t}\n" for t in items[start : start + PER_HEADING])


def engram(path: Path, size: int) -> None:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "CREATE TABLE observations (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT"
            " NOT NULL, type TEXT NOT NULL, title TEXT NOT NULL, content TEXT NOT NULL, project"
            " TEXT, scope TEXT NOT NULL DEFAULT 'project', topic_key TEXT, created_at TEXT NOT"
            " NULL, deleted_at TEXT)"
        )
        rows = [
            ("s", "discovery", f"finding {n}", text, "bench", "2026-11-02 09:15:00")
            for n, text in enumerate(texts(size))
        ]
        conn.executemany(
            "INSERT INTO observations (session_id, type, title, content, project, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.commit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inputs = {
            "jsonl": work / "export.jsonl",
            "server-memory": work / "memory.jsonl",
            "mcp-memory-service": work / "sqlite_vec.db",
            "basic-memory": work / "basic-memory",
            "claude-md": work / "CLAUDE.md",
            "engram": work / "engram.db",
        }
        write_file(inputs["jsonl"], args.size)
        server_memory(inputs["server-memory"], args.size)
        mcp_memory_service(inputs["mcp-memory-service"], args.size)
        inputs["basic-memory"].mkdir()
        basic_memory(inputs["basic-memory"], args.size)
        claude_md(inputs["claude-md"], args.size)
        engram(inputs["engram"], args.size)
        rates = {}
        for source, path in inputs.items():
            db = work / f"{source}.db"
            secs, rss = timed_command(
                "--db", str(db), "--embedder", "none", "import", "--from", source, str(path)
            )
            rates[source] = (secs, args.size / secs, rss / 1024)
    jsonl_rate = rates["jsonl"][1]
    rows = [
        (source, f"{secs:.2f}", f"{rate:,.0f}", f"{rate / jsonl_rate:.2f}", f"{rss:.0f}")
        for source, (secs, rate, rss) in rates.items()
    ]
    head = ("source", "seconds", "memories/s", "of JSONL's rate", "peak RSS MiB")
    print(f"{args.size:,} items each, keyword-only, one fresh process per import")
    print(table(head, rows, "lrrrr"))


if __name__ == "__main__":
    main()
