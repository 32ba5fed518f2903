"""How results are ordered and where a page ends: time decay, each leg's calibrated
relevance, their fusion, and the cut.

Pure functions and the constants they use; every store ranks with these (SQL stores write
the decay formula in their own dialect from the same constants).

``decay = exp(-ln 2 * max(now - last_accessed, 0) / half_life)``, in integer unix seconds.
Decay only orders results; it never deletes anything. It lies in (0, MAX_DECAY]: a keyword
search scores ``decay - bm25``, so a row's decay can move it by at most MAX_DECAY, the bound
every keyword shortcut reasons with.

A hybrid page (``fuse``, then ``end``): each candidate's keyword share and sigmas above
unrelated text (ranking.relevance) become two relevances on one scale, their sum the fused
score, times decay once. The keyword leg counts in proportion to how much of the question
its best match holds (a question that shares only small words with the store leans on
meaning). The page ends where relevance drops off: a memory stays when one leg finds it
close to that leg's best on the page, and never with a fused score of 0. A keyword page is
ordered by bm25 and decay, words typed together counting as a phrase, and ends the same way
on its one leg.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.contract.models import Noise
from agent_memory.contract.vocabulary import PINNED_TYPES
from agent_memory.ranking.relevance import Match, Words, sigmas

HALF_LIFE_SECS = 30 * 24 * 3600  # 2,592,000 s: PATTERN, ERROR, TODO
PINNED_HALF_LIFE_FACTOR = 6
PINNED_HALF_LIFE_SECS = PINNED_HALF_LIFE_FACTOR * HALF_LIFE_SECS  # 180 days
BASE_WEIGHT = 1.0
PINNED_BASE_WEIGHT = 2.0
MAX_DECAY = 1.0
# Hybrid search: each leg keeps min(LEG_FACTOR x limit, MAX_LEG) candidates.
LEG_FACTOR = 4
MAX_LEG = 800
# The fusion (FUSIONS below). FUSION names the one searches use; a bench sets the constant
# to measure another (bench/fusion_serve.py): "rrf", the contract's reciprocal rank fusion
# (1 / (RRF_K + rank), summed over the legs; the page ends as the default's does); for
# measurement, "model", the vector leg alone by cosine, with no cut, and "meaning", the
# vector leg alone as the default weighs it, the page ending as the default's does.
FUSION = "calibrated"
RRF = "rrf"
MODEL_ONLY = "model"
MEANING_ONLY = "meaning"
RRF_K = 60
# The keyword leg's weight in a hybrid page grows from nothing, when the best keyword match
# holds KEYWORD_TRUST_FROM of the question's information, to all of it at KEYWORD_TRUST_FULL:
# a question that shares only its small words, or one word of several, with the store is
# answered by meaning.
KEYWORD_TRUST_FROM = 0.3
KEYWORD_TRUST_FULL = 0.45
# Meaning: a memory counts as found when it stands FLOOR_SIGMAS standard deviations above the
# query's similarity to unrelated text, and weighs a keyword match holding the whole
# question for every SIGMAS_PER_SHARE standard deviations beyond that.
FLOOR_SIGMAS = 2.0
SIGMAS_PER_SHARE = 6.0
# The page's end. A memory stays when its keyword share is at least KEEP_KEYWORD of the
# page's best (while the keyword leg counts), or when its margin over the meaning floor is at
# least a share of the page's best margin: KEEP_MEANING_LOW of it when the keyword leg does
# not count, up to KEEP_MEANING_HIGH when it counts fully (a question its words answer
# keeps only the closest matches by meaning beside them).
KEEP_KEYWORD = 0.5
KEEP_MEANING_LOW = 0.3
KEEP_MEANING_HIGH = 0.6
# A page whose best match by meaning stands less than WEAK_MARGIN standard deviations above
# the floor has no clear answer (a question about something the store does not hold looks
# like this): the share it keeps rises towards KEEP_MEANING_HIGH as that margin shrinks, so
# only the matches nearly as close as the best stay.
WEAK_MARGIN = 1.5
# A keyword page (no model to judge the weaker matches) keeps the memories holding at least
# KEYWORD_LEAST of the question's information and KEEP_KEYWORD_ALONE of its best match's.
KEYWORD_LEAST = 0.2
KEEP_KEYWORD_ALONE = 0.3
# Whether pages end where relevance drops (a bench turns it off to see what the end costs;
# Store.search's ``floor=False`` does for one search).
CUT = True
SEARCH_MODE_KEYWORD = "keyword"
SEARCH_MODE_HYBRID = "hybrid"


def base_weight(memory_type: str) -> float:
    return PINNED_BASE_WEIGHT if memory_type in PINNED_TYPES else BASE_WEIGHT


def half_life(memory_type: str) -> int:
    return PINNED_HALF_LIFE_SECS if memory_type in PINNED_TYPES else HALF_LIFE_SECS


def decay_rate(memory_type: str) -> float:
    """-ln 2 / half-life: decay is ``exp(age * rate)`` (a multiplication, where SQL stores
    evaluate it for every matching row)."""
    return -math.log(2) / half_life(memory_type)


def decay(memory_type: str, last_accessed: int, now: int) -> float:
    return math.exp(max(now - last_accessed, 0) * decay_rate(memory_type))


def leg_size(limit: int) -> int:
    """How many candidates each leg of a hybrid search keeps."""
    return min(LEG_FACTOR * limit, MAX_LEG)


@dataclass(slots=True)
class Candidate:
    """One memory a search found, and how: each leg's rank and raw score (None: that leg did
    not find it), what it holds of the query's words, its sigmas above unrelated text, and
    the scores made of them."""

    row: dict[str, Any]
    keyword: tuple[int, float] | None = None  # (rank, -bm25)
    vector: tuple[int | None, float] | None = None  # (rank, cosine similarity); rank None:
    # the vector leg did not bring it, its similarity was read for the fusion
    match: Match | None = None
    sigmas: float | None = None
    keyword_relevance: float = 0.0
    meaning: float = 0.0
    fused: float = 0.0
    score: float = 0.0

    @property
    def id(self) -> int:
        return int(self.row["id"])


@dataclass
class Ranked:
    """Every candidate of one search, best first, and what the page's end reads: the fusion,
    how far the keyword leg is trusted, the meaning's noise and floor, the words."""

    candidates: list[Candidate]
    fusion: str
    hybrid: bool
    trust: float = 1.0
    noise: Noise | None = None
    floor: float | None = None
    words: dict[str, Any] | None = None
    score: str = ""
    weighed: Words | None = None


