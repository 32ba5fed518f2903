"""REST benchmark: stores and searches over HTTP keep-alive, 1 and 4 concurrent clients.

    .venv/bin/python -m bench.bench_rest [--size 10000] [--json out.json]

Starts `agent-memory serve-rest` on a free loopback port with a fresh database, and the
floor (bench/floors.py: Flask under waitress answering the same routes with nothing), and
runs the same requests against both. Each client is its own process with one keep-alive
connection (the standard library's http.client: `requests` spends about twice its CPU per
request, which on a small machine is taken from the server); the clients do not share a GIL
with each other, but they do share the machine's cores with the server.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

from bench import corpus
from bench._common import ROOT, agent_memory_cmd, clean_env, module_cmd

SEARCHES_PER_CLIENT = 250
SEARCH_LIMIT = 10


def start(command: list[str]) -> tuple[subprocess.Popen, str]:
    """Start a server that prints `REST listening on HOST:PORT`; its URL."""
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=clean_env(), cwd=ROOT)
    assert proc.stderr is not None
    for line in proc.stderr:
        match = re.match(r"REST listening on (\S+)$", line.strip())
        if match:  # keep reading: a full pipe would stall the server's logging
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, f"http://{match.group(1)}"
    raise SystemExit(f"{command[0]} did not start")


def agent_memory(db: Path) -> list[str]:
    return [
        agent_memory_cmd(),
        "--db",
        str(db),
        "--log-level",
        "warning",
        "serve-rest",
        "--addr",
        "127.0.0.1:0",
    ]


def floor() -> list[str]:
    return module_cmd("floors", "rest", "0")


def client(url: str, kind: str, items: list) -> tuple[list[float], float]:
    address = urlsplit(url)
    conn = http.client.HTTPConnection(address.hostname, address.port)
    path = "/api/memories" if kind == "store" else "/api/search"
    headers = {"Content-Type": "application/json"}
    latencies = []
    began = time.perf_counter()
    for item in items:
        t = time.perf_counter()
        body = item if kind == "store" else {"query": item, "limit": SEARCH_LIMIT}
        conn.request("POST", path, json.dumps(body), headers)
        response = conn.getresponse()
        response.read()
        if response.status >= 300:
            raise SystemExit(f"{path}: HTTP {response.status}")
        latencies.append(time.perf_counter() - t)
    conn.close()
    return latencies, time.perf_counter() - began


def run(pool: ProcessPoolExecutor, url: str, kind: str, batches: list[list]) -> dict[str, float]:
    futures = [pool.submit(client, url, kind, batch) for batch in batches]
    results = [f.result() for f in futures]
    latencies = sorted(x for lat, _ in results for x in lat)
    wall = max(elapsed for _, elapsed in results)
    return {
        "requests_per_s": len(latencies) / wall,
        "p50_ms": latencies[len(latencies) // 2] * 1e3,
        "p99_ms": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] * 1e3,
    }


def measure(
    pool: ProcessPoolExecutor, command: list[str], size: int
) -> dict[str, dict[str, float]]:
    """Stores then searches against one server (fresh file): figures per workload."""
    memories = list(corpus.memories(size))
    half = size // 2
    out: dict[str, dict[str, float]] = {}
    proc, url = start(command)
    try:
        out["store, 1 client"] = run(pool, url, "store", [memories[:half]])
        rest = memories[half:]
        out["store, 4 clients"] = run(pool, url, "store", [rest[i::4] for i in range(4)])
        for label, queries in (
            ("keywords", [q for q in corpus.queries(8 * SEARCHES_PER_CLIENT) if " " not in q]),
            ("questions", [q for q in corpus.queries(8 * SEARCHES_PER_CLIENT) if " " in q]),
            ("mixed", corpus.queries(4 * SEARCHES_PER_CLIENT)),
        ):
            out[f"search {label}, 1 client"] = run(
                pool, url, "search", [queries[:SEARCHES_PER_CLIENT]]
            )
            batches = [queries[i::4][:SEARCHES_PER_CLIENT] for i in range(4)]
            out[f"search {label}, 4 clients"] = run(pool, url, "search", batches)
    finally:
        proc.terminate()
        proc.wait()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="am-rest-") as tmp, ProcessPoolExecutor(4) as pool:
        out = measure(pool, agent_memory(Path(tmp) / "memory.db"), args.size)
        base = measure(pool, floor(), args.size)
    print(f"| at {args.size:,} memories | requests/s | p50 ms | p99 ms | floor requests/s |")
    print("|---|---:|---:|---:|---:|")
    for name, figures in out.items():
        rate, p50, p99 = (figures[k] for k in ("requests_per_s", "p50_ms", "p99_ms"))
        figures["floor_requests_per_s"] = ceiling = base[name]["requests_per_s"]
        print(f"| {name} | {rate:.0f} | {p50:.2f} | {p99:.2f} | {ceiling:.0f} |")
    print(f"\nmachine: {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
