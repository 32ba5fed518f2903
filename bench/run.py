"""The comparison bench: agent-memory, the protocol floor and two local peers, at every size.

    .venv/bin/python -m bench.run [--sizes 1000,10000,100000,1000000] [--peers]
                                  [--peer-sizes 1000,10000,100000] [--hybrid-sizes 1000,10000]
                                  [--postgres [URL]] [--cache DIR]
                                  [--json bench/results/run.json]

Every figure comes from one run on one machine, each server driven by the official MCP
client over stdio, one call at a time:

- floor: a do-nothing server on the same MCP SDK (bench/floors.py): the price of
  Python and the protocol before any work;
- agent-memory: ``agent-memory serve`` (keyword mode: no Ollama; hybrid mode against the
  test suite's fake Ollama, a real HTTP server on 127.0.0.1, at --hybrid-sizes);
- with --postgres, agent-memory again on PostgreSQL ("agent-memory-pg": a fresh database per
  size on the server of URL, or on an embedded PostgreSQL 18 from the test extra), loaded,
  measured and swept the same way;
- with --peers, installed from npm into a temp prefix by this script:
  @modelcontextprotocol/server-memory (store -> create_entities, search -> search_nodes)
  and mcp-memory-keeper (store -> context_save, search -> context_search_all, list ->
  context_get by category, which sees the current session only).

Data: seeded developer memories from bench/corpus.py (``developer_memories``). agent-memory
is loaded through its import path (``agent-memory import --from jsonl``), then the bench
spreads last use over the past year with one UPDATE (imports count as just used); the peers
are loaded through their own batch tools (create_entities, context_batch_save) in batches of
1,000. Then, per size and server: cold start (spawn to the first tools/list answer, median
of 3), 200 single stores, two-word and question searches (limit 10), a filtered list (p50
and p99 of each), the server's peak RSS (VmHWM) and the size of its files. For agent-memory
also the sweep (TTL expiry of 1% of rows and decay refresh) timed in process while another
process stores through MCP: the longest write-lock hold and the slowest of those stores.

Printed: one row per size and metric, then the cost curve (bench/curve.py): p50 / p99 of
store, keyword search (two words, question), hybrid search and the filtered list at every
size, agent-memory over the floor. ``--cache DIR`` keeps each size's loaded SQLite file there
and copies it on the next run instead of loading again.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from agent_memory.service.core import MemoryService
from agent_memory.service.lifecycle import SWEEP_PAUSE_SECS, sweep
from agent_memory.storage import open_store
from agent_memory.transfer import jsonl
from bench import corpus, curve
from bench._common import (
    agent_memory_cmd,
    call,
    child_peak_rss_mib,
    clean_env,
    export_header,
    log,
    machine,
    pct,
    table,
)
from bench.servers import Floor, MemoryKeeper, ServerMemory, System, install_peers
from tests.support.fake_ollama import FakeOllama

COLD_RUNS = 3
STORES = 200
WARM_UP_CALLS = 5  # untimed stores and searches first: the first call of a process is cold
SEARCHES = 100  # of each kind
LISTS = 30
EXPIRING_SHARE = 100  # one row in this many has a TTL that runs out before the sweep
YEAR = 365 * 86_400
NO_OLLAMA = "http://127.0.0.1:9"
SPREAD_LAST_USE = (
    "UPDATE memories SET last_accessed = created_at"
    " + (id * 2654435761 % 1000003) * ({now} - created_at) / 1000003"
)


# -- the servers ------------------------------------------------------------------------------


class AgentMemory(Floor):
    name = "agent-memory"
    ollama_url = NO_OLLAMA
    cache: Path | None = None  # --cache: loaded files kept between runs (bench/curve.py)

    @property
    def db(self) -> Path:
        return self.dir / "memory.db"

    def params(self) -> StdioServerParameters:
        return StdioServerParameters(
            command=agent_memory_cmd(),
            args=[
                *("--db", str(self.db), "--ollama-url", self.ollama_url),
                # keyword mode unless the bench's Ollama runs (not the local model)
                *("--embedder", "none" if self.ollama_url == NO_OLLAMA else "ollama"),
                *("--log-level", "warning", "serve"),
            ],
            env=clean_env(),
        )

    def load(self, memories: list[dict]) -> None:
        curve.cached(self.cache, len(memories), self.db, lambda: self.build(memories))

    def build(self, memories: list[dict]) -> None:
        """Through ``agent-memory import``, then last use spread over the past year."""
        now = int(time.time())
        source = self.dir / "load.jsonl"
        with source.open("w", encoding="utf-8") as out:
            out.write(export_header(len(memories), now=now))
            for i, memory in enumerate(memories):
                created = now - YEAR + (i * YEAR) // max(len(memories), 1)
                out.write(
                    jsonl.line(
                        {
                            "record": "memory",
                            "key": i + 1,
                            "type": memory["type"],
                            "content": memory["content"],
                            "tags": memory["tags"],
                            "source": None,
                            "scope": memory["scope"],
                            "created_at": created,
                            "last_accessed": created,
                            "access_count": 0,
                            "expires_at": now + 3600 if i % EXPIRING_SHARE == 0 else None,
                        }
                    )
                )
        subprocess.run(
            [agent_memory_cmd(), "--db", str(self.db), "import", "--from", "jsonl", str(source)],
            check=True,
            env=clean_env(),
            stderr=subprocess.DEVNULL,
        )
        source.unlink()
        self.spread_last_use(now)
        # A file in use was swept within the hour: servers started on it leave decay alone
        # (the sweep itself is measured apart, in sweep_under_writes).
        service = MemoryService(open_store(self.db))
        service.db.refresh_decay(now)
        service.close()

    def spread_last_use(self, now: int) -> None:
        """A last use somewhere between creation and now, seeded by the row's id."""
        conn = sqlite3.connect(self.db)
        with conn:
            conn.execute(SPREAD_LAST_USE.format(now=int(now)))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()

    def files(self) -> list[Path]:
        return [p for p in self.dir.glob("memory.db*") if p.is_file()]


