"""One search over MCP, its time split by layer: the frame, our handler, the service, the
store, SQL; beside the protocol floor.

    .venv/bin/python -m bench.search_overhead [--size 1000] [--searches 200] [--keep DIR]
                                              [--before SRC] [--json FILE]

Three servers run at once on one SQLite file of ``--size`` developer memories (bench/corpus.py,
loaded as bench/run.py loads them), each driven by the official MCP client over stdio, and
every query goes to the three in turn (side by side: the machine's load moves all three):

- floor: the do-nothing server of bench/floor_server.py (the SDK's and Python's price);
- plain: ``agent-memory serve`` as shipped, keyword mode;
- timed: the same ``serve`` in a process of this script (``--serve``) whose layers record
  their time per call: the tool call (transports/mcp/server.call_tool), the service's
  search, the store's search and recency bump, and SQL, the time spent inside the sqlite
  driver's execute and fetch calls (a cursor class that times them).

With ``--before SRC`` (a source tree, e.g. ``git archive`` of an older commit) a fourth
server, "before", is ``agent-memory serve`` importing agent_memory from SRC, in the same turns.

The client also times its own check of the answer against the tool's output schema (the
SDK's ``validate_tool_result``: the floor declares no schema, so it has none). Per call,
each layer's own time is what it took minus the layer inside it; the frame is the round
trip minus the tool call and the client's check: the SDK, stdio and JSON both ways. The
timed server's clocks add a few microseconds per layer; "plain" is the figure to quote.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SQL_METHODS = ("execute", "executemany", "fetchone", "fetchmany", "fetchall", "__next__")
STORE_METHODS = ("search", "bump", "neighbours")
WARM_UP = 20
LIMIT = 10
# Per call, the layers the timed server records (seconds; sql_* is SQL run inside store.*).
LAYERS = ("call", "service", "search", "bump", "sql_search", "sql_bump")


# -- the timed server (a process of its own) --------------------------------------------------


class _Clock:
    """The current call's times, by layer; only the serving thread's are counted."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.spent: dict[str, float] = {}
        self.phase = "search"

    def add(self, layer: str, seconds: float) -> None:
        if threading.get_ident() == self.thread:
            self.spent[layer] = self.spent.get(layer, 0.0) + seconds


def _timed_sql(clock: _Clock) -> None:
    """sqlean.connect hands out connections whose cursors time every execute and fetch."""
    import sqlean

    def timed(name: str) -> Callable[..., Any]:
        inner = getattr(sqlean.Cursor, name)

        def method(self: Any, *args: Any) -> Any:
            started = time.perf_counter()
            try:
                return inner(self, *args)
            finally:
                clock.add("sql_" + clock.phase, time.perf_counter() - started)

        return method

    cursor_class = type("TimedCursor", (sqlean.Cursor,), {n: timed(n) for n in SQL_METHODS})

    class TimedConnection(sqlean.Connection):  # type: ignore[misc]
        def cursor(self, factory: Any = None) -> Any:
            return super().cursor(factory or cursor_class)

        def execute(self, sql: str, parameters: Any = ()) -> Any:
            return self.cursor().execute(sql, parameters)

    connect = sqlean.connect
    sqlean.connect = lambda *a, **kw: connect(*a, **{"factory": TimedConnection, **kw})


def _timed_method(owner: type, name: str, clock: _Clock, layer: str, phase: str = "") -> None:
    inner = getattr(owner, name)

    def method(*args: Any, **kwargs: Any) -> Any:
        before, clock.phase = clock.phase, phase or clock.phase
        started = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            clock.add(layer, time.perf_counter() - started)
            clock.phase = before

    setattr(owner, name, method)


