"""What the costliest small queries take, and that ordinary questions still pass.

    .venv/bin/python bench/query_cost.py [--size 100000] [--keep DIR]

Loads the corpus of bench/run.py (through ``agent-memory import``), then times, in process,
each attack query of issue 18 (a few KB each: a short prefix OR-ed 500 times, a NEAR group
of 200 words, a phrase of 2,000 words) and the bench's 200 plain-language questions (p50,
p99, and how many were refused: the bounds must refuse none of them).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import AgentMemory, pct  # noqa: E402

from agent_memory.errors import InvalidArgument  # noqa: E402
from agent_memory.service import MemoryService  # noqa: E402
from agent_memory.storage import open_store  # noqa: E402

import corpus  # noqa: E402

try:  # the code before issue 18 had no bounds; until issue 33 they were in fts.py
    from agent_memory.query.cost import check as _check

    BOUNDED = True
except ImportError:
    try:
        from agent_memory.fts import check_cost as _check  # noqa: F401

        BOUNDED = True
    except ImportError:
        BOUNDED = False

QUESTIONS = 200


def attacks() -> dict[str, str]:
    """Issue 18's attacks (on "the", in most rows), and the costliest shapes still allowed."""
    near = "NEAR(" + " ".join(["the"] * 10) + ")"
    return {
        "`m* OR m* ...` x500": " OR ".join(["m*"] * 500),
        "NEAR of 200 words": "NEAR(" + " ".join(["the"] * 200) + ")",
        "phrase of 2,000 words": '"' + " ".join(["the"] * 2000) + '"',
        "8 prefixes `co* OR re* ...` (allowed)": " OR ".join(["co*", "re*", "th*", "st*"] * 2),
        "phrase of 32 words (allowed)": '"' + " ".join(["the"] * 32) + '"',
        "NEAR of 10 words (allowed)": near,
        "30 NEAR groups of 10 (allowed shape)": " OR ".join([near] * 30),
    }


def timed(service: MemoryService, query: str) -> tuple[float, str]:
    start = time.perf_counter()
    try:
        found = service.search({"query": query, "limit": 10})["results"]
        outcome = f"{len(found)} results"
    except InvalidArgument as exc:
        outcome = str(exc)[:90]
    return time.perf_counter() - start, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, help="reuse (or leave) the database in DIR")
    args = parser.parse_args()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="am-cost-"))
    system = AgentMemory(workdir)
    if not system.db.exists():
        system.load(list(corpus.developer_memories(args.size)))
    service = MemoryService(open_store(system.db))
    print(f"{args.size:,} memories, query bounds: {BOUNDED}\n")
    print("| query | bytes | seconds | answer |")
    print("|---|---:|---:|---|")
    for name, query in attacks().items():
        seconds, outcome = timed(service, query)
        print(f"| {name} | {len(query.encode())} | {seconds:.2f} | {outcome} |", flush=True)
    questions = corpus.questions(QUESTIONS)
    for question in questions[:20]:  # warm the page cache and the word counts
        timed(service, question)
    runs = [timed(service, question) for question in questions]
    ms = [seconds * 1e3 for seconds, _ in runs]
    refused = sum(outcome.startswith("invalid argument") for _, outcome in runs)
    print(
        f"\n{QUESTIONS} questions: p50 {pct(ms, 0.5):.1f} ms, p99 {pct(ms, 0.99):.1f} ms,", end=""
    )
    print(f" refused {refused}")
    service.close()


if __name__ == "__main__":
    main()
