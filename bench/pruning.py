"""What the shortcuts of the OR-of-words retry cost in answers, and save in time.

    .venv/bin/python bench/pruning.py [--size 100000] [--thresholds 0.25,1.0]
                                      [--shares 0.05,0.1,0.2] [--keep DIR]

Loads the corpus of bench/run.py (through ``agent-memory import``), then asks the same
questions (limit 10) in process with every word searched and every matching row scored
(the reference), with words of bm25 IDF up to each threshold left out
(bm25.PRUNE_MAX_IDF), and with the default threshold and only the rows of the rarest
words scored, at each share of the rows (bm25.PRUNE_SCORED_SHARE). Reported per
setting: p50/p99 latency, the share of pages identical to the reference (same ids, same
order) and the mean overlap of the top 10. With --keep, the reference pages are kept in
DIR and reused.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import AgentMemory, pct  # noqa: E402

from agent_memory.query import bm25  # noqa: E402
from agent_memory.service import MemoryService  # noqa: E402
from agent_memory.storage import open_store  # noqa: E402

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
    parser.add_argument("--thresholds", default="0.25,1.0")
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
    default_idf, exact_rows = bm25.PRUNE_MAX_IDF, bm25.PRUNE_EXACT_ROWS
    bm25.PRUNE_MAX_IDF = -1.0  # no word is that light: every word is searched
    bm25.PRUNE_EXACT_ROWS = 10**12  # and every matching row is scored
    kept = workdir / "reference.json"  # the slow part, reused with --keep
    if kept.exists():
        reference, timings = json.loads(kept.read_text())
    else:
        reference, timings = answers(service, questions)
        kept.write_text(json.dumps([reference, timings]))
    print(f"{args.size:,} memories, {QUESTIONS} questions, limit {LIMIT}\n")
    print("| words left out | rows scored | p50 ms | p99 ms | pages identical | top-10 overlap |")
    print("|---|---|---:|---:|---:|---:|")
    print(f"| none | all | {pct(timings, 0.5):.1f} | {pct(timings, 0.99):.1f} | 100% | 1.00 |")
    settings = [(float(t), None) for t in args.thresholds.split(",")]
    settings += [(default_idf, float(share)) for share in args.shares.split(",")]
    for threshold, share in settings:
        bm25.PRUNE_MAX_IDF = threshold
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
            f"| IDF <= {threshold} | {rows} | {pct(timings, 0.5):.1f} | {pct(timings, 0.99):.1f} "
            f"| {same:.0%} | {overlap:.3f} |"
        )
    service.close()


if __name__ == "__main__":
    main()