def serve_timed(timings: Path, args: list[str]) -> None:
    """``agent-memory ARGS`` (serve) with every layer of a search timed; one JSON line per
    tool call in ``timings``."""
    from agent_memory.service.core import MemoryService
    from agent_memory.storage.sqlite.store import SqliteStore
    from agent_memory.transports.cli.main import cli
    from agent_memory.transports.mcp import server

    clock = _Clock()
    _timed_sql(clock)
    _timed_method(MemoryService, "search", clock, "service")
    for name in STORE_METHODS:
        _timed_method(SqliteStore, name, clock, name, phase=name)
    out = timings.open("w", encoding="utf-8")
    call_tool = server.call_tool

    def timed_call(service: Any, name: str, arguments: Any) -> Any:
        clock.spent = {}
        started = time.perf_counter()
        result = call_tool(service, name, arguments)
        clock.spent["call"] = time.perf_counter() - started
        out.write(json.dumps({"tool": name, **clock.spent}) + "\n")
        out.flush()
        return result

    server.call_tool = timed_call
    cli.main(args, prog_name="agent-memory")


# -- the client --------------------------------------------------------------------------------


def _check_timer() -> list[float]:
    """The client's output-schema check, timed call by call (appended to the list returned)."""
    from mcp.client.session import ClientSession

    checks: list[float] = []
    inner = ClientSession.validate_tool_result

    async def validate(self: Any, name: str, result: Any) -> None:
        started = time.perf_counter()
        try:
            await inner(self, name, result)
        finally:
            checks.append(time.perf_counter() - started)

    ClientSession.validate_tool_result = validate  # type: ignore[method-assign]
    return checks


def _servers(db: Path, timings: Path, before: Path | None) -> dict[str, Any]:
    from mcp import StdioServerParameters

    from bench._common import ROOT, agent_memory_cmd, clean_env, module_cmd

    args = ["--db", str(db), "--embedder", "none", "--log-level", "warning", "serve"]
    floor, *floor_args = module_cmd("floor_server", "bench-floor")
    timed, *timed_args = module_cmd("search_overhead", "--serve", str(timings), "--", *args)
    servers = {
        "floor": StdioServerParameters(command=floor, args=floor_args, cwd=str(ROOT)),
        "plain": StdioServerParameters(command=agent_memory_cmd(), args=args, env=clean_env()),
        "timed": StdioServerParameters(
            command=timed, args=timed_args, cwd=str(ROOT), env=clean_env()
        ),
    }
    if before is not None:
        env = clean_env(PYTHONPATH=str(before.resolve()))
        servers["before"] = StdioServerParameters(command=agent_memory_cmd(), args=args, env=env)
    return servers


async def _drive(
    db: Path, timings: Path, queries: dict[str, list[str]], before: Path | None
) -> dict[str, Any]:
    """Every query to the three servers in turn; round trips and the client's checks."""
    from contextlib import AsyncExitStack

    from mcp import Client
    from mcp.client.stdio import stdio_client

    checks = _check_timer()
    devnull = open(os.devnull, "w")  # noqa: SIM115
    trips: dict[str, dict[str, list[float]]] = {}
    checked: dict[str, list[float]] = {}
    async with AsyncExitStack() as stack:
        clients = {}
        for name, params in _servers(db, timings, before).items():
            client = await stack.enter_async_context(Client(stdio_client(params, errlog=devnull)))
            await client.list_tools()
            clients[name] = client
        for query in [q for listed in queries.values() for q in listed][:WARM_UP]:
            for client in clients.values():
                await client.call_tool("memory_search", {"query": query, "limit": LIMIT})
        checks.clear()
        for kind, listed in queries.items():
            for query in listed:
                for name, client in clients.items():
                    started = time.perf_counter()
                    result = await client.call_tool(
                        "memory_search", {"query": query, "limit": LIMIT}
                    )
                    elapsed = time.perf_counter() - started
                    if result.is_error:
                        raise RuntimeError(f"{name}: {result.content}")
                    trips.setdefault(kind, {}).setdefault(name, []).append(elapsed)
                    if name == "timed":
                        checked.setdefault(kind, []).append(checks[-1])
    return {"trips": trips, "checks": checked}