class AgentMemoryPostgres(AgentMemory):
    """The same server on a PostgreSQL database (a fresh one per size) of ``server_url``."""

    name = "agent-memory-pg"

    def __init__(self, workdir: Path, server_url: str) -> None:
        super().__init__(workdir)
        self.server_url = server_url
        self.url = ""

    @property
    def db(self) -> str:  # type: ignore[override]
        return self.url

    def load(self, memories: list[dict]) -> None:
        from bench import bench_postgres

        self.url = bench_postgres.fresh_database(self.server_url)
        self.build(memories)

    def spread_last_use(self, now: int) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(SPREAD_LAST_USE.format(now=int(now)))
            conn.execute("VACUUM ANALYZE memories")

    def files(self) -> list[Path]:
        return []


# -- measuring --------------------------------------------------------------------------------


async def cold_start(system: System) -> float:
    devnull = open(os.devnull, "w")  # noqa: SIM115
    times = []
    for _ in range(COLD_RUNS):
        start = time.perf_counter()
        async with Client(stdio_client(system.params(), errlog=devnull)) as client:
            await client.list_tools()
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


async def session(system: System, size: int, fresh: list[dict]) -> dict[str, float]:
    """Stores, searches and lists through one server process; its peak RSS at the end."""
    out: dict[str, float] = {}
    devnull = open(os.devnull, "w")  # noqa: SIM115
    async with Client(stdio_client(system.params(), errlog=devnull)) as client:
        await client.list_tools()
        for i in range(WARM_UP_CALLS):
            await call(client, system.store(fresh[i], size + len(fresh) + i))
            await call(client, system.search(corpus.questions(1, seed=i)[0]))
        stores = [await call(client, system.store(m, size + i)) for i, m in enumerate(fresh)]
        out["stores_per_s"] = len(stores) / sum(stores)
        out["store_p50_ms"] = pct(stores, 0.5) * 1e3
        out["store_p99_ms"] = pct(stores, 0.99) * 1e3
        for kind, queries in (
            ("two_words", corpus.two_word_queries(SEARCHES)),
            ("question", corpus.questions(SEARCHES)),
        ):
            timings = [await call(client, system.search(q)) for q in queries]
            out[f"search_{kind}_p50_ms"] = pct(timings, 0.5) * 1e3
            out[f"search_{kind}_p99_ms"] = pct(timings, 0.99) * 1e3
        listing = system.list()
        if listing is not None:
            timings = [await call(client, listing) for _ in range(LISTS)]
            out["list_filtered_p50_ms"] = pct(timings, 0.5) * 1e3
            out["list_filtered_p99_ms"] = pct(timings, 0.99) * 1e3
        out["peak_rss_mib"] = child_peak_rss_mib()
    out["files_mib"] = sum(p.stat().st_size for p in system.files()) / 2**20
    return out


