"""What ``explain: true`` says, in words a person reads: per result, what it holds of the
question, how far the model puts it above unrelated text and which leg kept it on the page;
per page, how many candidates there were and where the page ended (ranking.end).

Made from a search's candidates (ranking.Candidate) and the rule that ended its page
(ranking's _Rule), each result's only when first read: a search without explain builds none.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_memory.search.ranking import Candidate, Ranked, _Rule


class Whys(Mapping[int, dict[str, Any]]):
    """Why each memory of a page is on it, by id, each made when first asked for: a search
    without explain reads none."""

    def __init__(self, page: Sequence[Candidate], ranked: Ranked, rule: _Rule | None) -> None:
        self._page = {c.id: c for c in page}
        self._ranked, self._rule = ranked, rule
        self._made: dict[int, dict[str, Any]] = {}

    def __getitem__(self, memory_id: int) -> dict[str, Any]:
        if memory_id not in self._made:
            self._made[memory_id] = _why(self._page[memory_id], self._ranked, self._rule)
        return self._made[memory_id]

    def __iter__(self) -> Iterator[int]:
        return iter(self._page)

    def __len__(self) -> int:
        return len(self._page)


def _why(c: Candidate, ranked: Ranked, rule: _Rule | None) -> dict[str, Any]:
    """Why ``c`` is on the page: each leg's rank and scores, and in words."""
    keyword = None
    if c.keyword is not None or (c.match is not None and c.match.share > 0):
        keyword = {
            "rank": None if c.keyword is None else c.keyword[0],
            "bm25": None if c.keyword is None else c.keyword[1],
            "share": 0.0 if c.match is None else c.match.share,
            "words": [] if c.match is None else list(c.match.words),
            "together": [] if c.match is None else list(c.match.together),
        }
    vector = None
    if c.vector is not None:
        vector = {"rank": c.vector[0], "similarity": c.vector[1], "share": c.meaning}
        if c.sigmas is not None:
            vector["sigmas"] = c.sigmas
    return {
        "keyword": keyword,
        "vector": vector,
        "fused": c.fused,
        "decay": c.row["decay_score"],
        "score": c.score,
        "reason": _reason(c, ranked, rule),
    }


def _reason(c: Candidate, ranked: Ranked, rule: _Rule | None) -> str:
    """Why a memory is on the page, in a sentence a person reads."""
    parts = []
    if c.match is not None and c.match.share > 0:
        held = f"holds {_percent(c.match.share)} of the question's information"
        if c.match.words:
            held += f" ({', '.join(c.match.words)})"
        if c.match.together:
            held += f", {', '.join(repr(p) for p in c.match.together)} as typed"
        parts.append(held)
    if c.sigmas is not None and ranked.noise is not None:
        parts.append(f"{c.sigmas:.1f}σ above unrelated text")
    found = " and ".join(parts) if parts else "no leg scored it"
    if rule is None:
        return f"{found}; nothing cut"
    legs = []
    if rule.by_keyword(c):
        legs.append("its keyword share is close to the best")
    if rule.by_meaning(c):
        legs.append("the model puts it close to the best")
    return f"{found}; in because {' and '.join(legs)}"


def _percent(share: float) -> str:
    return f"{round(100 * share)}%"


def cut(rule: _Rule | None, candidates: int, kept: int, shown: int, limit: int) -> dict[str, Any]:
    """Where the page ended and why, for explain."""
    out: dict[str, Any] = {"candidates": candidates, "kept": kept, "returned": shown}
    if rule is None:
        out["reason"] = f"nothing cut: the first {shown} of {candidates} by score"
        return out
    out.update(
        keyword_share=rule.least_share,
        sigmas=rule.least_sigmas,
        best_share=rule.best_share,
        best_sigmas=rule.best_sigmas,
    )
    bars = []
    if rule.syntax:
        bars.append("every match of the FTS5 query")
    elif rule.least_share is not None:
        bars.append(f"a keyword share of at least {_percent(rule.least_share)}")
    elif rule.best_share > 0:
        bars.append(
            f"no keyword match (the best holds {_percent(rule.best_share)} of the question)"
            if not rule.hybrid
            else f"not the keyword leg (its best holds only {_percent(rule.best_share)})"
        )
    if rule.least_sigmas is not None:
        bars.append(f"at least {rule.least_sigmas:.1f}σ above unrelated text")
    elif rule.hybrid and rule.best_sigmas is not None:
        bars.append(
            f"nothing by meaning (the closest is {rule.best_sigmas:.1f}σ above unrelated text,"
            f" under the {rule.floor:.1f}σ floor)"
        )
    kept_by = " or ".join(bars) if bars else "nothing relevant"
    more = f", then the limit of {limit}" if kept > shown else ""
    out["reason"] = f"{kept} of {candidates} candidates kept: {kept_by}{more}"
    return out
