"""What leaving common words out of the OR-of-words retry costs in answers, and saves in time.

    .venv/bin/python bench/pruning.py [--size 100000] [--thresholds 0.25,0.5,1.0] [--keep DIR]

Loads the corpus of bench/run.py (through ``agent-memory import``), then asks the same
questions (limit 10) in process with every word searched (the reference) and with words of
bm25 IDF up to each threshold left out (service.PRUNE_MAX_IDF). Reported per threshold:
p50/p99 latency, the share of pages identical to the reference (same ids, same order) and
the mean overlap of the top 10.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import AgentMemory, pct  # noqa: E402

from agent_memory import service as service_module  # noqa: E402
from agent_memory.db import open_database  # noqa: E402
from agent_memory.service import MemoryService  # noqa: E402

import corpus  # noqa: E402

QUESTIONS = 200
LIMIT = 10


def answers(service: MemoryService, questions: list[str]) -> tuple[list[list[int]], list[float]]:
    pages, timings = [], []
    for question in questions:
        start = time.perf_counter()
        found = service._keyword(question, int(time.time()), LIMIT, {})  # no recency bump
        timings.append((time.perf_counter() - start) * 1e3)
        pages.append([m["id"] for m in found])
    return pages, timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--thresholds", default="0.25,0.5,1.0,1.5")
    parser.add_argument("--keep", type=Path, help="reuse (or leave) the database in DIR")
    args = parser.parse_args()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="am-prune-"))
    system = AgentMemory(workdir)
    if not system.db.exists():
        system.load(list(corpus.developer_memories(args.size)))
    service = MemoryService(open_database(system.db))
    questions = corpus.questions(QUESTIONS)
    answers(service, questions)  # warm the page cache and the word counts
    service_module.PRUNE_MAX_IDF = -1.0  # no word is that light: every word is searched
    reference, timings = answers(service, questions)
    print(f"{args.size:,} memories, {QUESTIONS} questions, limit {LIMIT}\n")
    print("| words left out | p50 ms | p99 ms | pages identical | top-10 overlap |")
    print("|---|---:|---:|---:|---:|")
    print(f"| none | {pct(timings, 0.5):.1f} | {pct(timings, 0.99):.1f} | 100% | 1.00 |")
    for threshold in (float(t) for t in args.thresholds.split(",")):
        service_module.PRUNE_MAX_IDF = threshold
        pages, timings = answers(service, questions)
        same = sum(p == r for p, r in zip(pages, reference, strict=True)) / len(pages)
        overlap = statistics.mean(
            len(set(p) & set(r)) / max(len(r), 1) for p, r in zip(pages, reference, strict=True)
        )
        print(
            f"| IDF <= {threshold} | {pct(timings, 0.5):.1f} | {pct(timings, 0.99):.1f} "
            f"| {same:.0%} | {overlap:.2f} |"
        )
    service.close()


if __name__ == "__main__":
    main()
