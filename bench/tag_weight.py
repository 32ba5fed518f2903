"""How much a hit in a memory's tags should weigh in bm25, a hit in its content weighing 1.

    .venv/bin/python -m bench.tag_weight [--weights 0.5,1,2]

Stores the committed sets (tests/support/everyday_set.py, tests/support/semantic_set.py) with
the tags an agent would give them (their TAGS), in keyword mode on SQLite (PostgreSQL ranks alike,
tests/test_pg_keyword_parity.py), and asks: the everyday questions (top 1 and top 3), the
semantic set's paraphrases, whose words are not in their targets' content (top 3 and top
10: a tag can still hold one), its exact-term queries (top 1), and each tag of the sets as
a one-word query, which should find a memory holding it in its tags (top 1 and top 10;
several memories often share a tag). "none" stores no tags: the ranking by content alone.
Each weight runs in a process of its own (bm25.TAG_WEIGHT is read when the statements are
built).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bench._common import run_module

T0 = 1_767_225_600
LIMIT = 10


def measure(weight: float | None) -> dict[str, int]:
    """The counts for one weight (None: the sets stored without tags)."""
    from agent_memory.search import bm25

    if weight is not None:
        bm25.TAG_WEIGHT = weight
    from agent_memory.contract.models import Filters
    from agent_memory.storage import open_store
    from agent_memory.storage.base import NewMemory
    from tests.support import everyday_set, semantic_set

    out: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, module in (("everyday", everyday_set), ("semantic", semantic_set)):
            store = open_store(Path(tmp) / f"{name}.db")
            keys = {}
            for m in module.MEMORIES:
                tags = list(module.TAGS[m.key]) if weight is not None else []
                memory_id = store.insert(
                    NewMemory(m.type, m.content, tags, None, None, T0, None), None
                )
                keys[memory_id] = m.key

            def ranks(queries, store=store, keys=keys) -> list[int | None]:
                found = []
                for q in queries:
                    page = store.search(q.query, None, now=T0, limit=LIMIT, filters=Filters())
                    got = [keys[m["id"]] for m in page.results]
                    found.append(got.index(q.target) + 1 if q.target in got else None)
                return found

            def within(found: list[int | None], n: int) -> int:
                return sum(r is not None and r <= n for r in found)

            if name == "everyday":
                found = ranks(everyday_set.QUERIES)
                out["everyday top1"] = within(found, 1)
                out["everyday top3"] = within(found, 3)
            else:
                found = ranks(semantic_set.PARAPHRASES)
                out["paraphrase top3"] = within(found, 3)
                out["paraphrase top10"] = within(found, 10)
                out["exact top1"] = within(ranks(semantic_set.EXACT), 1)
            tagged = {tag for tags in module.TAGS.values() for tag in tags}
            hits = first = 0
            for tag in sorted(tagged):
                page = store.search(f'"{tag}"', None, now=T0, limit=LIMIT, filters=Filters())
                holding = [tag in module.TAGS[keys[m["id"]]] for m in page.results]
                hits += any(holding)
                first += bool(holding) and holding[0]
            out[f"{name} tags ({len(tagged)}) top1"] = first
            out[f"{name} tags top10"] = hits
            store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", default="0.25,0.5,1,2,4")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure(None if args.one == "none" else float(args.one))))
        return
    rows = []
    for weight in ["none", *args.weights.split(",")]:
        done = run_module("tag_weight", "--one", weight, capture_output=True, text=True, check=True)
        rows.append((weight, json.loads(done.stdout)))
    columns = list(rows[0][1])
    print("| tag weight | " + " | ".join(columns) + " |")
    print("|" + "---|" * (len(columns) + 1))
    for weight, counts in rows:
        print(f"| {weight} | " + " | ".join(str(counts[c]) for c in columns) + " |")


if __name__ == "__main__":
    main()
