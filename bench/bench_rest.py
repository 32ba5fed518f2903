"""REST benchmark: stores and searches over HTTP keep-alive, 1 and 4 concurrent clients.

    .venv/bin/python bench/bench_rest.py [--size 10000] [--json out.json]

Starts `agent-memory serve-rest` on a free loopback port with a fresh database. Each client
is its own process with one keep-alive session, so the clients do not share a GIL with each
other; they do share the machine's two cores with the daemon.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus

SEARCHES_PER_CLIENT = 250
SEARCH_LIMIT = 10


def start(db: Path) -> tuple[subprocess.Popen, str]:
    exe = Path(sys.executable).with_name("agent-memory")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
    cmd = [str(exe) if exe.exists() else shutil.which("agent-memory") or "agent-memory"]
    proc = subprocess.Popen(
        [*cmd, "--db", str(db), "--log-level", "warning", "serve-rest", "--addr", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    for line in proc.stderr:
        match = re.match(r"REST listening on (\S+)$", line.strip())
        if match:
            return proc, f"http://{match.group(1)}"
    raise SystemExit("serve-rest did not start")


def client(url: str, kind: str, items: list) -> tuple[list[float], float]:
    session = requests.Session()
    latencies = []
    began = time.perf_counter()
    for item in items:
        t = time.perf_counter()
        if kind == "store":
            response = session.post(f"{url}/api/memories", json=item)
        else:
            response = session.post(
                f"{url}/api/search", json={"query": item, "limit": SEARCH_LIMIT}
            )
        response.raise_for_status()
        latencies.append(time.perf_counter() - t)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    memories = list(corpus.memories(args.size))
    half = args.size // 2
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="am-rest-") as tmp, ProcessPoolExecutor(4) as pool:
        proc, url = start(Path(tmp) / "memory.db")
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
    print(f"| at {args.size:,} memories | requests/s | p50 ms | p99 ms |")
    print("|---|---:|---:|---:|")
    for name, figures in out.items():
        rate, p50, p99 = (figures[k] for k in ("requests_per_s", "p50_ms", "p99_ms"))
        print(f"| {name} | {rate:.0f} | {p50:.2f} | {p99:.2f} |")
    print(f"\nmachine: {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
