"""Clusters of near-duplicates for ``agent-memory tidy`` (service/hygiene/tidy.py), with the signal
and
thresholds of the store-time hints (service/hygiene/similar.py): the cosine of the stored vectors,
or the keyword overlap of the memories' informative lexemes; and which member a merge keeps.

A cluster is built around its newest member (created_at, then id): the memories, newest
first, each not in a cluster yet starts one, and takes every older memory near it that is
not in one yet. So each member is near that newest one itself, never only near another
member (a chain A~B~C with A and C far apart is not one cluster).

A merge keeps the member that holds the others' information: the one whose informative
lexemes include every other member's (``holder``). Merging supersedes the others, which
leave search; so a member that says something the kept one lacks (a word, a number) is
never merged away unless a person names the one to keep.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from agent_memory.service.hygiene import similar

# Rows of the similarity matrix computed at once (each block is BLOCK_ROWS x the scope).
BLOCK_ROWS = 512

# For each memory, the memories near it and their similarity.
Near = dict[int, dict[int, float]]


def _joined(near: Near, a: int, b: int, score: float) -> None:
    near.setdefault(a, {})[b] = score
    near.setdefault(b, {})[a] = score


def by_cosine(vectors: dict[int, bytes], threshold: float) -> Near:
    """The pairs of ``vectors`` (id: float32 bytes) whose cosine reaches ``threshold``."""
    import numpy as np

    near: Near = {}
    if len(vectors) < 2:
        return near
    ids = list(vectors)
    matrix = np.frombuffer(b"".join(vectors[i] for i in ids), dtype="<f4")
    matrix = matrix.reshape(len(ids), -1).astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = matrix / np.where(norms == 0, 1, norms)  # a zero vector is near nothing
    for start in range(0, len(ids), BLOCK_ROWS):
        block = matrix[start : start + BLOCK_ROWS] @ matrix[start:].T
        rows, cols = np.nonzero(np.triu(block, 1) >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            _joined(near, ids[start + r], ids[start + c], float(block[r, c]))
    return near


def cosine(a: bytes, b: bytes) -> float:
    """The cosine of two stored vectors (float32 bytes); 0 for a zero vector."""
    import numpy as np

    x, y = np.frombuffer(a, dtype="<f4"), np.frombuffer(b, dtype="<f4")
    norms = float(np.linalg.norm(x)) * float(np.linalg.norm(y))
    return float(np.dot(x, y)) / norms if norms else 0.0


def by_keywords(contents: dict[int, str]) -> Near:
    """The pairs of ``contents`` whose keyword overlap (similar.overlap) reaches
    similar.KEYWORD_THRESHOLD. Without comparing every pair: a pair whose overlap reaches
    the threshold shares, with the smaller memory's lexemes taken rarest first, one of its
    first n - ceil(threshold x n) + 1 (prefix filtering); only those are looked up."""
    sets = {i: similar.lexemes(t) for i, t in contents.items()}
    sets = {i: s for i, s in sets.items() if len(s) >= similar.KEYWORD_MIN_LEXEMES}
    frequency = Counter(lexeme for s in sets.values() for lexeme in s)
    postings: dict[str, list[int]] = defaultdict(list)
    for memory_id, lexemes in sets.items():
        for lexeme in lexemes:
            postings[lexeme].append(memory_id)
    near: Near = {}
    for memory_id, lexemes in sets.items():
        size = len(lexemes)
        needed = math.ceil(similar.KEYWORD_THRESHOLD * size - 1e-9)
        rarest = sorted(lexemes, key=lambda x: (frequency[x], x))[: size - needed + 1]
        seen: set[int] = set()
        for lexeme in rarest:
            for other in postings[lexeme]:
                if other in seen or not _larger(sets[other], other, size, memory_id):
                    continue
                seen.add(other)
                score = similar.overlap(lexemes, sets[other])
                if score >= similar.KEYWORD_THRESHOLD:
                    _joined(near, memory_id, other, score)
    return near


def _larger(other: frozenset[str], other_id: int, size: int, memory_id: int) -> bool:
    """Whether ``other`` is the larger of the pair (ties: the higher id), so that each pair
    is looked up once, from its smaller memory."""
    return len(other) > size or (len(other) == size and other_id > memory_id)


def clusters(newest_first: Sequence[int], near: Near) -> list[tuple[int, list[tuple[int, float]]]]:
    """(kept id, [(member id, its similarity to the kept one)], the most similar first) for
    each cluster, the newest kept one first (see the module's rule)."""
    taken: set[int] = set()
    out = []
    for memory_id in newest_first:
        if memory_id in taken or memory_id not in near:
            continue
        members = [(m, s) for m, s in near[memory_id].items() if m not in taken]
        if not members:
            continue
        members.sort(key=lambda found: (-found[1], found[0]))
        taken.add(memory_id)
        taken.update(m for m, _ in members)
        out.append((memory_id, members))
    return out


def in_scopes(memories: Sequence[dict[str, Any]]) -> dict[str | None, list[dict[str, Any]]]:
    """The memories by scope (near-duplicates are looked for within a scope only, as the
    store-time hints are)."""
    out: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    for memory in memories:
        out[memory["scope"]].append(memory)
    return out


def holder(members: Sequence[int], words: Mapping[int, frozenset[str]]) -> int | None:
    """The member whose informative lexemes (``words``) include every other member's, None
    when no member holds the rest. Among several (they then hold the same lexemes), the
    first of ``members``: given newest first, the newest wording."""
    for memory_id in members:
        if all(words[other] <= words[memory_id] for other in members if other != memory_id):
            return memory_id
    return None


def proposed(members: Sequence[int], words: Mapping[int, frozenset[str]]) -> int:
    """The member that comes nearest to holding the rest, for a cluster no member holds:
    the one holding the most other members whole, then the one with the most lexemes."""

    def held(memory_id: int) -> int:
        return sum(words[other] <= words[memory_id] for other in members if other != memory_id)

    return max(members, key=lambda i: (held(i), len(words[i])))
