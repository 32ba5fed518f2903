"""What the shortcuts of a query searched as words cost in answers, and save in time.

    .venv/bin/python -m bench.pruning [--size 100000] [--shares 0.05,0.1,0.2] [--keep DIR]

Loads the corpus of bench/run.py (through ``agent-memory import``), then asks the same
questions (limit 10) in process: with every word scored in one query over every row that
holds an informative word (the reference: no shortcut, bm25.PRUNE_MIN_ROWS and
PRUNE_EXACT_ROWS out of reach), with the informative words alone scored and the common
ones added back to the best rows (the default), and with only the rows of the rarest words
scored, at each share of the rows (bm25.PRUNE_SCORED_SHARE). Which rows match is the same
in every setting (bm25.informative). Reported per setting: p50/p99 latency, the share of
pages identical to the reference (same ids, same order) and the mean overlap of the top 10.
With --keep, the reference pages are kept in DIR and reused.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from agent_memory.search import bm25
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from bench import corpus
from bench._common import pct
from bench.run import AgentMemory

QUESTIONS = 200
LIMIT = 10


def answers(service: MemoryService, questions: list[str]) -> tuple[list[list[int]], list[float]]:
    pages, timings = [], []
    for question in questions:
        start = time.perf_counter()
        found = service.search({"query": question, "limit": LIMIT}, record_use=False)["results"]
        timings.append((time.perf_counter() - start) * 1e3)
        pages.append([m["id"] for m in found])
    return pages, timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--shares", default="0.05,0.1,0.2", help="PRUNE_SCORED_SHARE values")
    parser.add_argument("--keep", type=Path, help="reuse (or leave) the database in DIR")
    args = parser.parse_args()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="am-prune-"))
    system = AgentMemory(workdir)
    if not system.db.exists():
        system.load(list(corpus.developer_memories(args.size)))
    service = MemoryService(open_store(system.db))
    questions = corpus.questions(QUESTIONS)
    answers(service, questions)  # warm the page cache and the word counts
    min_rows, exact_rows = bm25.PRUNE_MIN_ROWS, bm25.PRUNE_EXACT_ROWS
    bm25.PRUNE_MIN_ROWS = 10**12  # every word scored in one query
    bm25.PRUNE_EXACT_ROWS = 10**12  # and every matching row is scored
    kept = workdir / "reference.json"  # the slow part, reused with --keep
    if kept.exists():
        reference, timings = json.loads(kept.read_text())
    else:
        reference, timings = answers(service, questions)
        kept.write_text(json.dumps([reference, timings]))
    print(f"{args.size:,} memories, {QUESTIONS} questions, limit {LIMIT}\n")
    print("| words scored | rows scored | p50 ms | p99 ms | pages identical | top-10 overlap |")
    print("|---|---|---:|---:|---:|---:|")
    print(f"| all | all | {pct(timings, 0.5):.1f} | {pct(timings, 0.99):.1f} | 100% | 1.00 |")
    bm25.PRUNE_MIN_ROWS = min_rows
    for share in [None] + [float(share) for share in args.shares.split(",")]:
        if share is not None:
            bm25.PRUNE_EXACT_ROWS = exact_rows
            bm25.PRUNE_SCORED_SHARE = share
        pages, timings = answers(service, questions)
        same = sum(p == r for p, r in zip(pages, reference, strict=True)) / len(pages)
        overlap = statistics.mean(
            len(set(p) & set(r)) / max(len(r), 1) for p, r in zip(pages, reference, strict=True)
        )
        rows = "all" if share is None else f"rarest words, {share:.0%}"
        print(
            f"| informative | {rows} | {pct(timings, 0.5):.1f} | {pct(timings, 0.99):.1f} "
            f"| {same:.0%} | {overlap:.3f} |"
        )
    service.close()


if __name__ == "__main__":
    main()
