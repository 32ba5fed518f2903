"""How results are ordered: time decay, and the fusion of a hybrid search's two rankings.

Pure functions and the constants they use; every store ranks with these (SQL stores write
the decay formula in their own dialect from the same constants).

``decay = exp(-ln 2 * max(now - last_accessed, 0) / half_life)``, in integer unix seconds.
Decay only orders results; it never deletes anything. It lies in (0, MAX_DECAY]: a keyword
search scores ``decay - bm25``, so a row's decay can move it by at most MAX_DECAY, the bound
every keyword shortcut reasons with.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.contract.models import KeywordScale, Noise
from agent_memory.contract.vocabulary import PINNED_TYPES

HALF_LIFE_SECS = 30 * 24 * 3600  # 2,592,000 s: PATTERN, ERROR, TODO
PINNED_HALF_LIFE_FACTOR = 6
PINNED_HALF_LIFE_SECS = PINNED_HALF_LIFE_FACTOR * HALF_LIFE_SECS  # 180 days
BASE_WEIGHT = 1.0
PINNED_BASE_WEIGHT = 2.0
MAX_DECAY = 1.0
# Hybrid search: each leg keeps min(LEG_FACTOR x limit, MAX_LEG) candidates.
LEG_FACTOR = 4
MAX_LEG = 800
# The fusion (FUSIONS below): FUSION names the default, AGENT_MEMORY_FUSION another, to
# compare (docs/retrieval.md): "rrf", the contract's reciprocal rank fusion; "linear",
# convex without the square; "dbsf", Qdrant's distribution-based score fusion; "model", for
# measurement only (bench/retrieval.py): the vector leg alone, by cosine, with no floor.
FUSION = "convex"
MODEL_ONLY = "model"
FUSION_ENV = "AGENT_MEMORY_FUSION"
RRF_K = 60
# convex: KEYWORD_WEIGHT x keyword evidence + (1 - KEYWORD_WEIGHT) x vector share. The
# evidence is the keyword share ** KEYWORD_EXPONENT, weighed by a ramp from nothing at the
# relevance floor's FLOOR_KEYWORD_SHARE to all of it at twice that: a keyword match too weak
# to be kept on its own (a question's one common word) never reorders what the model found,
# and memories that both legs found weakly never pass one that the model alone found first.
KEYWORD_WEIGHT = 0.5
KEYWORD_EXPONENT = 2
# What "unrelated" looks like to the model for this query: its cosine similarity to a sample
# of the stored vectors, SAMPLE_RUN consecutive ones from each of SAMPLE_RUNS spread ids.
SAMPLE_RUNS = 8
SAMPLE_RUN = 8
# The relevance floor of a hybrid page: a memory stays when the keyword leg scored at least
# FLOOR_KEYWORD_SHARE of its scale (a row holding every word of the query), or when the
# model puts it FLOOR_SIGMAS standard deviations above the query's similarity to unrelated
# texts (embedders/calibration.py; without them, within FLOOR_SHARE of the best match's
# margin over the sample's mean). The model's best match always stays: a question in other
# words, or a wordless one, still gets an answer.
FLOOR = True
FLOOR_KEYWORD_SHARE = 0.25
FLOOR_SHARE = 0.5
FLOOR_SIGMAS = 2.0
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


def sample_starts(low: int, high: int) -> list[int]:
    """SAMPLE_RUNS ids spread from ``low`` to ``high``: where each run of the sample starts."""
    step = max((high - low + 1) / SAMPLE_RUNS, 1)
    return sorted({low + int(step * run) for run in range(SAMPLE_RUNS)})


@dataclass(frozen=True)
class Fused:
    """A hybrid page, with why each memory is on it (``why``, by id) and how the page was
    made (``explain``): the fusion, the noise, the floor and how many it cut."""

    results: list[dict[str, Any]]
    why: dict[int, dict[str, Any]]
    explain: dict[str, Any]


def keyword_page(
    scored: list[tuple[dict[str, Any], float]], words: Sequence[str] | None = None
) -> Fused:
    """A keyword page, (memory, decay - bm25) best first, with why each memory is on it;
    ``words``: the words it was searched as (a plain-language query or the retry), else
    None (FTS5 syntax, or one word: the query as written)."""
    why = {
        memory["id"]: {
            "keyword": {"rank": rank, "bm25": score - memory["decay_score"]},
            "vector": None,
            "decay": memory["decay_score"],
            "score": score,
        }
        for rank, (memory, score) in enumerate(scored, start=1)
    }
    used = None if words is None else {"rows": None, "used": list(dict.fromkeys(words))}
    return Fused([memory for memory, _ in scored], why, {"score": "decay + bm25", "words": used})


def fusion() -> str:
    chosen = os.environ.get(FUSION_ENV, FUSION)
    return chosen if chosen in FUSIONS else FUSION


def fuse(
    keyword: list[tuple[int, float]],
    nearest: list[tuple[int, float]],
    noise: Noise | None,
    rows: dict[int, dict[str, Any]],
    limit: int,
    floor: bool | None = None,
    scale: KeywordScale | None = None,
    unrelated: Noise | None = None,
) -> Fused:
    """The hybrid page: each memory's fused score times its decay (once), best first, past
    the relevance floor (``floor``, FLOOR when None).

    ``keyword`` holds (id, -bm25) and ``nearest`` (id, cosine similarity), best first;
    ``scale``: what a row holding every word of the query would score, and which words the
    keyword leg matched on (query.bm25.scale; else its best score is the scale); ``noise``,
    the query's similarity to a sample of the store's vectors, the vector leg's scale;
    ``unrelated``, its similarity to texts it is not about (the embedder's), the floor under
    the model's matches; ``rows`` the rows that exist and pass the filters, with
    ``decay_score`` as of the query: an id missing from it (forgotten, or filtered out)
    drops out of both legs.
    """
    name = fusion()
    if name == MODEL_ONLY:  # measurement: what the model alone ranks, nothing cut
        keyword, floor = [], False
    keyword = [(i, s) for i, s in keyword if i in rows]
    nearest = [(i, s) for i, s in nearest if i in rows]
    legs = _Legs(keyword, nearest, noise, None if scale is None else scale.ideal, unrelated)
    why: dict[int, dict[str, Any]] = {}
    for memory_id in dict.fromkeys([i for i, _ in keyword] + [i for i, _ in nearest]):
        parts = legs.parts(memory_id)
        score = FUSIONS[name](legs, memory_id)
        decay = rows[memory_id]["decay_score"]
        why[memory_id] = {**parts, "fused": score, "decay": decay, "score": score * decay}
    floor = FLOOR if floor is None else floor
    kept = [i for i in why if not floor or legs.relevant(i)]
    best = sorted(kept, key=lambda i: (-why[i]["score"], i))[:limit]
    explain = {
        "fusion": name,
        "noise": None if noise is None else {"mean": noise.mean, "std": noise.std},
        "unrelated": None if unrelated is None else {"mean": unrelated.mean, "std": unrelated.std},
        "keyword_scale": legs.best_keyword,
        "words": None if scale is None else {"rows": scale.rows, "used": list(scale.used)},
        "floor": legs.floors,
        "below_floor": len(why) - len(kept),
    }
    return Fused([rows[i] for i in best], {i: why[i] for i in best}, explain)


class _Legs:
    """The two legs of one search, each score put on a 0-1 share of its scale: the keyword
    leg's ideal (or best) score, the best similarity's margin over the noise."""

    def __init__(
        self,
        keyword: list[tuple[int, float]],
        nearest: list[tuple[int, float]],
        noise: Noise | None,
        ideal: float | None,
        unrelated: Noise | None,
    ) -> None:
        self.keyword = {i: (rank, s) for rank, (i, s) in enumerate(keyword, start=1)}
        self.nearest = {i: (rank, s) for rank, (i, s) in enumerate(nearest, start=1)}
        self.best_keyword = ideal or (keyword[0][1] if keyword else 0.0)
        # What always stays: the model's best match, or with no vector among the candidates
        # (none passing the filters has one yet), the keyword leg's.
        self.best_id = nearest[0][0] if nearest else (keyword[0][0] if keyword else None)
        self.noise = noise
        self.unrelated = unrelated
        self.mean = noise.mean if noise is not None else min((s for _, s in nearest), default=0)
        self.margin = nearest[0][1] - self.mean if nearest else 0.0
        self.floors = self._floors()
        self._spreads: list[tuple[float, float]] | None = None

    def spreads(self) -> list[tuple[float, float]]:
        """Each leg's (mean - 3 sd, 6 sd) over its candidates, for dbsf (computed once)."""
        if self._spreads is None:
            self._spreads = []
            for leg in (self.keyword, self.nearest):
                scores = [score for _, score in leg.values()] or [0.0]
                mean = math.fsum(scores) / len(scores)
                sd = math.sqrt(math.fsum((x - mean) ** 2 for x in scores) / len(scores))
                self._spreads.append((mean - 3 * sd, 6 * sd))
        return self._spreads

    def keyword_share(self, memory_id: int) -> float:
        found = self.keyword.get(memory_id)
        if found is None or self.best_keyword <= 0:
            return 0.0
        return min(found[1] / self.best_keyword, 1.0)

    def vector_share(self, memory_id: int) -> float:
        found = self.nearest.get(memory_id)
        if found is None or self.margin <= 0:
            return 0.0
        return min(max((found[1] - self.mean) / self.margin, 0.0), 1.0)

    def _floors(self) -> dict[str, float | None]:
        """The least keyword score and similarity that pass the floor (None: no leg)."""
        similarity = None
        if self.unrelated is not None and self.nearest:
            similarity = self.unrelated.mean + FLOOR_SIGMAS * self.unrelated.std
        elif self.nearest:
            similarity = self.mean + FLOOR_SHARE * self.margin
        keyword = FLOOR_KEYWORD_SHARE * self.best_keyword if self.keyword else None
        return {"keyword": keyword, "similarity": similarity}

    def relevant(self, memory_id: int) -> bool:
        if memory_id == self.best_id:
            return True
        floor = self.floors
        found = self.keyword.get(memory_id)
        if found is not None and floor["keyword"] is not None and found[1] >= floor["keyword"]:
            return True
        near = self.nearest.get(memory_id)
        return (
            near is not None
            and floor["similarity"] is not None
            and (near[1] >= floor["similarity"])
        )

    def parts(self, memory_id: int) -> dict[str, Any]:
        found = self.keyword.get(memory_id)
        near = self.nearest.get(memory_id)
        keyword = None
        if found is not None:
            share = self.keyword_share(memory_id)
            keyword = {"rank": found[0], "bm25": found[1], "share": share}
        vector = None
        if near is not None:
            vector = {"rank": near[0], "similarity": near[1], "share": self.vector_share(memory_id)}
            if self.unrelated is not None and self.unrelated.std > 0:
                vector["sigmas"] = (near[1] - self.unrelated.mean) / self.unrelated.std
        return {"keyword": keyword, "vector": vector}


def keyword_evidence(share: float) -> float:
    """What a keyword share adds to the convex fusion (see KEYWORD_EXPONENT)."""
    ramp = min(max(share / FLOOR_KEYWORD_SHARE - 1.0, 0.0), 1.0)
    return ramp * share**KEYWORD_EXPONENT


def _convex(legs: _Legs, memory_id: int) -> float:
    keyword = keyword_evidence(legs.keyword_share(memory_id))
    return KEYWORD_WEIGHT * keyword + (1 - KEYWORD_WEIGHT) * legs.vector_share(memory_id)


def _rrf(legs: _Legs, memory_id: int) -> float:
    """Reciprocal rank fusion: the sum over the legs of 1 / (RRF_K + rank), ranks from 1."""
    ranks = [leg[memory_id][0] for leg in (legs.keyword, legs.nearest) if memory_id in leg]
    return math.fsum(1.0 / (RRF_K + rank) for rank in ranks)


def _linear(legs: _Legs, memory_id: int) -> float:
    """convex without the square: a weak keyword match counts as much as its share."""
    keyword = legs.keyword_share(memory_id)
    return KEYWORD_WEIGHT * keyword + (1 - KEYWORD_WEIGHT) * legs.vector_share(memory_id)


def _dbsf(legs: _Legs, memory_id: int) -> float:
    """Distribution-based score fusion (Qdrant's): each leg's score placed between its
    candidates' mean - 3 sd and mean + 3 sd, the two summed."""
    total = 0.0
    for leg, (low, width) in zip((legs.keyword, legs.nearest), legs.spreads(), strict=True):
        if memory_id in leg:
            total += 0.5 if width == 0 else min(max((leg[memory_id][1] - low) / width, 0.0), 1.0)
    return total


def _model(legs: _Legs, memory_id: int) -> float:
    """The cosine similarity alone (fuse leaves the keyword leg out for it)."""
    return legs.nearest[memory_id][1]


FUSIONS: dict[str, Callable[[_Legs, int], float]] = {
    "convex": _convex,
    "linear": _linear,
    "dbsf": _dbsf,
    "rrf": _rrf,
    MODEL_ONLY: _model,
}
