"""What ``as_of`` costs a search and a list (issue 36), side by side in one run.

    python -m bench.as_of [ROWS] [--postgres]

A SQLite database gets ROWS memories (default 10,000, no embedder: keyword search), stored
one second apart; then a tenth of them are updated (their history grows a version). The
same questions are searched alternately without ``as_of`` and with ``as_of`` at the middle
of the store's life (so half the memories did not stand then, and the updated ones are read
as they stood), through the service as memory_search runs them, without recording use (an
as-of search records none). Then a list of 50, plain and as of the same moment. p50 and p90
in ms. With --postgres, the same on a throwaway PostgreSQL (tests/support/postgres_server.py,
as bench.bench_postgres starts it) instead of SQLite.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from bench._common import machine, pct, table

T0 = 1_767_225_600
SAMPLES = 200
SUBJECTS = ("timeout", "database", "deploy", "cache", "token", "queue", "index", "schema")


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return float(self.now)


def fill(service: MemoryService, clock: Clock, rows: int) -> None:
    for n in range(rows):
        subject = SUBJECTS[n % len(SUBJECTS)]
        text = f"memory {n} about the {subject} of service {n % 89} and its limits"
        service.store({"content": text, "type": "PATTERN", "tags": [subject]})
        clock.now += 1
    for n in range(0, rows, 10):
        service.update({"id": n + 1, "content": f"memory {n} changed: the {SUBJECTS[0]} rule"})
        clock.now += 1


def timed(call, args) -> float:
    began = time.perf_counter()
    call(args)
    return (time.perf_counter() - began) * 1000


def main(rows: int, postgres: bool) -> None:
    if not postgres:
        with tempfile.TemporaryDirectory() as tmp:
            run(rows, str(Path(tmp) / "memory.db"))
        return
    from bench.bench_postgres import fresh_database
    from tests.support.postgres_server import PostgresServer

    server = PostgresServer()
    server.start()
    try:
        run(rows, fresh_database(server.url))
    finally:
        server.stop()


def run(rows: int, location: str) -> None:
    clock = Clock()
    service = MemoryService(open_store(location), clock=clock)
    fill(service, clock, rows)
    middle = T0 + rows // 2
    timings: dict[str, list[float]] = {k: [] for k in ("search", "search as_of")}
    timings.update({"list 50": [], "list 50 as_of": []})
    search = lambda args: service.search(args, record_use=False)  # noqa: E731
    for n in range(SAMPLES):
        query = f"{SUBJECTS[n % len(SUBJECTS)]} limits service {n % 89}"
        timings["search"].append(timed(search, {"query": query, "limit": 10}))
        timings["search as_of"].append(
            timed(search, {"query": query, "limit": 10, "as_of": middle})
        )
        timings["list 50"].append(timed(service.list, {"limit": 50}))
        timings["list 50 as_of"].append(timed(service.list, {"limit": 50, "as_of": middle}))
    service.close()
    engine = "PostgreSQL" if location.startswith("postgresql") else "SQLite"
    print(
        f"{engine}, {rows:,} memories ({rows // 10:,} updated), {SAMPLES} calls each, alternating"
    )
    plain = {"search as_of": "search", "list 50 as_of": "list 50"}
    out = []
    for name, values in timings.items():
        ratio = pct(values, 0.5) / pct(timings[plain[name]], 0.5) if name in plain else 1.0
        out.append((name, pct(values, 0.5), pct(values, 0.9), f"{ratio:.2f}x"))
    print(table(["call", "p50 ms", "p90 ms", "p50 / plain"], out))
    print(machine())


if __name__ == "__main__":
    numbers = [a for a in sys.argv[1:] if a.isdigit()]
    main(int(numbers[0]) if numbers else 10_000, "--postgres" in sys.argv)