def _timed_lines(timings: Path, warm_up: int) -> list[dict[str, float]]:
    """The timed server's lines of the measured searches (the warm-up's left out)."""
    lines = [json.loads(line) for line in timings.read_text().splitlines() if line.strip()]
    return [line for line in lines if line["tool"] == "memory_search"][warm_up:]


def split(trips: list[float], checks: list[float], lines: list[dict[str, float]]) -> dict:
    """Each call's own time per layer (ms): a layer's time minus the layer inside it."""
    rows: dict[str, list[float]] = {}
    for trip, check, line in zip(trips, checks, lines, strict=True):
        get = {k: line.get(k, 0.0) for k in LAYERS}
        store = get["search"] + get["bump"]
        own = {
            "client's output-schema check": check,
            "frame: SDK, stdio, JSON both ways": trip - check - get["call"],
            "MCP handler (minus the service)": get["call"] - get["service"],
            "service (minus the store)": get["service"] - store,
            "store search (minus SQL)": get["search"] - get["sql_search"],
            "SQL of the search": get["sql_search"],
            "recency bump (store and SQL)": get["bump"],
        }
        for layer, seconds in own.items():
            rows.setdefault(layer, []).append(seconds * 1e3)
    return rows


def report(measured: dict[str, Any], lines: list[dict[str, float]]) -> tuple[str, dict]:
    from bench._common import pct, table

    out_rows, figures, at = [], {}, 0
    for kind, by_server in measured["trips"].items():
        n = len(by_server["timed"])
        own = split(by_server["timed"], measured["checks"][kind], lines[at : at + n])
        at += n
        floor_mean = statistics.fmean(by_server["floor"]) * 1e3
        for name in [n for n in ("floor", "before", "plain", "timed") if n in by_server]:
            ms = [t * 1e3 for t in by_server[name]]
            row = [kind, f"round trip, {name}", pct(ms, 0.5), pct(ms, 0.99), statistics.fmean(ms)]
            out_rows.append(row)
        for layer, ms in own.items():
            out_rows.append([kind, f"  {layer}", pct(ms, 0.5), pct(ms, 0.99), statistics.fmean(ms)])
        plain = [t * 1e3 for t in by_server["plain"]]
        figures[kind] = {
            **{f"{n}_p50_ms": pct([t * 1e3 for t in by_server[n]], 0.5) for n in by_server},
            "over_floor_mean_ms": statistics.fmean(plain) - floor_mean,
            "layers_p50_ms": {k: pct(v, 0.5) for k, v in own.items()},
        }
    head = ["search", "layer", "p50 ms", "p99 ms", "mean ms"]
    return table(head, out_rows, "llrrr"), figures


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        serve_timed(Path(sys.argv[2]), sys.argv[sys.argv.index("--") + 1 :])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--searches", type=int, default=200, help="of each kind")
    parser.add_argument("--keep", type=Path, help="reuse (or leave) the loaded file here")
    parser.add_argument("--before", type=Path, help="also serve agent_memory from this tree")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import anyio

    from bench import corpus, run
    from bench._common import log, machine

    with tempfile.TemporaryDirectory(prefix="am-overhead-") as tmp:
        workdir = args.keep or Path(tmp)
        system = run.AgentMemory(workdir / f"size-{args.size}")
        if not system.db.exists():
            log(f"loading {args.size} memories into {system.db}")
            system.load(list(corpus.developer_memories(args.size)))
        queries = {
            "two words": corpus.two_word_queries(args.searches),
            "question": corpus.questions(args.searches),
        }
        timings = Path(tmp) / "timings.jsonl"
        measured = anyio.run(_drive, system.db, timings, queries, args.before)
        warm_up = min(WARM_UP, sum(len(listed) for listed in queries.values()))
        lines = _timed_lines(timings, warm_up)
    shown, figures = report(measured, lines)
    print(shown)
    print(f"\n{machine()}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
