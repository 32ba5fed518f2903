"""Every search mode on every committed set, with the local model: one table.

    .venv/bin/python -m bench.quality [--modes keyword,model,hybrid,...] [--set PATH ...]
                                      [--details]

Rows are the modes (tests/support/quality.py: keyword, the model alone, the default hybrid,
each other fusion by its name); columns are each set's figures, every question asked with the
default page (no ``limit``), no use recorded, at one fixed clock:
- paraphrases (tests/support/semantic_set.py, stored without tags): top 3 and top 10 of 30;
- exact terms (the same store): first of 4;
- everyday (tests/support/everyday_set.py, with tags): first, and the mean page;
- project (tests/support/project_set.py, with tags): first, top 3, top 10, the mean page;
- one per topic (the project set's ONE_PER_TOPIC store): first, the mean page;
- off-topic: the project's off-topic questions' mean page;
- zero: results with a fused score of 0, over every page above;
- each ``--set PATH`` (a held-out set outside the repository, loaded by
  ``quality.load_set``): first, top 10, mean page, off-topic mean page.

``--details`` prints, per mode and set, the questions whose answer was not first.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from agent_memory.embedders.local import Local
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from bench._common import log, machine, table
from tests.support import everyday_set, project_set, semantic_set
from tests.support.local_model import REASON
from tests.support.quality import MODES, Figures, QualitySet, load_set, measure, stored

T0 = 1_767_225_600


def committed() -> dict[str, QualitySet]:
    """The committed sets, by the column they fill."""
    project = QualitySet.of("project", project_set)
    return {
        "paraphrases": QualitySet("paraphrases", semantic_set.MEMORIES, semantic_set.PARAPHRASES),
        "exact": QualitySet("exact", semantic_set.MEMORIES, semantic_set.EXACT),
        "everyday": QualitySet.of("everyday", everyday_set),
        "project": project,
        "per-topic": project.only(project_set.ONE_PER_TOPIC, "per-topic"),
    }


def cells(name: str, f: Figures, held_out: bool) -> list[object]:
    n = f.questions
    if held_out:
        off = f.off_topic_page
        return [f"{f.first}/{n}", f"{f.top10}/{n}", f.mean_page, off]
    return {
        "paraphrases": [f"{f.top3}/{n}", f"{f.top10}/{n}"],
        "exact": [f"{f.first}/{n}"],
        "everyday": [f"{f.first}/{n}", f.mean_page],
        "project": [f"{f.first}/{n}", f"{f.top3}/{n}", f"{f.top10}/{n}", f.mean_page],
        "per-topic": [f"{f.first}/{n}", f.mean_page],
    }[name]


HEAD = {
    "paraphrases": ["para top3", "para top10"],
    "exact": ["exact first"],
    "everyday": ["everyday first", "everyday page"],
    "project": ["project first", "project top3", "project top10", "project page"],
    "per-topic": ["per-topic first", "per-topic page"],
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated")
    parser.add_argument("--set", dest="sets", type=Path, action="append", default=[])
    parser.add_argument("--details", action="store_true", help="print the misses")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    if set(modes) - set(MODES):
        parser.error(f"--modes takes {','.join(MODES)}")
    if REASON is not None:
        print(f"local model unavailable: {REASON}", file=sys.stderr)
        return 2
    sets = committed()
    held = {path.stem: load_set(path) for path in args.sets}
    embedder = Local()
    head = ["mode"] + [h for name in sets for h in HEAD[name]] + ["off-topic page", "zero"]
    for name in held:
        head += [f"{name} first", f"{name} top10", f"{name} page", f"{name} off-topic"]
    found: dict[tuple[str, str], Figures] = {}
    with tempfile.TemporaryDirectory(prefix="quality-") as tmp:
        stores: dict[tuple, tuple[MemoryService, dict[str, int]]] = {}
        for name, qset in {**sets, **held}.items():
            key = (qset.memories, tuple(sorted(qset.tags.items())))
            if key not in stores:
                svc = MemoryService(
                    open_store(Path(tmp) / f"{len(stores)}.db"), clock=lambda: T0, embedder=embedder
                )
                log(f"storing {len(qset.memories)} memories of {name}")
                stores[key] = (svc, stored(svc, qset))
            svc, ids = stores[key]
            for mode in modes:
                f = found[mode, name] = measure(svc, qset, mode, ids)
                if args.details:
                    for text, rank in f.missed(qset.queries):
                        print(f"{mode:8} {name:12} rank {rank}: {text}")
        for svc, _ in stores.values():
            svc.db.close()
        embedder.close()
    rows = []
    for mode in modes:
        row: list[object] = [mode]
        for name in sets:
            row += cells(name, found[mode, name], False)
        row.append(found[mode, "project"].off_topic_page)
        row.append(sum(f.zero_scored for (m, _), f in found.items() if m == mode))
        for name in held:
            row += cells(name, found[mode, name], True)
        rows.append(row)
    print(table(head, rows))
    print(f"\nembedder: {embedder.describe()}; {machine()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
