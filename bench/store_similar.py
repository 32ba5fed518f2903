"""What the near-duplicate check (service/hygiene/similar.py) adds to a store, at 100,000 memories
with the local model: store p50 with the check and without, side by side in one run (the
two alternate store by store, so a load from other jobs falls on both alike), and the
check alone (similar.find, the embedding already made).

The database: developer memories (bench/corpus.py) with vectors drawn around the local
model's embeddings of BASE_TEXTS of them, as bench/bench_vectors.py draws them (a real
vector plus noise shaped like the model's own spread, calibrated to the real nearest-
neighbour cosine). Each store is a new developer memory, embedded by the model in process.

    python -m bench.store_similar [--size 100000] [--stores 200] [--keep DIR]

--keep DIR: the database is built once into DIR and kept; each run stores into a copy of
it, so that one run's stores do not change the next run's database.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from agent_memory.embedders.local import Local, LocalModel
from agent_memory.service.core import MemoryService
from agent_memory.service.hygiene import similar
from agent_memory.storage import open_store
from agent_memory.storage.sqlite import vector_codes, vector_index
from bench import bench_vectors, corpus
from bench._common import machine, pct, table

BASE_TEXTS = 1_500
# The check a store runs; the bench turns it off by standing in for it (the product has no
# such switch).
FIND = similar.find
# The near-duplicate check's constants and a search's, which replace them to compare.
SEARCH_EFFORT = [
    (vector_codes, "NEAR_STAGE1_MIN_ROWS", "STAGE1_MIN_ROWS"),
    (vector_codes, "NEAR_STAGE1_KEEP", "STAGE1_KEEP"),
    (vector_codes, "NEAR_SCORE_KEEP", "SCORE_KEEP"),
    (vector_index, "NEAR_RERANK_MIN", "RERANK_MIN"),
]


def build(path: Path, size: int) -> None:
    texts = [m["content"] for m in corpus.developer_memories(BASE_TEXTS)]
    base = LocalModel(num_threads=2).encode_array(texts, query=False)
    alpha = bench_vectors.calibrate(base)["alpha"]
    bench_vectors.fill(path, bench_vectors.vectors_of(size, base, alpha), texts)


@contextmanager
def database(size: int, keep: Path | None) -> Iterator[Path]:
    """The database of ``size`` memories to work on: built in a temporary folder, or with
    ``keep`` built once into it and copied for each run (the copy is removed after)."""
    workdir = keep or Path(tempfile.mkdtemp(prefix="bench-similar-"))
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"similar-{size}.db"
    if not path.exists():
        began = time.perf_counter()
        build(path, size)
        print(f"built {size:,} memories in {time.perf_counter() - began:.0f} s")
    if keep is None:
        yield path
        return
    copy = Path(tempfile.mkdtemp(prefix="bench-similar-run-"))
    try:
        for suffix in ("", "-wal"):  # a closed store leaves no WAL; copied if one is there
            if Path(f"{path}{suffix}").exists():
                shutil.copyfile(f"{path}{suffix}", copy / f"{path.name}{suffix}")
        yield copy / path.name
    finally:
        shutil.rmtree(copy, ignore_errors=True)


@contextmanager
def near_effort(own: bool) -> Iterator[None]:
    """The check ranks with its own effort, or (``own`` false) with a search's."""
    if own:
        yield
        return
    saved = [(module, name, getattr(module, name)) for module, name, _ in SEARCH_EFFORT]
    for module, name, value in SEARCH_EFFORT:
        setattr(module, name, getattr(module, value))
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


@contextmanager
def without_check() -> Iterator[None]:
    """Stores meanwhile look for no near duplicate: their answer gains nothing."""
    similar.find = lambda *args, **kwargs: {}
    try:
        yield
    finally:
        similar.find = FIND


def measure(path: Path, stores: int) -> dict[str, list[float]]:
    svc = MemoryService(open_store(path), embedder=Local())
    svc.db._vector_index().load()  # loaded now, not in the background during the first stores
    times: dict[str, list[float]] = {"with": [], "without": [], "check": [], "search": []}
    new = list(corpus.developer_memories(stores + 20, seed=99))
    try:
        svc.search({"query": "warm up the vector index", "limit": 5})
        for k, memory in enumerate(new):
            on = k % 2 == 0
            args = {"content": memory["content"], "type": memory["type"]}
            with nullcontext() if on else without_check():
                began = time.perf_counter()
                svc.store(args)
                elapsed = (time.perf_counter() - began) * 1000
            embedding = svc.embedder.embed_documents([memory["content"]])[0]
            # the check alone, with its own effort and with a search's, alternating
            began = time.perf_counter()
            with near_effort(on):
                FIND(svc.db, memory["content"], None, embedding, svc.now())
            check = (time.perf_counter() - began) * 1000
            if k >= 20:  # the first stores warm caches
                times["with" if on else "without"].append(elapsed)
                times["check" if on else "search"].append(check)
    finally:
        svc.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--stores", type=int, default=200)
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    with database(args.size, args.keep) as path:
        times = measure(path, args.stores)
    print(f"{machine()} (shared with other jobs); {args.size:,} memories, local model")
    rows = [
        (name, len(values), pct(values, 0.5), pct(values, 0.9))
        for name, values in (
            ("store, with the check", times["with"]),
            ("store, without", times["without"]),
            ("the check alone", times["check"]),
            ("the check alone, ranked with a search's effort", times["search"]),
        )
    ]
    print(table(("ms", "n", "p50", "p90"), rows))
    added = pct(times["with"], 0.5) - pct(times["without"], 0.5)
    print(f"\nstore p50 difference: {added:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