async def sweep_under_writes(system: AgentMemory, size: int) -> dict[str, float]:
    """The sweep in process (clock two hours ahead: the 1% TTL rows expire) while another
    process stores through MCP as fast as it can; the slowest of those stores."""
    service = MemoryService(open_store(system.db), clock=lambda: time.time() + 7200)
    done = threading.Event()
    report: dict[str, Any] = {}

    def run_sweep() -> None:
        try:
            started = time.perf_counter()
            report.update(sweep(service, pause=lambda: bool(time.sleep(SWEEP_PAUSE_SECS))))
            report["secs"] = time.perf_counter() - started
        finally:
            done.set()

    latencies: list[float] = []
    devnull = open(os.devnull, "w")  # noqa: SIM115
    async with Client(stdio_client(system.params(), errlog=devnull)) as client:
        await client.list_tools()
        memories = corpus.developer_memories(10**9, seed=99)
        for _ in range(WARM_UP_CALLS):
            await call(client, system.store(next(memories), 0))
        worker = threading.Thread(target=run_sweep)
        worker.start()
        while not done.is_set():
            latencies.append(await call(client, system.store(next(memories), 0)))
        worker.join()
    service.close()
    return {
        "sweep_s": report["secs"],
        "sweep_expired": report["expired"],
        "sweep_longest_lock_ms": report["longest_hold_ms"],
        "stores_during_sweep": len(latencies),
        "store_max_during_sweep_ms": max(latencies, default=0.0) * 1e3,
    }


