"""Where a question's time goes on SQLite: the parts of its ranking statement, timed apart.

    .venv/bin/python -m bench.question_statements [--size 100000] [--keep DIR] [--questions 100]

Loads the corpus of bench/run.py (through ``agent-memory import``), then, for each of the
bench's questions that the search restricts to the rows of its rarest words (past
bm25.PRUNE_EXACT_ROWS, when the informative words match many rows), plans it as the search
does (bm25.plan) and times FTS5 statements that each do one more part of the ranking
statement's work (the best of five runs each):

1. walk: count the rows holding one of the kept words (the OR FTS5 walks);
2. restricted: the same, keeping only the rows of the rarest words (the ``+rowid IN`` filter);
3. ranked: the search's statement, bm25 of every kept word over those rows, best limit + 1;
4. rarest alone: bm25 of the rarest words only, over their own rows, best limit + 1.

Printed: the median over the questions of each, and of the rows walked and scored. The
difference of 3 and 2 is bm25's own cost, which no choice of MATCH expression avoids for
the rows scored; 4 is the least a statement that scores those rows can cost.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import sqlalchemy
import sqlean

from agent_memory.search import bm25, read
from agent_memory.storage.sqlite import keyword
from bench import corpus
from bench.run import AgentMemory

LIMIT = 10
RUNS = 5
_BM25 = f"bm25(memories_fts, 1.0, {bm25.TAG_WEIGHT!r})"
_WITHIN = "+rowid IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH :within)"
STATEMENTS = {
    "walk": "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH :match",
    "restricted": "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH :match"
    f" AND {_WITHIN}",
    "ranked": f"SELECT rowid, {_BM25} AS b FROM memories_fts WHERE memories_fts MATCH :match"
    f" AND {_WITHIN} ORDER BY b, rowid LIMIT :limit",
    "rarest alone": f"SELECT rowid, {_BM25} AS b FROM memories_fts WHERE memories_fts MATCH"
    " :within ORDER BY b, rowid LIMIT :limit",
}


def best_ms(sql: sqlean.Connection, statement: str, params: dict) -> float:
    best = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        sql.execute(statement, params).fetchall()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--keep", type=Path, help="reuse (or leave) the database in DIR")
    args = parser.parse_args()
    system = AgentMemory(args.keep or Path(tempfile.mkdtemp(prefix="am-qs-")))
    if not system.db.exists():
        system.load(list(corpus.developer_memories(args.size)))
    engine = sqlalchemy.create_engine("sqlite://", creator=lambda: sqlean.connect(system.db))
    index = keyword.KeywordIndex()
    times: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    walked, scored = [], []
    with engine.connect() as conn:
        sql = keyword.driver(conn)
        for question in corpus.questions(args.questions):
            parsed = read(question)
            total, hits = index.word_rows(conn, parsed.words, 0, parsed)
            planned = bm25.plan(parsed.words, total, hits)
            if planned.rarest is None:
                continue
            params = {
                "match": keyword.any_of(planned.kept, parsed),
                "within": keyword.any_of(planned.rarest, parsed),
                "limit": LIMIT + 1,
            }
            for name, statement in STATEMENTS.items():
                times[name].append(best_ms(sql, statement, params))
            walked.append(sql.execute(STATEMENTS["walk"], params).fetchone()[0])
            scored.append(sql.execute(STATEMENTS["restricted"], params).fetchone()[0])
    print(f"{args.size:,} memories: {len(walked)} of {args.questions} questions restricted\n")
    print(f"rows walked (kept words) p50 {statistics.median(walked):,.0f}")
    print(f"rows scored (rarest words) p50 {statistics.median(scored):,.0f}\n")
    print("| statement | p50 ms | p90 ms |")
    print("|---|---:|---:|")
    for name, found in times.items():
        found.sort()
        p90 = found[min(len(found) - 1, int(0.9 * len(found)))]
        print(f"| {name} | {statistics.median(found):.2f} | {p90:.2f} |")


if __name__ == "__main__":
    main()
