"""PostgreSQL keyword search against SQLite's at 100,000 memories (issue 34): single words,
two-word queries and questions, p50/p99 side by side, with the ratio PostgreSQL / SQLite.

    .venv/bin/python -m bench.pg_keyword [--size 100000] [--queries 100] [--rounds 2]
        [--before DIR] [--url postgresql://...] [--explain] [--json out.json]

Both engines get the same seeded developer memories (bench/corpus.py, ``developer_memories``)
loaded as bench/run.py loads them: ``agent-memory import``, last use spread over a year, every
decay score refreshed (a server's first sweep). Each engine is a process of its own
(``MemoryService`` in process, no transport), and each query is asked of every engine in turn
(nothing bumped, limit 10), the order rotating, so that the shared machine's load weighs on
all alike. A warm-up pass goes first, untimed. Pages are compared with SQLite's (same ids,
same order).

With ``--before DIR`` (a checkout of older code: ``git worktree add /tmp/before main``), that
code is one more engine, on a database it loads itself; this code then upgrades a copy of
that database (``CREATE DATABASE ... TEMPLATE``; the upgrade's time is printed, the copy
dropped). With ``--explain``, EXPLAIN (ANALYZE, BUFFERS) of every statement that reads the
memories in the search of the commonest technology and of the first question, on this code's
database. Without ``--url``, each
PostgreSQL engine gets a throwaway PostgreSQL 18 of its own from the test extra
(tests/support/postgres_server.py: no fsync, Unix socket, the default 128 MB of shared
buffers): two databases of 100,000 memories do not fit one server's buffers together.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import corpus
from bench._common import ROOT, agent_memory_cmd, clean_env, export_header, log, machine, pct

LIMIT = 10
YEAR = 365 * 86_400
SPREAD_LAST_USE = (
    "UPDATE memories SET last_accessed = created_at"
    " + (id * 2654435761 % 1000003) * ({now} - created_at) / 1000003"
)
# The plans printed with --explain: the most common technology (the dearest single word:
# every row holding it is scored) and the first question.
EXPLAIN_WORD = corpus.TECH[0]


def single_words(n: int, seed: int = 19) -> list[str]:
    """Technologies, areas and parts in turn, as often as the corpus holds them (Zipf)."""
    rng = random.Random(seed)
    lists = (corpus.TECH, corpus.AREAS, corpus.PARTS)
    return [corpus._zipf(rng, lists[i % 3]) for i in range(n)]


def searches(n: int) -> dict[str, list[str]]:
    return {
        "word": single_words(n),
        "two words": corpus.two_word_queries(n),
        "question": corpus.questions(n),
    }


# -- in the engine's process (its own code: PYTHONPATH) ----------------------------------------


def load(location: str, size: int, now: int, workdir: Path) -> None:
    """bench/run.py's load at a fixed ``now``: import, spread last use, refresh decay."""
    from agent_memory.service.core import MemoryService
    from agent_memory.storage import open_store
    from agent_memory.transfer import jsonl

    source = workdir / f"load-{os.getpid()}.jsonl"
    with source.open("w", encoding="utf-8") as out:
        out.write(export_header(size, now=now))
        for i, memory in enumerate(corpus.developer_memories(size)):
            created = now - YEAR + (i * YEAR) // size
            record = {"record": "memory", "key": i + 1, **memory, "source": None}
            record.update(created_at=created, last_accessed=created, access_count=0)
            out.write(jsonl.line({**record, "expires_at": None}))
    env = clean_env()
    command = [agent_memory_cmd(), "--db", location, "import", "--from", "jsonl", str(source)]
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    source.unlink()
    spread = SPREAD_LAST_USE.format(now=now)
    if location.startswith("postgresql"):
        import psycopg

        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute(spread)
            conn.execute("VACUUM ANALYZE memories")
    else:
        import sqlite3

        conn = sqlite3.connect(location)
        with conn:
            conn.execute(spread)
        conn.close()
    service = MemoryService(open_store(location))
    service.db.refresh_decay(now)
    service.close()


def serve(location: str, now: int) -> None:
    """Answer one JSON request a line on stdin: a search's time and page, or its plans."""
    from agent_memory.service.core import MemoryService
    from agent_memory.storage import open_store

    service = MemoryService(open_store(location), clock=lambda: now)
    out = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        if "explain" in request:
            out.write(json.dumps({"plans": explain(service, request["explain"])}) + "\n")
        else:
            began = time.perf_counter()
            found = service.search({"query": request["query"], "limit": LIMIT}, record_use=False)
            ms = 1000 * (time.perf_counter() - began)
            out.write(json.dumps({"ms": ms, "ids": [m["id"] for m in found["results"]]}) + "\n")
        out.flush()
    service.close()


