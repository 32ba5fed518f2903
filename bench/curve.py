"""The cost curve of bench/run.py: p50 / p99 of every operation at every size in one table,
agent-memory beside the protocol floor; and the loaded files it keeps between runs.

A size's file is built once (bench/corpus.py through ``agent-memory import``, last use spread
over a year, decay refreshed) and, with ``--cache DIR``, kept there as ``memories-SIZE.db``:
the next run copies it instead of loading again (at 1,000,000 memories the load takes minutes).
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

from bench._common import log

# (label, the metric's prefix in bench/run.py's results): each has _p50_ms and _p99_ms.
OPERATIONS = (
    ("store", "store"),
    ("keyword search, two words", "search_two_words"),
    ("keyword search, question", "search_question"),
    ("hybrid search, two words", "hybrid_two_words"),
    ("hybrid search, question", "hybrid_question"),
    ("filtered list", "list_filtered"),
)


def cell(figures: dict[str, Any], key: str) -> str:
    """``p50 / p99`` in ms, or empty when the size did not measure it."""
    p50, p99 = figures.get(f"{key}_p50_ms"), figures.get(f"{key}_p99_ms")
    if p50 is None or p99 is None:
        return ""
    return f"{p50:,.2f} / {p99:,.2f}"


def curve_table(results: dict[int, dict[str, dict[str, float]]], names: list[str]) -> str:
    """One row per operation and server (the floor's under agent-memory's), one column per
    size; rows a server never measured are left out."""
    sizes = sorted(results)
    head = ["p50 / p99, ms", *(f"{size:,}" for size in sizes)]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * len(sizes)]
    for label, key in OPERATIONS:
        for name in names:
            cells = [cell(results[size].get(name, {}), key) for size in sizes]
            if any(cells):
                shown = label if name == "agent-memory" else f"{label} ({name})"
                lines.append("| " + " | ".join([shown, *cells]) + " |")
    return "\n".join(lines)


def cached(cache: Path | None, size: int, db: Path, build: Any) -> None:
    """``db`` holding ``size`` memories: copied from ``cache`` when built there before, else
    built by ``build()`` (and kept in ``cache``, when given)."""
    kept = None if cache is None else cache / f"memories-{size}.db"
    if kept is not None and kept.exists():
        log(f"{size}: copying the loaded file from {kept}")
        shutil.copyfile(kept, db)
        return
    build()
    if kept is not None:
        conn = sqlite3.connect(db)  # the WAL's pages into the file before it is copied
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        cache.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
        shutil.copyfile(db, kept)
