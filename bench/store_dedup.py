"""What the exact-duplicate check costs a store (issue 36), side by side in one run.

    python -m bench.store_dedup [ROWS]

A SQLite database is filled with ROWS memories (default 10,000, no embedder), then new
contents are stored alternately through Store.insert (no check) and Store.insert_unique (the
check under the same write lock, as memory_store does): p50 and p90 of each, in ms. Then
the same content again through insert_unique: the duplicate path (lookup, merge, a use).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from agent_memory.storage import open_store
from agent_memory.storage.base import NewMemory
from bench._common import machine, pct, table

T0 = 1_767_225_600
SAMPLES = 300


def memory(text: str) -> NewMemory:
    return NewMemory("PATTERN", text, ["bench"], None, "bench", T0, None)


def main(rows: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(str(Path(tmp) / "memory.db"))
        for n in range(rows):
            store.insert(memory(f"filler memory {n} about subject {n % 97}"), None)
        timings: dict[str, list[float]] = {"insert": [], "insert_unique": [], "duplicate": []}
        for n in range(SAMPLES):
            for name, call in (("insert", store.insert), ("insert_unique", store.insert_unique)):
                began = time.perf_counter()
                call(memory(f"new memory {name} {n} about a fresh subject"), None)
                timings[name].append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            store.insert_unique(memory(f"filler memory {n} about subject {n % 97}"), None)
            timings["duplicate"].append((time.perf_counter() - began) * 1000)
        store.close()
    print(f"{rows:,} memories, {SAMPLES} stores each, alternating")
    print(
        table(
            ["path", "p50 ms", "p90 ms"],
            [(k, pct(v, 0.5), pct(v, 0.9)) for k, v in timings.items()],
        )
    )
    print(machine())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
