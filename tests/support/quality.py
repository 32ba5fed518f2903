"""How good a search mode's pages are on a set: its memories stored through the service, its
questions asked, and where the answers land.

Why one helper: the quality tests and bench/quality.py judge every ranking by the same
figures, on the committed sets (semantic_set, everyday_set, project_set) and on held-out ones
kept outside the repository (``load_set``: a Python file defining the same names).

A set is ``MEMORIES`` (``semantic_set.Memory``), ``QUERIES`` (``semantic_set.Query``: the
memory that answers, and any other that does as well), and optionally ``OFF_TOPIC`` (questions
nothing in it answers) and ``TAGS`` (key -> the memory's tags).

The figures, for one mode (``MODES``: keyword, the model alone, the default hybrid, each
other fusion by its name), every question asked with the default page (no ``limit``), with
``explain``, and no use recorded (so the order of the questions changes nothing):
- ``first``, ``top3``, ``top10``: questions with an answer first, in the first 3, in the first 10;
- ``mean_page``: the results a question gets, on average;
- ``off_topic_page``: the same for the off-topic questions;
- ``zero_scored``: results whose fused score is 0 (or less), on every page asked.
"""

from __future__ import annotations

import contextlib
import importlib.util
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from agent_memory import ranking
from agent_memory.service.core import MemoryService
from tests.support.semantic_set import Memory, Query

KEYWORD = "keyword"
HYBRID = "hybrid"
# keyword, the model alone, the default fusion, then every other fusion by its name
MODES: tuple[str, ...] = (
    KEYWORD,
    ranking.MODEL_ONLY,
    HYBRID,
    *(f for f in ranking.FUSIONS if f not in (ranking.FUSION, ranking.MODEL_ONLY)),
)
TOP = (1, 3, 10)


