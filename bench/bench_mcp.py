"""MCP benchmark: agent-memory against the protocol floor, both driven by the SDK's client.

    .venv/bin/python bench/bench_mcp.py [--sizes 1000,10000] [--json out.json]

Every figure comes from one run on one machine. The floor is a do-nothing server on the
same SDK with the same tool names (bench/floor_server.py): its numbers are what Python and
the protocol cost before agent-memory does any work.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus

HERE = Path(__file__).resolve().parent
COLD_RUNS = 5
SEARCHES = 200
SEARCH_LIMIT = 10
KINDS = ("floor", "agent-memory")


def agent_memory_cmd() -> str:
    found = Path(sys.executable).with_name("agent-memory")
    return str(found) if found.exists() else shutil.which("agent-memory") or "agent-memory"


def server(kind: str, workdir: Path, marker: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
    if kind == "floor":
        return StdioServerParameters(
            command=sys.executable, args=[str(HERE / "floor_server.py"), marker], env=env
        )
    db = workdir / f"{marker}.db"
    return StdioServerParameters(
        command=agent_memory_cmd(),
        args=["--db", str(db), "--log-level", "warning", "serve"],
        env=env,
    )


def peak_rss_mib(marker: str) -> float | None:
    """VmHWM of the server process whose command line carries ``marker``."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if marker.encode() in cmdline and b"bench_mcp" not in cmdline:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            continue
    return None


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def cold_start(kind: str, workdir: Path) -> float:
    """Spawn to the first tools/list answer, on an existing database (the usual start)."""
    params = server(kind, workdir, f"cold-{kind}")
    start = time.perf_counter()
    async with Client(stdio_client(params, errlog=open(os.devnull, "w"))) as client:
        await client.list_tools()
        return time.perf_counter() - start


async def timed(client: Client, name: str, args: dict) -> float:
    start = time.perf_counter()
    await client.call_tool(name, args)
    return time.perf_counter() - start


async def workload(workdir: Path, size: int) -> dict[str, dict[str, float]]:
    """Both servers at once, calls alternating, so machine noise hits both alike."""
    markers = {kind: f"load-{kind}-{size}" for kind in KINDS}
    devnull = open(os.devnull, "w")  # noqa: SIM115
    stores: dict[str, list[float]] = {kind: [] for kind in KINDS}
    searches: dict[str, list[float]] = {kind: [] for kind in KINDS}
    async with (
        Client(stdio_client(server("floor", workdir, markers["floor"]), errlog=devnull)) as floor,
        Client(
            stdio_client(server("agent-memory", workdir, markers["agent-memory"]), errlog=devnull)
        ) as ours,
    ):
        clients = {"floor": floor, "agent-memory": ours}
        for client in clients.values():
            await client.list_tools()
        for memory in corpus.memories(size):
            for kind, client in clients.items():
                stores[kind].append(await timed(client, "memory_store", memory))
        for query in corpus.queries(SEARCHES):
            args = {"query": query, "limit": SEARCH_LIMIT}
            for kind, client in clients.items():
                searches[kind].append(await timed(client, "memory_search", args))
        rss = {kind: peak_rss_mib(marker) for kind, marker in markers.items()}
    return {
        kind: {
            "stores_per_s": size / sum(stores[kind]),
            "store_p50_ms": pct(stores[kind], 0.50) * 1e3,
            "store_p99_ms": pct(stores[kind], 0.99) * 1e3,
            "search_p50_ms": pct(searches[kind], 0.50) * 1e3,
            "search_p99_ms": pct(searches[kind], 0.99) * 1e3,
            "peak_rss_mib": rss[kind] or float("nan"),
        }
        for kind in KINDS
    }


async def measure(sizes: list[int]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {kind: {} for kind in KINDS}
    with tempfile.TemporaryDirectory(prefix="am-bench-") as tmp:
        workdir = Path(tmp)
        colds: dict[str, list[float]] = {kind: [] for kind in KINDS}
        for kind in KINDS:
            await cold_start(kind, workdir)  # creates the database; not counted
        for _ in range(COLD_RUNS):
            for kind in KINDS:
                colds[kind].append(await cold_start(kind, workdir))
        for kind in KINDS:
            out[kind]["cold_start_ms"] = statistics.median(colds[kind]) * 1e3
        for size in sizes:
            for kind, figures in (await workload(workdir, size)).items():
                out[kind].update({f"{key}@{size}": value for key, value in figures.items()})
    return out


def table(results: dict[str, dict[str, float]]) -> str:
    floor, ours = (results[kind] for kind in KINDS)
    lines = [
        "| metric | floor | agent-memory | ratio |",
        "|---|---:|---:|---:|",
    ]
    for key in floor:
        ratio = ours[key] / floor[key] if floor[key] else float("nan")
        lines.append(f"| {key} | {floor[key]:.2f} | {ours[key]:.2f} | {ratio:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results = anyio.run(measure, sizes)
    print(table(results))
    load = os.getloadavg()[0]
    print(f"\nmachine: {os.cpu_count()} cpus, load {load:.2f}, python {sys.version.split()[0]}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
