"""What the costliest small queries take, and that ordinary questions still pass.

    .venv/bin/python -m bench.query_cost [--size 100000] [--keep DIR] [--postgres [URL]]

Loads the corpus of bench/run.py (through ``agent-memory import``), then times, in process,
each attack query of issue 18 (a few KB each: a short prefix OR-ed 500 times, a NEAR group
of 200 words, a phrase of 2,000 words) and the bench's 200 plain-language questions (p50,
p99, and how many were refused: the bounds must refuse none of them).

Then the queries at the word bound (``cost.MAX_QUERY_WORDS``), in the shapes of
tests/engines/test_long_queries.py: each one's time on SQLite and, with --postgres, on
PostgreSQL (the same corpus in a fresh database of the server at URL, or of an embedded
PostgreSQL 18 from the test extra), and the ratio (that both give the same page is that test
file's to check: here the SQLite file has recorded the uses of the searches before). PostgreSQL's
time should stay within a small factor of SQLite's: a step quadratic in the words shows as
ten times or more. The search budget is raised to LONG_QUERY_BUDGET_SECS for these, so the
figure is the query's time, not the budget's refusal.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from agent_memory.contract.errors import InvalidArgument
from agent_memory.query import cost
from agent_memory.service import core as service_module
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from bench import corpus
from bench._common import log, machine, pct, table, timed
from bench.run import AgentMemory, AgentMemoryPostgres

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
LONG_QUERY_BUDGET_SECS = 60.0
# Words that occur together in many of the corpus's memories ("exponential backoff with jitter").
ALL_OF = ["exponential", "backoff", "jitter"]


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


def long_queries() -> dict[str, str]:
    """Queries of cost.MAX_QUERY_WORDS words over the corpus's own words: an AND (FTS5
    syntax), two plain-language questions (the OR of their words) and an OR of words."""
    n = cost.MAX_QUERY_WORDS
    lists = (corpus.SUBJECTS, corpus.OBJECTS, corpus.REASONS, corpus.KEYWORDS)
    vocabulary = sorted({w for items in lists for t in items for w in t.split() if w.isalpha()})
    return {
        f"AND of {n:,} words": " ".join(ALL_OF[i % len(ALL_OF)] for i in range(n)),
        f"question of {n:,} corpus words": " ".join(
            vocabulary[(i * 31) % len(vocabulary)] for i in range(n - 1)
        )
        + " why?",
        f"question of {n:,} distinct words": " ".join(f"w{i}" for i in range(n - 2))
        + " kafka retry?",
        f"OR of {n // 2:,} words": " OR ".join(
            vocabulary[i % len(vocabulary)] for i in range(n // 2)
        ),
    }


def timed_search(service: MemoryService, query: str) -> tuple[float, str]:
    def run() -> str:
        try:
            found = service.search({"query": query, "limit": 10})["results"]
            return f"{len(found)} results"
        except InvalidArgument as exc:
            return str(exc)[:90]

    return timed(run)


def page(service: MemoryService, query: str) -> tuple[float, list[int] | str]:
    """The time of one search at limit 20 (no use recorded), and its ids or its refusal."""

    def run() -> list[int] | str:
        try:
            found = service.search({"query": query, "limit": 20}, record_use=False)["results"]
            return [m["id"] for m in found]
        except InvalidArgument as exc:
            return str(exc)[:60]

    return timed(run)


def long_query_rows(services: dict[str, MemoryService]) -> str:
    """The table of long queries: seconds per engine, and PostgreSQL's over SQLite's."""
    budget = service_module.SEARCH_BUDGET_SECS
    service_module.SEARCH_BUDGET_SECS = LONG_QUERY_BUDGET_SECS
    try:
        rows = []
        for name, query in long_queries().items():
            answers = {engine: page(svc, query) for engine, svc in services.items()}
            row: list[object] = [name]
            row += [seconds for seconds, _ in answers.values()]
            if len(answers) == 2:
                (sqlite_s, _), (pg_s, _) = answers.values()
                row.append(pg_s / sqlite_s)
            for _, found in answers.values():
                row.append(f"{len(found)} results" if isinstance(found, list) else found)
            rows.append(row)
            log(f"long query done: {name}")
    finally:
        service_module.SEARCH_BUDGET_SECS = budget
    head = ["query", *(f"{engine} s" for engine in services)]
    if len(services) == 2:
        head.append("PostgreSQL / SQLite")
    answers = [f"{engine} answer" for engine in services]
    return table([*head, *answers], rows, "l" + "r" * (len(head) - 1) + "l" * len(answers))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, help="reuse (or leave) the database in DIR")
    parser.add_argument(
        "--postgres",
        nargs="?",
        const="embedded",
        help="time the long queries on PostgreSQL too: a server's URL (the role creates"
        " databases), or nothing for an embedded one (the test extra's)",
    )
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
        seconds, outcome = timed_search(service, query)
        print(f"| {name} | {len(query.encode())} | {seconds:.2f} | {outcome} |", flush=True)
    questions = corpus.questions(QUESTIONS)
    for question in questions[:20]:  # warm the page cache and the word counts
        timed_search(service, question)
    runs = [timed_search(service, question) for question in questions]
    ms = [seconds * 1e3 for seconds, _ in runs]
    refused = sum(outcome.startswith("invalid argument") for _, outcome in runs)
    print(
        f"\n{QUESTIONS} questions: p50 {pct(ms, 0.5):.1f} ms, p99 {pct(ms, 0.99):.1f} ms,", end=""
    )
    print(f" refused {refused}")
    services = {"SQLite": service}
    server = None
    if args.postgres == "embedded":
        from tests.support.postgres_server import PostgresServer

        server = PostgresServer()
        server.start()
        args.postgres = server.url
    try:
        if args.postgres:
            on_postgres = AgentMemoryPostgres(workdir, args.postgres)
            on_postgres.load(list(corpus.developer_memories(args.size)))
            services["PostgreSQL"] = MemoryService(open_store(on_postgres.db))
        print(f"\nqueries at the word bound ({cost.MAX_QUERY_WORDS:,} words), limit 20:")
        print(long_query_rows(services))
        print(f"\n{machine()}")
    finally:
        for svc in services.values():
            svc.close()
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
