"""Retrieval on held-out data: how often search finds the turns that answer a question.

    .venv/bin/python -m bench.retrieval --data /work/data/locomo10.json [--every N]
        [--conversations K] [--modes keyword,model,hybrid,rrf] [--limit 10]
        [--via mcp|service] [--cache DIR]

The data is LoCoMo (github.com/snap-research/locomo, data/locomo10.json): 10 long
conversations between two people, with questions whose ``evidence`` names the dialogue turns
that answer them ("D1:3"). Nothing in agent-memory was tuned on it. Every turn is stored as one
memory ("SPEAKER: text", type PATTERN, its dialogue id as ``source``, one scope per
conversation), through MemoryService on SQLite, at one fixed clock. Each question of
categories 1-4 (5, adversarial, has no answer in the conversation) is asked within its
conversation's scope for 10 results (--limit) and scored: recall@k, the share of its evidence
turns in the first k; hit@k, whether any is; MRR. The mean page size shows where pages ended
(at --limit 50, an agent's usual page, too).

``--via mcp`` (the default) asks through the MCP tools, as an agent does: for each mode it
spawns the real ``agent-memory serve`` (stdio) on a copy of the built database and calls
``memory_search`` with the official MCP client; latency is measured at the client, round trip
included. A search over MCP counts as a use, so the copy's memories are first stamped as used
a year ahead: every decay stays 1 (as in process), and what a search returns moves by at most
2.7e-7 per second since (half-life 30 days), which only breaks exact ties; the cache is never
served, so it stays clean.
``--via service`` asks MemoryService in this process (record_use=False, decay 1), faster.

Modes: ``keyword`` (serve --embedder none), ``model`` (the local model alone: the
measurement fusion ``ranking.MODEL_ONLY``, ranked by cosine, nothing cut), ``hybrid`` (the
default: calibrated legs, and the page ends where relevance drops), each other fusion by its
name (``rrf``; the page ends as the default's), and in process only ``no-cut`` (the default
with ranking.CUT = False). A fusion is chosen by setting ``ranking.FUSION``: in process for
the duration of a mode, over MCP in the spawned server (bench/fusion_serve.py). The databases
are built once per data file, conversation count and embedder, and kept under --cache
(embedding ~5,900 turns takes a few minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_memory import ranking
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from bench._common import pct
from tests.support.quality import fusion_of, fusion_set

REPO = Path(__file__).resolve().parent.parent  # where ``python -m bench.fusion_serve`` runs
DEFAULT_DATA = Path("/work/data/locomo10.json")
DEFAULT_CACHE = Path("/work/data/retrieval-cache")
SOURCE = "https://github.com/snap-research/locomo (data/locomo10.json)"
T0 = 1_767_225_600  # the fixed clock: stored and searched at once, every decay is 1
LIMIT = 10
CUTOFFS = (5, 10)
TYPE = "PATTERN"
ADVERSARIAL = 5
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
NO_CUT = "no-cut"  # ranking.CUT, a module constant: in process only
# "model" is ranking.MODEL_ONLY; after "hybrid", every other fusion by its name ("rrf", ...).
MODES = (
    "keyword",
    ranking.MODEL_ONLY,
    "hybrid",
    NO_CUT,
    *(f for f in ranking.FUSIONS if f not in (ranking.FUSION, ranking.MODEL_ONLY)),
)
VIAS = ("mcp", "service")
# Over MCP the copy's memories are stamped as last used this far ahead: every decay is 1.
STAMP_AHEAD_SECS = 365 * 24 * 3600
CALL_TIMEOUT_SECS = 120.0  # the first search loads the model in the server
READY = re.compile(r"embedder ready: (.+?); searches are hybrid")
# A few evidence ids in the file are written loosely ("D:11:26", "D30:05", "D8:6; D9:17").
EVIDENCE_ID = re.compile(r"D:?(\d+):0*(\d+)")


@dataclass(frozen=True)
class Question:
    conversation: str
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: list[tuple[str, str]]  # (dialogue id, "SPEAKER: text")
    questions: list[Question]

    @property
    def scope(self) -> str:
        return scope_of(self.sample_id)


def scope_of(sample_id: str) -> str:
    return f"locomo-{sample_id}"


def evidence_ids(raw: Iterable[str]) -> set[str]:
    """The dialogue ids an evidence list names, loosely written ones read as meant."""
    return {f"D{s}:{t}" for item in raw for s, t in EVIDENCE_ID.findall(str(item))}


def load(path: Path, conversations: int | None = None) -> list[Conversation]:
    """The first ``conversations`` conversations of a LoCoMo file, each question's evidence
    kept to the turns the conversation holds."""
    samples = json.loads(path.read_text(encoding="utf-8"))[:conversations]
    found = []
    for sample in samples:
        sample_id = str(sample["sample_id"])
        talk = sample["conversation"]
        sessions = sorted(
            (int(key.split("_")[1]), value)
            for key, value in talk.items()
            if re.fullmatch(r"session_\d+", key) and isinstance(value, list)
        )
        turns = [
            (turn["dia_id"], f"{turn['speaker']}: {turn['text']}")
            for _, session in sessions
            for turn in session
        ]
        held = {dia_id for dia_id, _ in turns}
        questions = [
            Question(
                sample_id,
                qa["question"],
                qa["category"],
                frozenset(evidence_ids(qa["evidence"]) & held),
            )
            for qa in sample["qa"]
        ]
        found.append(Conversation(sample_id, turns, questions))
    return found


def asked(conversations: list[Conversation], every: int = 1) -> tuple[list[Question], int]:
    """Every ``every``-th question of categories 1-4 (in file order, across conversations),
    and how many of those were dropped for naming no turn the conversation holds."""
    kept = [q for c in conversations for q in c.questions if q.category != ADVERSARIAL][::every]
    answerable = [q for q in kept if q.evidence]
    return answerable, len(kept) - len(answerable)


def fill(svc: MemoryService, conversations: list[Conversation]) -> int:
    """Store every turn as one memory, its dialogue id as source, its conversation as scope."""
    stored = 0
    for c in conversations:
        for dia_id, content in c.turns:
            svc.store({"content": content, "type": TYPE, "source": dia_id, "scope": c.scope})
            stored += 1
    return stored


def score(found: list[str], evidence: frozenset[str], k: int) -> tuple[float, bool]:
    """(recall@k, hit@k) of one ranked list of dialogue ids."""
    top = set(found[:k]) & evidence
    return len(top) / len(evidence), bool(top)


def search_args(q: Question) -> dict[str, Any]:
    """The tool's arguments for one question: its words, its conversation, LIMIT results."""
    return {"query": q.text, "limit": LIMIT, "scope": scope_of(q.conversation)}


