"""How long ``agent-memory tidy`` takes at 10,000 memories: the report with each signal (the
local model's cosine of the stored vectors, and keyword overlap as with --embedder none), the
snapshot read alone, and --apply (every cluster merged, one transaction each), on SQLite and,
with --postgres, on an embedded PostgreSQL. The signals alternate run by run, so a load
from other jobs falls on both alike.

The database: developer memories (bench/corpus.py) with vectors drawn around the local
model's embeddings of 1,500 of them, built by bench/store_similar.py. Each base text
comes back as several memories that differ in a number only ("... (1234)"), so the keyword
signal finds about 1,500 clusters: a heavy case for it.

    python -m bench.tidy [--size 10000] [--runs 5] [--postgres]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from bench import store_similar
from bench._common import machine, pct, table, throwaway_postgres


def build(location: str, size: int) -> None:
    store_similar.build(location, size)  # type: ignore[arg-type]  # open_store takes a URL too


def report_times(location: str, runs: int) -> dict[str, list[float]]:
    """Seconds per report, by signal; and the snapshot read alone."""
    times: dict[str, list[float]] = {"cosine": [], "keyword": [], "read": []}
    shapes: dict[str, tuple[int, int]] = {}
    for run in range(runs * 2):
        off = run % 2 == 1
        svc = MemoryService(open_store(location), embedding_off=off)
        try:
            began = time.perf_counter()
            report = svc.tidy({})
            times[report["signal"]].append(time.perf_counter() - began)
            members = sum(len(c["merge"]) for c in report["clusters"])
            shapes[report["signal"]] = (len(report["clusters"]), members)
            if off:
                began = time.perf_counter()
                svc.db.tidy_read(None, vectors=True)
                times["read"].append(time.perf_counter() - began)
        finally:
            svc.close()
    for signal, (clusters, members) in shapes.items():
        print(f"{signal}: {clusters:,} clusters, {members:,} memories to supersede")
    return times


def apply_time(location: str) -> tuple[float, int]:
    """Seconds to merge every cluster of the keyword report (the one with most members to
    supersede here), and how many clusters."""
    svc = MemoryService(open_store(location), embedding_off=True)
    try:
        found = svc.tidy({})["clusters"]
        began = time.perf_counter()
        svc.tidy_merge(found)
        return time.perf_counter() - began, len(found)
    finally:
        svc.close()


def measure(name: str, location: str, runs: int) -> list[list[object]]:
    times = report_times(location, runs)
    took, clusters = apply_time(location)
    rows = [[name, f"report, {s}", pct(times[s], 0.5) * 1000] for s in ("cosine", "keyword")]
    rows.append([name, "snapshot read alone", pct(times["read"], 0.5) * 1000])
    rows.append([name, f"--apply (keyword report), {clusters:,} clusters", took * 1000])
    return rows


def _postgres(size: int, runs: int) -> list[list[object]]:
    with throwaway_postgres("bench", ("vector", "unaccent")) as url:
        build(url, size)
        return measure("PostgreSQL", url, runs)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-tidy-"))
    try:
        path = workdir / "tidy.db"
        build(str(path), args.size)
        rows = measure("SQLite", str(path), args.runs)
        if args.postgres:
            rows += _postgres(args.size, args.runs)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{machine()} (shared with other jobs); {args.size:,} memories, p50 of {args.runs}")
    print(table(["engine", "what", "ms"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