def embed_all(system: AgentMemory, ollama: FakeOllama) -> float:
    """Vectors for every row through ``agent-memory reembed``; rows per second."""
    start = time.perf_counter()
    subprocess.run(
        [
            *(agent_memory_cmd(), "--db", str(system.db), "--ollama-url", ollama.url),
            *("--embedder", "ollama", "reembed"),
        ],
        check=True,
        env=clean_env(),
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


async def measure_size(
    size: int, systems: list[System], hybrid: bool, workdir: Path, log: Callable[[str], None]
) -> dict[str, dict[str, float]]:
    memories = list(corpus.developer_memories(size))
    fresh = list(corpus.developer_memories(STORES, seed=31))
    results: dict[str, dict[str, float]] = {}
    for system in systems:
        log(f"{size}: loading {system.name}")
        started = time.perf_counter()
        system.load(memories)
        if type(system).load_through is not System.load_through:
            devnull = open(os.devnull, "w")  # noqa: SIM115
            async with Client(stdio_client(system.params(), errlog=devnull)) as client:
                await system.load_through(client, memories)
        figures = {"load_s": time.perf_counter() - started}
        log(f"{size}: measuring {system.name}")
        figures["cold_start_ms"] = await cold_start(system)
        figures.update(await session(system, size, fresh))
        if isinstance(system, AgentMemory):
            if hybrid:
                with FakeOllama() as ollama:
                    figures["embed_all_s"] = embed_all(system, ollama)
                    system.ollama_url = ollama.url
                    searched = await session(system, size + STORES, fresh)
                    system.ollama_url = NO_OLLAMA
                for key in [k for k in searched if k.startswith("search_")]:
                    figures[f"hybrid_{key[len('search_') :]}"] = searched[key]
            figures.update(await sweep_under_writes(system, size))
        results[system.name] = figures
        shutil.rmtree(system.dir, ignore_errors=True)  # the next size starts from nothing
    return results


def results_table(results: dict[int, dict[str, dict[str, float]]], names: list[str]) -> str:
    """One row per size and metric, one column per server."""
    rows = []
    for size, by_system in results.items():
        keys: list[str] = []
        for name in names:
            keys += [k for k in by_system.get(name, {}) if k not in keys]
        for key in keys:
            values = [by_system.get(name, {}).get(key) for name in names]
            rows.append([size, key, *(None if v is None else float(v) for v in values)])
    return table(["size", "metric", *names], rows, "rl" + "r" * len(names))


def run_sizes(
    args: argparse.Namespace,
    sizes: list[int],
    peer_sizes: set[int],
    hybrid_sizes: set[int],
    workdir: Path,
    results: dict[int, dict[str, dict[str, float]]],
    log: Callable[[str], None],
) -> None:
    if args.peers:
        log("installing peers from npm")
        install_peers(workdir / "npm")
    for size in sizes:
        systems: list[System] = [Floor(workdir), AgentMemory(workdir)]
        if args.postgres:
            systems.append(AgentMemoryPostgres(workdir, args.postgres))
        if args.peers and size in peer_sizes:
            systems += [
                ServerMemory(workdir, workdir / "npm"),
                MemoryKeeper(workdir, workdir / "npm"),
            ]
        results[size] = anyio.run(measure_size, size, systems, size in hybrid_sizes, workdir, log)
        if args.json:  # after every size, so a long run leaves what it measured
            args.json.write_text(json.dumps(results, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000,1000000")
    parser.add_argument("--peers", action="store_true", help="install and bench the npm peers")
    parser.add_argument("--peer-sizes", default="1000,10000,100000")
    parser.add_argument("--hybrid-sizes", default="1000,10000")
    parser.add_argument(
        "--postgres",
        nargs="?",
        const="embedded",
        help="bench agent-memory on PostgreSQL too: a server's URL (the role creates"
        " databases), or nothing for an embedded one (the test extra's)",
    )
    parser.add_argument("--cache", type=Path, help="keep each size's loaded file here")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    AgentMemory.cache = args.cache
    sizes = [int(s) for s in args.sizes.split(",")]
    peer_sizes = {int(s) for s in args.peer_sizes.split(",")}
    hybrid_sizes = {int(s) for s in args.hybrid_sizes.split(",") if s}

    results: dict[int, dict[str, dict[str, float]]] = {}
    server = None
    if args.postgres == "embedded":
        from tests.support.postgres_server import PostgresServer

        server = PostgresServer()
        server.start()
        args.postgres = server.url
    try:
        with tempfile.TemporaryDirectory(prefix="am-run-") as tmp:
            run_sizes(args, sizes, peer_sizes, hybrid_sizes, Path(tmp), results, log)
    finally:
        if server is not None:
            server.stop()
    names = ["floor", "agent-memory"] + (["agent-memory-pg"] if args.postgres else [])
    names += ["server-memory", "memory-keeper"] if args.peers else []
    print(results_table(results, names))
    print("\nThe cost curve:\n")
    ours = [n for n in names if n.startswith("agent-memory")]
    print(curve.curve_table(results, [*ours, *(n for n in names if n not in ours)]))
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