def search_service(svc: MemoryService, q: Question) -> list[dict[str, Any]]:
    return svc.search(search_args(q), record_use=False)["results"]


@dataclass
class Result:
    mode: str
    recall: dict[int, float] = field(default_factory=dict)
    hit: dict[int, float] = field(default_factory=dict)
    page: float = 0.0
    mrr: float = 0.0  # 1 / the rank of the first evidence turn in the page (0: none in it)
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    by_category: dict[int, tuple[int, float, float]] = field(default_factory=dict)  # n, r@10, h@10
    embedder: str = "none"
    pages: list[list[str]] = field(default_factory=list)  # each question's sources, in order


def scored(
    mode: str,
    questions: list[Question],
    pages: list[list[str]],
    times: list[float],
    embedder: str = "none",
) -> Result:
    """The figures of one mode: each question's page (dialogue ids, best first) and time."""
    recalls: dict[int, list[float]] = {k: [] for k in CUTOFFS}
    hits: dict[int, list[bool]] = {k: [] for k in CUTOFFS}
    reciprocal = []
    per: dict[int, list[tuple[float, bool]]] = {}
    for q, found in zip(questions, pages, strict=True):
        first = next((rank for rank, turn in enumerate(found, 1) if turn in q.evidence), None)
        reciprocal.append(0.0 if first is None else 1.0 / first)
        for k in CUTOFFS:
            recall, hit = score(found, q.evidence, k)
            recalls[k].append(recall)
            hits[k].append(hit)
        per.setdefault(q.category, []).append(score(found, q.evidence, CUTOFFS[-1]))
    return Result(
        mode,
        {k: statistics.fmean(v) for k, v in recalls.items()},
        {k: statistics.fmean(v) for k, v in hits.items()},
        statistics.fmean(len(found) for found in pages),
        statistics.fmean(reciprocal),
        statistics.median(times) * 1000,
        pct(times, 0.95) * 1000,
        {
            c: (len(v), statistics.fmean(r for r, _ in v), statistics.fmean(h for _, h in v))
            for c, v in sorted(per.items())
        },
        embedder,
        pages,
    )


