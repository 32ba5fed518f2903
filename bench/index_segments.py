"""Keyword search on an index built by stores, as stored and after the sweep merged it.

Every store's transaction adds a segment to the FTS5 index, and FTS5 merges a level only
once it holds four; the sweep (service/lifecycle.py) merges any level holding two. The
databases of bench/run.py are loaded by import, which merges the index into one segment, so
they do not show this: here ``size`` developer memories are stored one by one through the
service (the near-duplicate check off, which changes nothing in the index), the file is
copied, and the copy is swept. The same two-word searches and questions are then asked of
both, the two alternating, in process.

    python -m bench.index_segments [--sizes 1000,10000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import sqlean

from agent_memory.contract.models import Filters
from agent_memory.service import similar
from agent_memory.service.core import MemoryService
from agent_memory.service.lifecycle import sweep
from agent_memory.storage import open_store
from bench import corpus
from bench._common import machine, pct, table

QUERIES = 100


def segments(path: Path) -> int:
    """FTS5_SEGMENT_ROWID in SQLite's fts5Int.h: a data row's segment id from bit 37 on."""
    with sqlean.connect(path) as conn:
        found = conn.execute("SELECT count(DISTINCT id >> 37) FROM memories_fts_data WHERE id > 10")
        return found.fetchone()[0]


def build(path: Path, size: int) -> list[str]:
    memories = list(corpus.developer_memories(size + QUERIES))
    svc = MemoryService(open_store(path))
    similar.CHECK_NEAR_DUPLICATES = False
    try:
        for memory in memories[:size]:
            svc.store({"content": memory["content"], "type": memory["type"]})
    finally:
        similar.CHECK_NEAR_DUPLICATES = True
        svc.close()
    return [" ".join(m["content"].split()[2:4]) for m in memories[size:]]


def measure(size: int, rounds: int, workdir: Path) -> list[tuple[object, ...]]:
    stored = workdir / f"stored-{size}.db"
    two_words = build(stored, size)
    swept = workdir / f"swept-{size}.db"
    shutil.copy(stored, swept)
    svc = MemoryService(open_store(swept))
    began = time.perf_counter()
    steps = sweep(svc)["merged"]
    merge_ms = (time.perf_counter() - began) * 1000
    svc.close()
    kinds = {"two words": two_words, "question": list(corpus.questions(QUERIES))}
    files = {"as stored": stored, "after the sweep": swept}
    times: dict[tuple[str, str], list[float]] = {(f, k): [] for f in files for k in kinds}
    services = {name: MemoryService(open_store(path)) for name, path in files.items()}
    try:
        for _ in range(rounds):
            for kind, queries in kinds.items():
                for query in queries:
                    for name, svc in services.items():
                        began = time.perf_counter()
                        svc.db.search(query, None, now=svc.now(), limit=10, filters=Filters())
                        times[(name, kind)].append((time.perf_counter() - began) * 1000)
    finally:
        for svc in services.values():
            svc.close()
    print(f"{size:,}: the sweep took {merge_ms:.0f} ms ({steps} merge steps)")
    return [
        (f"{size:,}", name, segments(path), *(f"{pct(times[(name, k)], 0.5):.3f}" for k in kinds))
        for name, path in files.items()
    ]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-segments-") as workdir:
        for size in (int(s) for s in args.sizes.split(",")):
            rows += measure(size, args.rounds, Path(workdir))
    print(f"{machine()}; store search in process, p50 ms")
    print(table(("memories", "index", "segments", "two words", "question"), rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