@dataclass(frozen=True)
class Fused:
    """A page, with why each memory is on it (``why``, by id, each made when first read)
    and how the page was made and ended (``explain``)."""

    results: list[dict[str, Any]]
    why: Mapping[int, dict[str, Any]]
    explain: dict[str, Any]


def fuse(
    keyword: Sequence[tuple[int, float]],
    nearest: Sequence[tuple[int, float]],
    rows: Mapping[int, dict[str, Any]],
    words: Words | None = None,
    unrelated: Noise | None = None,
    fusion: str | None = None,
    similar: Mapping[int, float] | None = None,
) -> Ranked:
    """Every candidate of a hybrid search, scored and best first (``end`` cuts the page).

    ``keyword`` holds (id, -bm25) and ``nearest`` (id, cosine similarity), best first;
    ``rows`` the candidates that exist and pass the filters, with ``decay_score`` as of the
    query and their ``content`` and ``tags`` (an id missing from it drops out of both legs);
    ``words``: a plain query's words (else its keyword share is its bm25 against the leg's
    best); ``unrelated``: the query's similarity to unrelated text (without it, to the
    vector leg's own candidates); ``similar``: the similarity of keyword candidates the
    vector leg did not bring (so that every candidate is weighed on both legs).
    """
    name = FUSION if fusion is None else fusion
    found: dict[int, Candidate] = {}
    for rank, (memory_id, score) in enumerate((p for p in keyword if p[0] in rows), start=1):
        found[memory_id] = Candidate(rows[memory_id], keyword=(rank, score))
    for rank, (memory_id, score) in enumerate((p for p in nearest if p[0] in rows), start=1):
        candidate = found.get(memory_id)
        if candidate is None:
            candidate = found[memory_id] = Candidate(rows[memory_id])
        candidate.vector = (rank, score)
    for memory_id, similarity in (similar or {}).items():
        if memory_id in found and found[memory_id].vector is None:
            found[memory_id].vector = (None, similarity)
    candidates = list(found.values())
    if name in (MODEL_ONLY, MEANING_ONLY):  # measurement: the vector leg alone
        candidates = [c for c in candidates if c.vector is not None and c.vector[0] is not None]
        for c in candidates:
            c.keyword = None
        words = None
    best = _keyword_shares(candidates, words)
    noise, floor = _noise(candidates, unrelated)
    trust, fused = _trust(best), FUSIONS[name]
    for c in candidates:  # one pass over every candidate of both legs
        if c.vector is not None and noise is not None:
            c.sigmas = sigmas(c.vector[1], noise)
            c.meaning = max(c.sigmas - floor, 0.0) / SIGMAS_PER_SHARE
        if best > 0 and c.match is not None:
            c.keyword_relevance = trust * c.match.share / best
        c.fused = fused(c)
        c.score = c.fused * c.row["decay_score"]
    return Ranked(
        _ordered(candidates), name, True, trust, noise, floor, _words(words), "fused × decay", words
    )


