"""Speed and memory of the local model (agent_memory/embedders/local.py).

Why: the embedder seam must know what an in-process model costs before it is the default:
start-up, resident memory, one query's latency, and bulk throughput at 1 and 2 threads.
Each thread count runs in a fresh process, because OpenMP reads its thread count once per
process and peak RSS is per process.

    python -m bench.local_model_speed            # both thread counts, a table
    python -m bench.local_model_speed --threads 1 --json   # one process's figures
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time

from bench._common import proc_mib, run_module

BATCHES = (16, 64, 200)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(threads: int, repeats: int) -> dict:
    import numpy as np  # noqa: F401  (imported before the clock: the seam imports it anyway)

    from agent_memory.embedders.local import LocalModel
    from tests.support.semantic_set import MEMORIES, PARAPHRASES

    before = proc_mib()
    model = LocalModel(num_threads=threads, batch_size=max(BATCHES))
    t0 = time.perf_counter()
    assert model.unavailable_reason() is None
    load_s = time.perf_counter() - t0
    after_load = proc_mib()

    queries = [q.query for q in PARAPHRASES]  # ~45 characters each
    model.encode_array(queries[:2], query=True)  # first-call warm-up (page faults, threads)
    after_first = proc_mib()  # the weights are memory-mapped: touched by the first call
    singles = []
    cpu0 = time.process_time()
    for _ in range(repeats):
        for q in queries:
            t = time.perf_counter()
            model.encode_array([q], query=True)
            singles.append((time.perf_counter() - t) * 1000)
    # CPU time per text: what a text costs whatever else the machine is doing (with 2
    # threads it includes OpenMP's spin-waiting at barriers).
    single_cpu_ms = (time.process_time() - cpu0) * 1000 / len(singles)
    texts = [m.content for m in MEMORIES]  # ~100 characters each
    pool = (texts * (max(BATCHES) // len(texts) + 1))[: max(BATCHES)]
    rates, cpu_rates = {}, {}
    for size in BATCHES:
        batch = pool[:size]
        best = best_cpu = 0.0
        for _ in range(repeats):
            t, c = time.perf_counter(), time.process_time()
            model.encode_array(batch, query=False)
            best = max(best, size / (time.perf_counter() - t))
            best_cpu = max(best_cpu, size / (time.process_time() - c))
        rates[size], cpu_rates[size] = best, best_cpu
    return {
        "threads": threads,
        "load_s": load_s,
        "rss_before_mb": before,
        "rss_after_load_mb": after_load,
        "rss_after_first_call_mb": after_first,
        "single_ms_median": statistics.median(singles),
        "single_ms_p90": statistics.quantiles(singles, n=10)[-1],
        "single_cpu_ms": single_cpu_ms,
        "texts_per_s": rates,
        "texts_per_cpu_s": cpu_rates,
        "peak_rss_mb": peak_rss_mb(),  # the batch of 200 is the largest moment
        "mean_chars_single": statistics.mean(len(q) for q in queries),
        "mean_chars_batch": statistics.mean(len(t) for t in pool),
        "loadavg_1min": os.getloadavg()[0],
    }


def peak_for_batch(size: int) -> dict:
    """Peak RSS of a fresh process that loads the model and embeds one batch of ``size``."""
    from agent_memory.embedders.local import LocalModel
    from tests.support.semantic_set import MEMORIES

    texts = [m.content for m in MEMORIES]
    pool = (texts * (size // len(texts) + 1))[:size]
    model = LocalModel(num_threads=1, batch_size=size)
    before = peak_rss_mb()
    model.encode_array(pool, query=False)
    return {"batch": size, "peak_before_mb": before, "peak_rss_mb": peak_rss_mb()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--peak-batch", type=int, help="peak RSS of one batch, then exit")
    args = parser.parse_args()
    if args.peak_batch:
        print(json.dumps(peak_for_batch(args.peak_batch)))
        return 0
    if args.threads:
        result = measure(args.threads, args.repeats)
        print(json.dumps(result))
        return 0
    rows = []
    for threads in (1, 2):
        out = run_module(
            "local_model_speed",
            *("--threads", str(threads), "--repeats", str(args.repeats)),
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        rows.append(json.loads(out))
    print(
        "| threads | load s | RSS MB: before / after load / after 1st call "
        "| single text ms (median / p90; CPU ms) | texts/s b16 | b64 | b200 "
        "| texts per CPU-s b16 / b64 / b200 | peak RSS MB | load avg |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        rate, cpu = r["texts_per_s"], r["texts_per_cpu_s"]
        print(
            f"| {r['threads']} | {r['load_s']:.2f} | {r['rss_before_mb']:.0f} / "
            f"{r['rss_after_load_mb']:.0f} / {r['rss_after_first_call_mb']:.0f} "
            f"| {r['single_ms_median']:.1f} / {r['single_ms_p90']:.1f}; {r['single_cpu_ms']:.1f} "
            f"| {rate['16']:.0f} | {rate['64']:.0f} | {rate['200']:.0f} "
            f"| {cpu['16']:.0f} / {cpu['64']:.0f} / {cpu['200']:.0f} "
            f"| {r['peak_rss_mb']:.0f} | {r['loadavg_1min']:.1f} |"
        )
    print("\n| batch (1 thread, fresh process) | peak RSS before MB | peak RSS after MB |")
    print("|---|---|---|")
    for size in BATCHES:
        out = run_module(
            "local_model_speed",
            *("--peak-batch", str(size)),
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        r = json.loads(out)
        print(f"| {size} | {r['peak_before_mb']:.0f} | {r['peak_rss_mb']:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
