"""The near-duplicate check's keyword signal (service/similar.py, storage/near.py) against an
older tree's, side by side in one run: its hints on held-out probes (which must agree) and
its cost, ``similar.find`` alone and a whole store, keyword mode (no embedder).

The database: ``size`` developer memories (bench/corpus.py, seed 7), loaded as
bench/pg_keyword.py loads them, on SQLite or, with ``--pg``, on a throwaway PostgreSQL.
Probes are made from stored memories with seeds used nowhere else: one informative word
dropped (the stored one is the longer), a sentence of another memory added (the stored one
is the shorter), and unrelated new memories (corpus seed 31). Each tree runs in a process
of its own (``--before DIR``: an export of the older tree, put first on PYTHONPATH) and
each probe and store is asked of both in turn, the order alternating.

    python -m bench.near_keyword --before /tmp/nearkw-before [--size 100000] [--probes 60]
        [--stores 60] [--pg] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import corpus
from bench._common import ROOT, machine, pct, table

if TYPE_CHECKING:
    from bench._common import TreeWorker

PROBE_SEED = 2024
OTHER_SEED = 31
STORE_SEED = 47


def worker(location: str) -> None:
    """Answers JSON lines on stdin: {"op": "find"|"store", "content", "scope"[, "type"]}."""
    from agent_memory.service import similar
    from agent_memory.service.core import MemoryService
    from agent_memory.storage import open_store

    svc = MemoryService(open_store(location))
    print(json.dumps({"ready": similar.__file__}), flush=True)
    for line in sys.stdin:
        asked = json.loads(line)
        began = time.perf_counter()
        if asked["op"] == "find":
            got = similar.find(svc.db, asked["content"], asked["scope"], None, svc.now())
        else:
            args = {"content": asked["content"], "type": asked["type"], "scope": asked["scope"]}
            got = svc.store(args)
        ms = (time.perf_counter() - began) * 1000
        ids = [h["id"] for h in got.get("similar", [])]
        print(json.dumps({"ms": ms, "ids": ids}), flush=True)
    svc.close()


def start_tree(name: str, code: Path, location: str) -> TreeWorker:
    # imported here: the workers run this file with an older tree's bench/ first on the path
    from bench._common import TreeWorker

    return TreeWorker(name, code, __file__, location)


def probes(location: str, size: int, n: int) -> list[tuple[str, dict[str, Any]]]:
    """(kind, request): word dropped, sentence added, unrelated; n of each."""
    from agent_memory.service import similar
    from agent_memory.service.core import MemoryService
    from agent_memory.storage import open_store

    rng = random.Random(PROBE_SEED)
    others = list(corpus.developer_memories(2 * n, seed=OTHER_SEED))
    svc = MemoryService(open_store(location))
    out: list[tuple[str, dict[str, Any]]] = []
    try:
        for k in range(n):
            for kind in ("dropped", "added"):
                memory = svc.db.get(rng.randint(1, size), 0)[0]
                text = memory["content"]
                if kind == "dropped":
                    words = text.split(" ")
                    informative = [i for i, w in enumerate(words) if similar.lexemes(w)]
                    del words[rng.choice(informative)]
                    text = " ".join(words)
                else:
                    text = f"{text} {others[n + k]['content']}"
                out.append((kind, {"op": "find", "content": text, "scope": memory["scope"]}))
            other = others[k]
            request = {"op": "find", "content": other["content"], "scope": other["scope"]}
            out.append(("unrelated", request))
    finally:
        svc.close()
    return out


def compare(trees: list[TreeWorker], requests: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    times: dict[str, dict[str, list[float]]] = {t.name: {} for t in trees}
    agree: dict[str, list[int]] = {}
    for k, (kind, request) in enumerate(requests):
        order = trees if k % 2 == 0 else trees[::-1]
        answers = {t.name: t.ask(request) for t in order}
        for name, answer in answers.items():
            times[name].setdefault(kind, []).append(answer["ms"])
        ids = [tuple(a["ids"]) for a in answers.values()]
        tally = agree.setdefault(kind, [0, 0, 0])
        tally[0 if ids[0] == ids[1] else 1] += 1
        tally[2] += bool(ids[0] or ids[1])
        if ids[0] != ids[1]:
            print(f"  differ ({kind}): {dict(zip(answers, ids, strict=True))}: {request}")
    return {"times": times, "agree": agree}


def run(args: argparse.Namespace, location: str, copies: list[str]) -> None:
    """The probes on ``location`` (read only), then the stores, each tree on its copy."""
    requests = probes(location, args.size, args.probes)
    trees = [start_tree("before", args.before, location), start_tree("after", ROOT, location)]
    try:
        found = compare(trees, requests)
    finally:
        for tree in trees:
            tree.close()
    new = list(corpus.developer_memories(args.stores, seed=STORE_SEED))
    stores = [
        ("store", {"op": "store", "content": m["content"], "type": m["type"], "scope": m["scope"]})
        for m in new
    ]
    trees = [start_tree("before", args.before, copies[0]), start_tree("after", ROOT, copies[1])]
    try:
        stored = compare(trees, stores)
    finally:
        for tree in trees:
            tree.close()
    print(f"\n{machine()}; {args.size:,} memories, {'PostgreSQL' if args.pg else 'SQLite'}")
    rows = []
    for kind in ("dropped", "added", "unrelated", "store"):
        source = stored if kind == "store" else found
        for name in ("before", "after"):
            values = source["times"][name][kind]
            rows.append((f"{kind}: {name}", len(values), pct(values, 0.5), pct(values, 0.9)))
    print(table(("ms (find alone; store: the whole store)", "n", "p50", "p90"), rows))
    print("\nhints, before against after: [same, different, with any hint]")
    print(json.dumps({**found["agree"], "store": stored["agree"]["store"]}))


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--probes", type=int, default=60, help="of each kind")
    parser.add_argument("--stores", type=int, default=60)
    parser.add_argument("--pg", action="store_true")
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    from bench.pg_keyword import load

    workdir = args.keep or Path(tempfile.mkdtemp(prefix="bench-nearkw-"))
    now = int(time.time())
    if not args.pg:
        base = workdir / f"kw-{args.size}.db"
        if not base.exists():
            load(str(base), args.size, now, workdir)
        copies = [workdir / f"near-{args.size}-{k}.db" for k in range(2)]  # for the stores
        for copy in copies:
            shutil.copyfile(base, copy)
        run(args, str(base), [str(copy) for copy in copies])
        for copy in copies:
            copy.unlink()
        return
    # imported here: the workers run this file with the older tree's bench first on the path
    from bench._common import throwaway_postgres
    from bench.pg_keyword import new_database

    with throwaway_postgres(None) as server:
        url = new_database(server, "near")
        load(url, args.size, now, workdir)
        copies = [new_database(server, f"near{k}", template="near") for k in range(2)]
        run(args, url, copies)


if __name__ == "__main__":
    main()