def keyword_ranking(
    scored: Iterable[tuple[dict[str, Any], float]], words: Words | None = None
) -> Ranked:
    """A keyword page's candidates, (memory, decay - bm25) best first, each with its keyword
    share; ``words``: the query's words when it is plain language (else FTS5 syntax: each
    match's share is its bm25 against the best, the order the engine's). The memories holding
    every word stay first; among them and among the others, words held as they were typed
    add their rarer word's information to the score (decay + bm25 + together)."""
    candidates = []
    for rank, (memory, score) in enumerate(scored, start=1):
        c = Candidate(memory, keyword=(rank, score - memory["decay_score"]))
        candidates.append(c)
    _keyword_shares(candidates, words)
    for c in candidates:
        assert c.keyword is not None
        c.fused = c.keyword[1] + _together_bonus(c, words)
        c.score = c.row["decay_score"] + c.fused
        c.keyword_relevance = c.match.share if c.match is not None else 0.0
    if words is not None:
        every = len(words.typed)
        candidates.sort(
            key=lambda c: (c.match is None or len(c.match.words) < every, -c.score, c.id)
        )
    score = "decay + bm25" + (" + words typed together" if words and words.pairs else "")
    return Ranked(candidates, "keyword", False, words=_words(words), score=score, weighed=words)


def end(ranked: Ranked, limit: int, cut: bool | None = None, hidden: Iterable[int] = ()) -> Fused:
    """The page: the candidates not ``hidden`` (superseded), those past the page's end left
    out (``cut``, CUT when None), at most ``limit``; with why each is in and where the page
    ended."""
    gone = set(hidden)
    shown = [c for c in ranked.candidates if c.id not in gone]
    cut = CUT if cut is None else cut
    rule = _Rule(ranked, shown) if cut and ranked.fusion != MODEL_ONLY else None
    kept = [c for c in shown if rule is None or rule.keeps(c)]
    page = kept[:limit]
    why = Whys(page, ranked, rule)
    explain: dict[str, Any] = {"score": ranked.score, "words": ranked.words}
    if ranked.hybrid:
        explain.update(
            fusion=ranked.fusion,
            unrelated=None
            if ranked.noise is None
            else {"mean": ranked.noise.mean, "std": ranked.noise.std},
            keyword_trust=ranked.trust,
        )
    explain["cut"] = cut_explained(rule, len(shown), len(kept), len(page), limit)
    return Fused([c.row for c in page], why, explain)


# -- calibration ---------------------------------------------------------------------------


def _keyword_shares(candidates: list[Candidate], words: Words | None) -> float:
    """Each candidate's Match: what its text holds of ``words``; without words (FTS5
    syntax), the keyword leg's matches by their bm25 against the best. Returns the best
    share."""
    if words is not None:
        best, match = 0.0, words.match
        for c in candidates:
            c.match = found = match(c.row.get("content", ""), c.row.get("tags", ()))
            best = max(best, found.share)
        return best
    top = max((c.keyword[1] for c in candidates if c.keyword is not None), default=0.0)
    for c in candidates:
        if c.keyword is not None:
            share = min(c.keyword[1] / top, 1.0) if top > 0 else 1.0
            c.match = Match(share, (), ())
    return _best_share(candidates)


def _best_share(candidates: Sequence[Candidate]) -> float:
    return max((c.match.share for c in candidates if c.match is not None), default=0.0)


def _trust(best: float) -> float:
    """How far the keyword leg counts (0 to 1), from its best match's share."""
    span = KEYWORD_TRUST_FULL - KEYWORD_TRUST_FROM
    return min(max((best - KEYWORD_TRUST_FROM) / span, 0.0), 1.0)


def _noise(candidates: Sequence[Candidate], unrelated: Noise | None) -> tuple[Noise | None, float]:
    """The meaning's noise and floor: the query's similarity to unrelated text, the floor
    FLOOR_SIGMAS above it; without it, the vector leg's own candidates, the floor at their
    mean (their best then counts, whatever the model)."""
    if unrelated is not None and unrelated.std > 0:
        return unrelated, FLOOR_SIGMAS
    found = [c.vector[1] for c in candidates if c.vector is not None and c.vector[0] is not None]
    if not found:
        return None, 0.0
    spread = statistics.pstdev(found) if len(found) > 1 else 0.0
    return Noise(statistics.fmean(found), spread or 1.0, len(found)), 0.0