def explain(service: Any, text: str) -> list[str]:
    """EXPLAIN (ANALYZE, BUFFERS) of each statement of one search that reads the memories
    (every statement but the transaction's settings), in one snapshot as the search."""
    import sqlalchemy
    from sqlalchemy import event

    seen: list[tuple[str, Any]] = []

    def record(conn, cursor, statement, params, context, executemany) -> None:
        if "FROM memories" in statement and not statement.startswith("SELECT id, content"):
            seen.append((statement, params))

    event.listen(sqlalchemy.engine.Engine, "before_cursor_execute", record)
    try:
        service.search({"query": text, "limit": LIMIT}, record_use=False)
    finally:
        event.remove(sqlalchemy.engine.Engine, "before_cursor_execute", record)
    plans = []
    with service.db._read() as conn:
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")  # as the store's search does
        for statement, params in seen:
            rows = conn.exec_driver_sql(
                "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + statement, params
            ).all()
            plans.append("\n".join(_short(row[0]) for row in rows))
    return plans


def _short(line: str, width: int = 150) -> str:
    """A plan line, a score expression of a thousand characters cut to ``width``."""
    return line if len(line) <= width else line[: width - 1] + "…"


# -- the parent ---------------------------------------------------------------------------


def _env(code: Path) -> dict[str, str]:
    return clean_env(PYTHONPATH=str(code))


def in_code(code: Path, *args: str) -> subprocess.CompletedProcess:
    """This script run with ``code``'s agent_memory and bench (a checkout's root)."""
    command = [sys.executable, "-P", str(Path(__file__).resolve()), *args]
    return subprocess.run(command, cwd=code, env=_env(code), check=True, stdout=subprocess.DEVNULL)


