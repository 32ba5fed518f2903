"""The service's keyword search, this tree against an older one, side by side: the same answers
(``--identity``) and the time each takes.

    .venv/bin/python -m bench.search_ab --before DIR [--size 1000] [--cache DIR] [--identity]
                                        [--rounds 2] [--searches 200] [--queries 150]

``DIR`` is an older tree (``git archive COMMIT | tar -x -C DIR``); each tree runs in a worker
process of its own with its code first on PYTHONPATH, on its own copy of one SQLite file of
``--size`` developer memories (bench/corpus.py), loaded as bench/run.py loads them (kept in
and copied from ``--cache DIR`` when given). A worker runs the service's ``search`` in
process: keyword mode, ``record_use=False``, a fixed clock.

- ``--identity``: on copies with 40 seeded ``supersedes`` links added, every answer of a
  fixed, seeded query set: ``--queries`` two-word queries and as many questions, half as many
  of ``corpus.queries``, and edge cases (FTS5 syntax, a refused expression, a prefix, CJK,
  repeated words), each alone and with three seeded variants (limits, ``explain``,
  ``include_superseded``, type, scope and tag filters). Both trees' answers are written as
  sorted JSON (one line per search; kept with ``--keep DIR``) and compared: printed, how many
  answers and how many differ, and the first few differing searches.
- timing (``--rounds`` passes, after one warm-up pass; ``--rounds 0`` skips it):
  ``--searches`` two-word queries and as many questions (limit 10), each sent to both trees
  in turn, the order alternating, so the machine's load moves both alike. Printed: p50 / p99
  / mean ms per kind and tree, and the machine line.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench._common import TreeWorker

# Nothing of bench at the top: a worker runs this file with the older tree first on the path,
# where bench may be older too (or absent); the parent imports bench._common in its functions.
NOW = 1_796_516_383  # the workers' clock: recency scores do not move between runs
LIMIT = 10
LINKS = 40
LINK_SEED = 5
VARIANT_SEED = 3
SHOWN = 5  # differing searches printed
EDGE_CASES = [
    *("sqlite", "graphql", "auth OR django", '"vector store"', "kube*", "NOT", "("),
    *("what is it?", "the the the", "c++ build", "日本語 テスト"),
]
VARIANTS: list[dict[str, Any]] = [
    {},
    {"limit": 1},
    {"limit": 5},
    {"limit": 50},
    {"explain": True},
    {"include_superseded": True},
    {"type": "DECISION"},
    {"scope": "billing"},
    {"tag": "sqlite"},
    {"scope": "billing", "type": "ERROR", "limit": 20},
    {"explain": True, "limit": 20},
]


# -- the worker (a process per tree) -----------------------------------------------------------


def worker(location: str) -> None:
    """Answers JSON lines on stdin, each a search's arguments, with {"ms", "answer"}: the
    answer as sorted JSON text (an error's type and message if it raised)."""
    from agent_memory.service.core import MemoryService
    from agent_memory.storage import open_store

    svc = MemoryService(open_store(location), clock=lambda: NOW)
    print(json.dumps({"ready": sys.modules["agent_memory"].__file__}), flush=True)
    for line in sys.stdin:
        args = json.loads(line)
        began = time.perf_counter()
        try:
            answer: Any = svc.search(args, record_use=False)
        except Exception as exc:  # an error is an answer to compare
            answer = {"error": type(exc).__name__, "message": str(exc)}
        ms = (time.perf_counter() - began) * 1000
        print(json.dumps({"ms": ms, "answer": json.dumps(answer, sort_keys=True)}), flush=True)
    svc.close()


def start_tree(name: str, code: Path, location: Path) -> TreeWorker:
    from bench._common import TreeWorker

    return TreeWorker(name, code, __file__, str(location))


def start(before: Path, base: Path, workdir: Path, label: str) -> list[TreeWorker]:
    """The two workers, "before" and "after", each on its own copy of ``base``."""
    from bench._common import ROOT

    trees = []
    for name, code in (("before", before), ("after", ROOT)):
        copy = workdir / f"{label}-{name}.db"
        shutil.copyfile(base, copy)
        trees.append(start_tree(name, code, copy))
    return trees


# -- the files ---------------------------------------------------------------------------------


def loaded(size: int, cache: Path | None, workdir: Path) -> Path:
    """A file of ``size`` developer memories, loaded (or copied from ``cache``) by bench/run.py."""
    from bench import corpus, run
    from bench._common import log

    run.AgentMemory.cache = cache
    system = run.AgentMemory(workdir / f"size-{size}")
    if not system.db.exists():
        log(f"{size:,} memories into {system.db}")
        system.load(list(corpus.developer_memories(size)))
    return system.db


def with_links(base: Path, out: Path) -> Path:
    """A copy of ``base`` with LINKS seeded ``supersedes`` links between random memories."""
    shutil.copyfile(base, out)
    conn = sqlite3.connect(out)
    rng = random.Random(LINK_SEED)
    ids = [row[0] for row in conn.execute("SELECT id FROM memories ORDER BY id")]
    for _ in range(LINKS):
        a, b = rng.sample(ids, 2)
        conn.execute(
            "INSERT OR IGNORE INTO memory_links (from_id, to_id, kind, created_at)"
            " VALUES (?, ?, 'supersedes', 1)",
            (a, b),
        )
    conn.commit()
    conn.close()
    return out


# -- identity ----------------------------------------------------------------------------------


def identity_searches(n: int) -> list[dict[str, Any]]:
    """Each query alone and with three seeded variants."""
    from bench import corpus

    rng = random.Random(VARIANT_SEED)
    texts = corpus.two_word_queries(n) + corpus.questions(n) + corpus.queries(n // 2)
    searches = []
    for text in texts + EDGE_CASES:
        for variant in [{}, *rng.sample(VARIANTS, 3)]:
            searches.append({"query": text, **variant})
    return searches


def identity(trees: list[TreeWorker], searches: list[dict[str, Any]], workdir: Path) -> None:
    outs = {t.name: (workdir / f"answers-{t.name}.jsonl").open("w") for t in trees}
    differ = []
    for args in searches:
        answers = {t.name: t.ask(args)["answer"] for t in trees}
        for name, answer in answers.items():
            outs[name].write(json.dumps(args, sort_keys=True) + "\t" + answer + "\n")
        if len(set(answers.values())) > 1:
            differ.append(args)
    for out in outs.values():
        out.close()
    print(f"identity: {len(searches):,} answers, {len(differ):,} differ")
    for args in differ[:SHOWN]:
        print(f"  differs: {json.dumps(args, ensure_ascii=False)}")


# -- timing ------------------------------------------------------------------------------------


def timing(trees: list[TreeWorker], kinds: dict[str, list[str]], rounds: int) -> dict:
    """ms per (kind, tree) over ``rounds`` passes, after an untimed one."""
    times: dict[tuple[str, str], list[float]] = {}
    turn = 0
    for round_ in range(rounds + 1):
        for kind, texts in kinds.items():
            for text in texts:
                turn += 1
                for tree in trees if turn % 2 else trees[::-1]:
                    ms = tree.ask({"query": text, "limit": LIMIT})["ms"]
                    if round_:
                        times.setdefault((kind, tree.name), []).append(ms)
    return times


def report(times: dict[tuple[str, str], list[float]], size: int, rounds: int) -> str:
    from bench._common import pct, table

    rows = [
        [kind, tree, len(ms), pct(ms, 0.5), pct(ms, 0.99), statistics.fmean(ms)]
        for (kind, tree), ms in times.items()
    ]
    head = [f"{size:,} memories, {rounds} rounds", "tree", "n", "p50 ms", "p99 ms", "mean ms"]
    return table(head, rows, "llrrrr")


# -- main --------------------------------------------------------------------------------------


def run_all(args: argparse.Namespace, workdir: Path) -> None:
    from bench import corpus
    from bench._common import machine

    base = loaded(args.size, args.cache, workdir)
    if args.identity:
        linked = with_links(base, workdir / "linked.db")
        trees = start(args.before, linked, workdir, "identity")
        try:
            identity(trees, identity_searches(args.queries), workdir)
        finally:
            for tree in trees:
                tree.close()
        if args.keep:
            print(f"  (the answers: {workdir}/answers-before.jsonl and answers-after.jsonl)")
    if args.rounds:
        kinds = {
            "two words": corpus.two_word_queries(args.searches),
            "question": corpus.questions(args.searches),
        }
        trees = start(args.before, base, workdir, "timing")
        try:
            times = timing(trees, kinds, args.rounds)
        finally:
            for tree in trees:
                tree.close()
        print(report(times, args.size, args.rounds))
    print(f"\n{machine()}")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the older tree")
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--cache", type=Path, help="keep (or reuse) the loaded file here")
    parser.add_argument("--identity", action="store_true", help="compare every answer first")
    parser.add_argument("--rounds", type=int, default=2, help="timed passes (0: none)")
    parser.add_argument("--searches", type=int, default=200, help="timed, of each kind")
    parser.add_argument("--queries", type=int, default=150, help="--identity's, of each kind")
    parser.add_argument("--keep", type=Path, help="the work directory (default: a temporary one)")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        run_all(args, args.keep)
        return
    with tempfile.TemporaryDirectory(prefix="am-search-ab-") as tmp:
        run_all(args, Path(tmp))


if __name__ == "__main__":
    main()