@dataclass(frozen=True)
class QualitySet:
    """Memories, the questions they answer, questions they do not, and their tags."""

    name: str
    memories: tuple[Memory, ...]
    queries: tuple[Query, ...]
    off_topic: tuple[str, ...] = ()
    tags: Mapping[str, Sequence[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, source: Any, *, tagged: bool = True) -> QualitySet:
        """The set a module (or any object) defines as MEMORIES, QUERIES, OFF_TOPIC, TAGS;
        ``tagged=False`` stores the memories without their tags."""
        return cls(
            name,
            tuple(source.MEMORIES),
            tuple(source.QUERIES),
            tuple(getattr(source, "OFF_TOPIC", ())),
            dict(getattr(source, "TAGS", {})) if tagged else {},
        )

    def only(self, keys: Sequence[str], name: str | None = None) -> QualitySet:
        """The set kept to the memories ``keys``, and the questions all of whose answers
        are among them."""
        kept = set(keys)
        return QualitySet(
            name or f"{self.name} ({len(kept)} memories)",
            tuple(m for m in self.memories if m.key in kept),
            tuple(q for q in self.queries if set(q.answers) <= kept),
            self.off_topic,
            {k: v for k, v in self.tags.items() if k in kept},
        )


def load_set(path: str | Path, name: str | None = None) -> QualitySet:
    """A set kept outside the repository: a Python file defining MEMORIES and QUERIES (of
    tests.support.semantic_set's types, or plain tuples in their field order), and
    optionally OFF_TOPIC and TAGS."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(f"quality_set_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot load a set from {path}")
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.MEMORIES = tuple(m if isinstance(m, Memory) else Memory(*m) for m in module.MEMORIES)
    module.QUERIES = tuple(
        q if isinstance(q, Query) else Query(q[0], q[1], tuple(q[2:])) for q in module.QUERIES
    )
    return QualitySet.of(name or path.stem, module)


@dataclass(frozen=True)
class Figures:
    """One mode's figures on one set (module docstring); ``ranks``: each question's first
    answer's rank on its page (None: not on it), ``pages``: each page's keys."""

    set: str
    mode: str
    ranks: tuple[int | None, ...]
    pages: tuple[tuple[str, ...], ...]
    off_topic_pages: tuple[tuple[str, ...], ...]
    zero_scored: int

    @property
    def questions(self) -> int:
        return len(self.ranks)

    def within(self, k: int) -> int:
        """How many questions have an answer in the first ``k`` results."""
        return sum(r is not None and r <= k for r in self.ranks)

    @property
    def first(self) -> int:
        return self.within(1)

    @property
    def top3(self) -> int:
        return self.within(3)

    @property
    def top10(self) -> int:
        return self.within(10)

    @property
    def first_rate(self) -> float:
        return self.first / self.questions if self.questions else 0.0

    @property
    def mean_page(self) -> float:
        return statistics.fmean(map(len, self.pages)) if self.pages else 0.0

    @property
    def off_topic_page(self) -> float | None:
        if not self.off_topic_pages:
            return None
        return statistics.fmean(map(len, self.off_topic_pages))

    def missed(self, queries: Sequence[Query], k: int = 1) -> list[tuple[str, int | None]]:
        """The questions without an answer in the first ``k``, with their answer's rank."""
        return [
            (q.query, r) for q, r in zip(queries, self.ranks, strict=True) if r is None or r > k
        ]


def stored(svc: MemoryService, qset: QualitySet) -> dict[str, int]:
    """The set's memories stored through ``svc`` (with their tags): key -> id."""
    ids = {}
    for m in qset.memories:
        args: dict[str, Any] = {"content": m.content, "type": m.type}
        if qset.tags.get(m.key):
            args["tags"] = list(qset.tags[m.key])
        ids[m.key] = svc.store(args)["id"]
    return ids


@contextlib.contextmanager
def fusion_set(name: str | None) -> Iterator[None]:
    """ranking.FUSION set to ``name`` (the default for None) meanwhile, in this process: the
    product reads no setting for it (over MCP, bench/fusion_serve.py sets it in the server)."""
    before = ranking.FUSION
    ranking.FUSION = before if name is None else name
    try:
        yield
    finally:
        ranking.FUSION = before


def fusion_of(mode: str) -> str | None:
    """The fusion a mode sets (None: the default)."""
    return mode if mode in ranking.FUSIONS and mode != ranking.FUSION else None


def zero_scored(result: dict[str, Any]) -> bool:
    """Whether an explained result was returned with nothing for it: a fused score (a hybrid
    page's; else the result's score) of 0 or less. A ``why`` with neither fails loudly, so a
    renamed field cannot make every page look clean."""
    why = result["why"]
    return (why["fused"] if "fused" in why else why["score"]) <= 0


def searcher(svc: MemoryService, mode: str) -> MemoryService:
    """The service that answers ``mode``: for keyword, one over the same store with no
    embedder (the store stays open: it is ``svc``'s)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
    if mode != KEYWORD:
        if svc.embedder is None:
            raise ValueError(f"mode {mode!r} needs a service with an embedder")
        return svc
    return MemoryService(svc.db, clock=svc.now)


def measure(
    svc: MemoryService,
    qset: QualitySet,
    mode: str = HYBRID,
    ids: Mapping[str, int] | None = None,
    **search: Any,
) -> Figures:
    """``mode``'s figures on ``qset`` (module docstring). ``ids``: the set's memories as
    ``stored`` returned them (stored now when None); ``search``: more search arguments
    (a ``limit``, a filter)."""
    ids = stored(svc, qset) if ids is None else ids
    keys = {memory_id: key for key, memory_id in ids.items()}
    asker = searcher(svc, mode)
    zero = 0

    def page(text: str) -> tuple[str, ...]:
        nonlocal zero
        answer = asker.search({"query": text, "explain": True, **search}, record_use=False)
        expected = KEYWORD if mode == KEYWORD else HYBRID
        if answer["search_mode"] != expected:
            raise RuntimeError(f"{mode}: answered in {answer['search_mode']} mode")
        zero += sum(zero_scored(r) for r in answer["results"])
        return tuple(keys.get(r["id"], f"#{r['id']}") for r in answer["results"])

    with fusion_set(fusion_of(mode)):
        pages = tuple(page(q.query) for q in qset.queries)
        off = tuple(page(text) for text in qset.off_topic)
    ranks = tuple(
        next((rank for rank, key in enumerate(found, 1) if key in q.answers), None)
        for q, found in zip(qset.queries, pages, strict=True)
    )
    return Figures(qset.name, mode, ranks, pages, off, zero)