def _together_bonus(c: Candidate, words: Words | None) -> float:
    """What the words a memory holds as they were typed add to its keyword score."""
    if words is None or c.match is None or not c.match.together:
        return 0.0
    weight = words.weight_of
    pairs = (pair.split(" ") for pair in c.match.together)
    return math.fsum(max(weight[a], weight[b]) for a, b in pairs)


def _ordered(candidates: list[Candidate]) -> list[Candidate]:
    """Best first: by score, then by similarity (a page without a cut orders what neither
    leg calibrates by the model), then by id."""
    return sorted(
        candidates,
        key=lambda c: (-c.score, -(c.vector[1] if c.vector else -2.0), c.id),
    )


def _words(words: Words | None) -> dict[str, Any] | None:
    """A plain query's words for explain: each one's rows and information, the pairs typed
    together (None for FTS5 syntax, searched as written)."""
    if words is None:
        return None
    return {
        "used": list(words.typed),
        "rows": dict(zip(words.typed, words.hits, strict=True)),
        "information": dict(zip(words.typed, words.weights, strict=True)),
        "together": [f"{words.typed[a]} {words.typed[b]}" for a, b in words.pairs],
    }


# -- the fusions -----------------------------------------------------------------------------


def _calibrated(c: Candidate) -> float:
    """The keyword relevance (its share against the page's best, times the leg's trust)
    plus the meaning's (its sigmas beyond the floor, SIGMAS_PER_SHARE to a whole share)."""
    return c.keyword_relevance + c.meaning


def _rrf(c: Candidate) -> float:
    """Reciprocal rank fusion: the sum over the legs of 1 / (RRF_K + rank), ranks from 1."""
    ranks = [leg[0] for leg in (c.keyword, c.vector) if leg is not None and leg[0] is not None]
    return math.fsum(1.0 / (RRF_K + rank) for rank in ranks)


def _model(c: Candidate) -> float:
    """The cosine similarity alone (fuse leaves the keyword leg out for it)."""
    assert c.vector is not None
    return c.vector[1]


FUSIONS: dict[str, Callable[[Candidate], float]] = {
    FUSION: _calibrated,
    RRF: _rrf,
    MODEL_ONLY: _model,
    MEANING_ONLY: _calibrated,
}


# -- the page's end ------------------------------------------------------------------------


class _Rule:
    """Where a page ends, read from the candidates that can be shown."""

    def __init__(self, ranked: Ranked, shown: Sequence[Candidate]) -> None:
        self.hybrid = ranked.hybrid
        self.trust = ranked.trust if ranked.hybrid else 1.0
        self.best_share = _best_share(shown)
        self.least_share: float | None = None
        # FTS5 syntax means exactly what it says: every match of it stays.
        self.syntax = ranked.weighed is None and any(c.keyword for c in shown)
        if self.syntax:
            self.least_share = 0.0
        elif self.hybrid and self.trust > 0 and self.best_share > 0:
            self.least_share = KEEP_KEYWORD * self.best_share
        elif not self.hybrid and self.best_share >= KEYWORD_LEAST:
            self.least_share = max(KEEP_KEYWORD_ALONE * self.best_share, KEYWORD_LEAST)
        self.floor = ranked.floor
        margins = [c.sigmas - ranked.floor for c in shown if c.sigmas is not None]
        best = max(margins, default=0.0)
        keep = KEEP_MEANING_LOW + (KEEP_MEANING_HIGH - KEEP_MEANING_LOW) * self.trust
        if ranked.floor and 0 < best < WEAK_MARGIN:  # above unrelated text, not the candidates
            keep += (KEEP_MEANING_HIGH - keep) * (1 - best / WEAK_MARGIN)
        self.best_sigmas = None if not margins else best + (ranked.floor or 0.0)
        self.least_sigmas = None if best <= 0 else (ranked.floor or 0.0) + keep * best

    def by_keyword(self, c: Candidate) -> bool:
        return (
            self.least_share is not None
            and c.match is not None
            and c.match.share > 0
            and c.match.share >= self.least_share
        )

    def by_meaning(self, c: Candidate) -> bool:
        return (
            self.least_sigmas is not None and c.sigmas is not None and c.sigmas >= self.least_sigmas
        )

    def keeps(self, c: Candidate) -> bool:
        return c.fused > 0 and (self.by_keyword(c) or self.by_meaning(c))


# -- explain: what ``explain: true`` says, in words a person reads ---------------------------
# Per result, what it holds of the question, how far the model puts it above unrelated text
# and which leg kept it on the page; per page, how many candidates there were and where the
# page ended. Each result's is made only when first read: a search without explain builds none.


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


def cut_explained(
    rule: _Rule | None, candidates: int, kept: int, shown: int, limit: int
) -> dict[str, Any]:
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