def run_mode(mode: str, svc: MemoryService, questions: list[Question]) -> Result:
    """One mode in process (after one unmeasured warm-up search), the module setting it
    needs set only meanwhile."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    embedder = "none" if svc.embedder is None else svc.embedder.describe()
    pages, times = [], []
    with fusion_set(fusion_of(mode)):
        if mode == NO_CUT:
            ranking.CUT = False
        try:
            search_service(svc, questions[0])
            for q in questions:
                start = time.perf_counter()
                results = search_service(svc, q)
                times.append(time.perf_counter() - start)
                pages.append([r["source"] for r in results])
        finally:
            ranking.CUT = True
    return scored(mode, questions, pages, times, embedder)


def executable() -> str:
    """The agent-memory console script next to this interpreter (this venv's)."""
    found = Path(sys.executable).with_name("agent-memory")
    return str(found) if found.exists() else shutil.which("agent-memory") or "agent-memory"


def server_command(fusion: str | None, args: list[str]) -> tuple[str, list[str]]:
    """(command, arguments) that run ``agent-memory ARGS`` with ``fusion`` (None: the
    default, the console script itself): bench/fusion_serve.py sets it in the server."""
    if fusion is None:
        return executable(), args
    return sys.executable, ["-m", "bench.fusion_serve", fusion, *args]


def working_copy(cached_db: Path, directory: Path) -> Path:
    """A copy of a built database to serve, every memory stamped as used STAMP_AHEAD_SECS
    from now, so that every decay is 1 and the searches' own uses barely move it."""
    copy = directory / cached_db.name
    shutil.copyfile(cached_db, copy)
    svc = MemoryService(open_store(copy))
    try:
        ids = [m["id"] for m in svc.iter_list({})]
        svc.db.bump(dict.fromkeys(ids, (1, int(time.time()) + STAMP_AHEAD_SECS)))
    finally:
        svc.close()
    return copy


def run_mcp(
    mode: str,
    db: Path,
    questions: list[Question],
    embedder: str = "local",
    env: dict[str, str] | None = None,
) -> Result:
    """One mode through the MCP tools: ``agent-memory serve`` spawned on a working copy of
    ``db`` (``--embedder none`` for keyword, else ``embedder``; a fusion other than the
    default through bench/fusion_serve.py), one unmeasured warm-up search, then every
    question's ``memory_search`` timed at the client."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    if mode not in MODES or mode == NO_CUT:
        raise ValueError(f"mode {mode!r} cannot be asked over MCP")
    server_env = dict(os.environ if env is None else env)
    chosen = "none" if mode == "keyword" else embedder
    with tempfile.TemporaryDirectory(prefix="retrieval-") as tmp:
        copy = working_copy(db, Path(tmp))
        args = ["--db", str(copy), "--embedder", chosen, "--log-level", "info", "serve"]
        command, argv = server_command(fusion_of(mode), args)
        params = StdioServerParameters(command=command, args=argv, env=server_env, cwd=REPO)
        log_path = Path(tmp) / "serve.log"
        pages: list[list[str]] = []
        times: list[float] = []
        answered: set[str] = set()

        async def ask() -> None:
            with log_path.open("w") as errlog:
                transport = stdio_client(params, errlog=errlog)
                async with Client(transport, read_timeout_seconds=CALL_TIMEOUT_SECS) as client:
                    await client.call_tool("memory_search", search_args(questions[0]))
                    for q in questions:
                        start = time.perf_counter()
                        answer = await client.call_tool("memory_search", search_args(q))
                        times.append(time.perf_counter() - start)
                        if answer.is_error:
                            raise RuntimeError(f"memory_search failed: {answer.content}")
                        found = answer.structured_content or {}
                        answered.add(found["search_mode"])
                        pages.append([r["source"] for r in found["results"]])

        anyio.run(ask)
        log = log_path.read_text(encoding="utf-8", errors="replace")
    ready = READY.search(log)
    named = "none" if chosen == "none" else ready.group(1) if ready else f"{chosen} (not ready)"
    expected = {"keyword" if chosen == "none" else "hybrid"}
    if answered != expected:  # an embedder that failed: the figures would not be the mode's
        raise RuntimeError(f"{mode}: the server answered {sorted(answered)}; its log:\n{log}")
    return scored(mode, questions, pages, times, named)


def build(path: Path, conversations: list[Conversation], embedder: Any = None) -> None:
    """A database of the conversations at ``path``, every turn with a vector when there is
    an embedder; made under another name and renamed when complete, so an interrupted build
    is never reused."""
    partial = path.with_name(path.name + ".partial")
    for leftover in path.parent.glob(partial.name + "*"):
        leftover.unlink()
    svc = MemoryService(open_store(partial), clock=lambda: T0)
    try:
        stored = fill(svc, conversations)
    finally:
        svc.close()
    print(f"  stored {stored} turns in {path.name}", flush=True)
    if embedder is not None:
        svc = MemoryService(open_store(partial), clock=lambda: T0, embedder=embedder)
        start = time.monotonic()

        def progress(done: int, total: int) -> None:
            if done == total or done % 640 < 64:
                print(f"  embedded {done}/{total} ({time.monotonic() - start:.0f} s)", flush=True)

        try:
            svc.embed_pending(progress=progress)
        finally:
            svc.db.close()  # the embedder stays open for the searches
    for name in os.listdir(path.parent):
        if name.startswith(partial.name + "-"):  # SQLite's -wal and -shm, if left
            os.unlink(path.parent / name)
    partial.rename(path)


def cached(
    cache: Path,
    data: Path,
    conversations: list[Conversation],
    kind: str,
    embedder: Callable[[], Any] | None,
) -> Path:
    """The database for this data file, these conversations and this embedder kind;
    ``embedder`` makes the embedder, called only when the database must be built."""
    digest = hashlib.sha256(data.read_bytes()).hexdigest()[:12]
    path = cache / f"locomo-{digest}-c{len(conversations)}-{kind}.db"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        print(f"building {path} ...", flush=True)
        build(path, conversations, None if embedder is None else embedder())
    return path


def table(results: list[Result]) -> str:
    head = (
        "| mode | recall@5 | recall@10 | hit@5 | hit@10 | MRR | mean page | p50 ms | p95 ms "
        "| embedder |"
    )
    rows = [head, "|" + "---|" * 10]
    for r in results:
        rows.append(
            f"| {r.mode} | {r.recall[5]:.3f} | {r.recall[10]:.3f} | {r.hit[5]:.3f} | "
            f"{r.hit[10]:.3f} | {r.mrr:.3f} | {r.page:.1f} | {r.p50_ms:.1f} | {r.p95_ms:.1f} "
            f"| {r.embedder} |"
        )
    return "\n".join(rows)


def category_table(results: list[Result]) -> str:
    """recall@10 / hit@10 per question category."""
    cats = sorted({c for r in results for c in r.by_category})
    head = "| mode | " + " | ".join(
        f"{c} {CATEGORIES.get(c, '')} (n={results[0].by_category[c][0]})" for c in cats
    )
    rows = [head + " |", "|" + "---|" * (len(cats) + 1)]
    for r in results:
        cells = [f"{r.by_category[c][1]:.3f} / {r.by_category[c][2]:.3f}" for c in cats]
        rows.append(f"| {r.mode} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    global LIMIT  # the searches read it
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    parser.add_argument("--every", type=int, default=1, help="ask every Nth question")
    parser.add_argument("--conversations", type=int, default=None, help="the first K only")
    parser.add_argument("--modes", default=None, help="comma-separated (default: all)")
    parser.add_argument("--limit", type=int, default=LIMIT, help="results asked (10 to 50)")
    parser.add_argument("--via", choices=VIAS, default="mcp", help="MCP tools or in process")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="built databases")
    args = parser.parse_args(argv)
    allowed = [m for m in MODES if args.via == "service" or m != NO_CUT]
    if not args.data.is_file():
        print(
            f"no LoCoMo file at {args.data}: get data/locomo10.json from {SOURCE} "
            "and pass its path with --data (keep it out of this repository)",
            file=sys.stderr,
        )
        return 2
    modes = [m for m in (args.modes or ",".join(allowed)).split(",") if m]
    unknown = set(modes) - set(allowed)
    if unknown or args.every < 1 or not 10 <= args.limit <= 50:
        parser.error(
            f"--modes takes {','.join(allowed)} (via {args.via}); --every at least 1; "
            "--limit 10 to 50"
        )
    LIMIT = args.limit
    conversations = load(args.data, args.conversations)
    questions, dropped = asked(conversations, args.every)
    turns = sum(len(c.turns) for c in conversations)
    digest = hashlib.sha256(args.data.read_bytes()).hexdigest()[:12]
    print(
        f"config: data={args.data} (sha256 {digest})"
        f" conversations={len(conversations)} turns={turns} every={args.every}"
        f" questions={len(questions)} (categories 1-4; {dropped} without a held evidence turn"
        f" dropped) limit={LIMIT} modes={','.join(modes)} via={args.via} store=sqlite"
        f" fusion default={ranking.FUSION} cut default={ranking.CUT}",
        flush=True,
    )
    results = []
    if "keyword" in modes:
        path = cached(args.cache, args.data, conversations, "keyword", None)
        if args.via == "mcp":
            results.append(run_mcp("keyword", path, questions))
        else:
            svc = MemoryService(open_store(path), clock=lambda: T0)
            try:
                results.append(run_mode("keyword", svc, questions))
            finally:
                svc.close()
        print(table(results[-1:]).splitlines()[-1], flush=True)
    model_modes = [m for m in modes if m != "keyword"]
    if model_modes:
        from agent_memory.embedders.local import Local, unavailable_reason

        reason = unavailable_reason()
        if reason is not None:
            print(f"local model unavailable ({reason}): skipping {model_modes}", file=sys.stderr)
        elif args.via == "mcp":
            path = cached(args.cache, args.data, conversations, "local", Local)
            for mode in model_modes:
                results.append(run_mcp(mode, path, questions))
                print(table(results[-1:]).splitlines()[-1], flush=True)
        else:
            embedder = Local()
            path = cached(args.cache, args.data, conversations, "local", lambda: embedder)
            svc = MemoryService(open_store(path), clock=lambda: T0, embedder=embedder)
            try:
                for mode in model_modes:
                    results.append(run_mode(mode, svc, questions))
                    print(table(results[-1:]).splitlines()[-1], flush=True)
            finally:
                svc.close()
    if not results:
        return 1
    print()
    print(table(results))
    print()
    print("recall@10 / hit@10 by category:")
    print(category_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