class Engine:
    """One engine's serving process."""

    def __init__(self, name: str, code: Path, location: str, now: int) -> None:
        self.name = name
        script = str(Path(__file__).resolve())
        command = [sys.executable, "-P", script, "--serve", location, str(now)]
        self.process = subprocess.Popen(
            command, cwd=code, env=_env(code), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def new_database(server_url: str, name: str, template: str | None = None) -> str:
    import psycopg
    from psycopg import sql

    from tests.support.pg_fixtures import database_url

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        made = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            made += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
        conn.execute(made)
    return database_url(server_url, name)


def prepare(args: argparse.Namespace, servers: dict[str, str], workdir: Path, now: int) -> dict:
    """Load every engine's database (each PostgreSQL one by its own code, on its own server
    unless --url); the engines to run: name -> (code, location)."""
    engines: dict[str, tuple[Path, str]] = {"sqlite": (ROOT, str(workdir / "memory.db"))}
    stamp = f"{args.size}_{os.getpid()}"
    upgrade_s = None
    if args.before is not None:
        before = new_database(servers["postgres before"], f"am_pgkw_before_{stamp}")
        log(f"loading {args.size:,} memories into PostgreSQL with {args.before}")
        in_code(args.before, "--load", before, str(args.size), str(now), str(workdir))
        engines["postgres before"] = (args.before, before)
        copy = f"am_pgkw_upgraded_{stamp}"
        upgraded = new_database(servers["postgres before"], copy, f"am_pgkw_before_{stamp}")
        began = time.perf_counter()
        in_code(ROOT, "--upgrade", upgraded)
        upgrade_s = time.perf_counter() - began
        log(f"this code upgraded a copy of it in {upgrade_s:.1f} s")
        drop_database(servers["postgres before"], copy)
    after = new_database(servers["postgres"], f"am_pgkw_{stamp}")
    log(f"loading {args.size:,} memories into PostgreSQL")
    in_code(ROOT, "--load", after, str(args.size), str(now), str(workdir))
    engines["postgres"] = (ROOT, after)
    log(f"loading {args.size:,} memories into SQLite")
    in_code(ROOT, "--load", engines["sqlite"][1], str(args.size), str(now), str(workdir))
    return {"engines": engines, "upgrade_s": upgrade_s}


def drop_database(server_url: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {}").format(sql.Identifier(name)))


def measure(
    engines: dict[str, Engine], kinds: dict[str, list[str]], rounds: int
) -> tuple[dict[str, dict[str, list[float]]], dict[str, dict[str, int]]]:
    """Per kind and engine: the times (ms) of ``rounds`` timed passes, and how many pages
    equal SQLite's."""
    times = {kind: {name: [] for name in engines} for kind in kinds}
    same = {kind: dict.fromkeys(engines, 0) for kind in kinds}
    names = list(engines)
    for round_ in range(rounds + 1):  # the first pass warms caches and prepared statements
        for kind, texts in kinds.items():
            for i, text in enumerate(texts):
                order = names[i % len(names) :] + names[: i % len(names)]
                answers = {name: engines[name].ask({"query": text}) for name in order}
                if not round_:
                    continue
                for name, answer in answers.items():
                    times[kind][name].append(answer["ms"])
                    same[kind][name] += answer["ids"] == answers["sqlite"]["ids"]
    return times, same


def report(times: dict, same: dict, rounds: int) -> list[dict[str, Any]]:
    rows = []
    for kind, by_engine in times.items():
        sqlite_p50 = pct(by_engine["sqlite"], 0.5)
        for name, values in by_engine.items():
            p50 = pct(values, 0.5)
            rows.append(
                {
                    "kind": kind,
                    "engine": name,
                    "p50_ms": round(p50, 2),
                    "p99_ms": round(pct(values, 0.99), 2),
                    "ratio_to_sqlite": round(p50 / sqlite_p50, 2),
                    "pages_as_sqlite": f"{same[kind][name] // rounds}/{len(values) // rounds}",
                }
            )
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| queries | engine | p50 ms | p99 ms | p50 / SQLite | pages as SQLite's |")
    print("|---|---|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['kind']} | {row['engine']} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f}"
            f" | {row['ratio_to_sqlite']:.2f} | {row['pages_as_sqlite']} |"
        )


def run(args: argparse.Namespace, servers: dict[str, str], workdir: Path) -> None:
    now = int(time.time())
    prepared = prepare(args, servers, workdir, now)
    engines = {
        name: Engine(name, code, location, now)
        for name, (code, location) in prepared["engines"].items()
    }
    try:
        kinds = searches(args.queries)
        log(f"searching: {', '.join(engines)}")
        times, same = measure(engines, kinds, args.rounds)
        plans = {}
        if args.explain:
            texts = {"word": EXPLAIN_WORD, "question": kinds["question"][0]}
            plans = {text: engines["postgres"].ask({"explain": text}) for text in texts.values()}
    finally:
        for engine in engines.values():
            engine.close()
    rows = report(times, same, args.rounds)
    print(f"{args.size:,} memories, {args.queries} queries of each kind x {args.rounds} rounds")
    if prepared["upgrade_s"] is not None:
        print(f"this code's upgrade of the older code's database: {prepared['upgrade_s']:.1f} s")
    print_table(rows)
    print(machine())
    for text, answer in plans.items():
        print(f"\nEXPLAIN (ANALYZE, BUFFERS) of {text!r}:")
        for plan in answer["plans"]:
            print("\n" + plan)
    if args.json:
        args.json.write_text(
            json.dumps({"rows": rows, **prepared, "plans": plans}, indent=2, default=str)
        )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--load":
        location, size, now, workdir = sys.argv[2:6]
        load(location, int(size), int(now), Path(workdir))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--upgrade":
        from agent_memory.storage import open_store

        open_store(sys.argv[2]).close()
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100, help="of each kind")
    parser.add_argument("--rounds", type=int, default=2, help="timed passes over the queries")
    parser.add_argument("--before", type=Path, help="a checkout of older code to compare")
    parser.add_argument("--url", help="a PostgreSQL server's URL (default: an embedded one)")
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import tempfile
    from contextlib import ExitStack

    # imported here: --before runs this file with the older tree's bench first on the path
    from bench._common import throwaway_postgres

    names = ["postgres"] + (["postgres before"] if args.before is not None else [])
    with ExitStack() as servers:
        if args.url:
            urls = [args.url] * len(names)
        else:  # a server of its own per engine
            urls = [servers.enter_context(throwaway_postgres(None)) for _ in names]
        with tempfile.TemporaryDirectory(prefix="am-pgkw-") as tmp:
            run(args, dict(zip(names, urls, strict=True)), Path(tmp))


if __name__ == "__main__":
    main()
