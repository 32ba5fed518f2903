"""Near-duplicate hints at store time: a store still stores, and its answer names
up to MAX_SIMILAR memories of the same scope that say nearly the same, so that the agent can
update or supersede one of them instead of keeping two copies.

Two signals, and the answer says which one was used:

- ``cosine``: with a vector of the new memory, the cosine similarity of the stored vectors
  of the same model (the nearest ones, in the vector index the store already has);
- ``keyword``: without one, the share of the shorter memory's informative lexemes that the
  other memory holds (FTS5's porter lexemes, STOP_WORDS left out).

The thresholds are chosen on the labelled set tests/support/near_duplicate_set.py
(bench/near_duplicates.py; docs/near-duplicates.md): a false hint costs the agent a
wrong suggestion, never a memory, but it must stay rare.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from agent_memory.contract.errors import StorageFault

if TYPE_CHECKING:
    from agent_memory.contract.models import Embedding
    from agent_memory.storage.base import Store
    from agent_memory.storage.hygiene.near import NearWords

log = logging.getLogger(__name__)

# At most this many similar memories per store answer, and this much of each one's text.
MAX_SIMILAR = 3
SNIPPET_CHARS = 120
# Cosine similarity of passage vectors at or above which two memories are near duplicates,
# per model (an unmeasured model gets no cosine hints: its scale is unknown, and a
# threshold taken from another model would hint at random).
COSINE_THRESHOLDS = {"multilingual-e5-small-q4": 0.94}
# Nearest memories read per store, among which the hints are chosen: more than MAX_SIMILAR,
# since a hint must share the scope and pass the threshold.
CANDIDATES = 10
# Keyword signal: the share of the shorter memory's informative lexemes found in the other,
# and the fewest informative lexemes a memory needs for the share to mean anything.
KEYWORD_THRESHOLD = 0.85
KEYWORD_MIN_LEXEMES = 3
# Function words that say nothing about what a memory is about (English; lower case).
_STOP_WORDS = (
    "a an and are as at be because been but by can do does for from has have if in into is "
    "it its no not of on or our so than that the their them then there these they this to "
    "was we were what when where which while who will with would you your"
)
STOP_WORDS = frozenset(_STOP_WORDS.split())
# Distinct tokens whose informative lexeme is kept; and the lexemes of this many texts of at
# most LEXEME_CACHE_CHARS (the same memories are candidates of many stores: a few MiB at
# most).
INFORMATIVE_CACHE_TOKENS = 65_536
LEXEME_CACHE_TEXTS = 2_048
LEXEME_CACHE_CHARS = 1_000
# What redaction puts in place of a secret (service/redact/__init__.py).
REDACTION_MARKER = re.compile(r"\[redacted:[^\]]*\]")


def model_key(model: str) -> str:
    """A pinned model's name without its engine's version (``name@engine-version``)."""
    return model.split("@", 1)[0]


def lexemes(text: str) -> frozenset[str]:
    """The informative lexemes of ``text``: FTS5's porter lexemes of its tokens, without
    STOP_WORDS and without the markers of redacted secrets (every memory with a secret of
    one kind has the same marker; it says nothing about what the memory is about)."""
    return _short_lexemes(text) if len(text) <= LEXEME_CACHE_CHARS else _lexemes(text)


@functools.lru_cache(maxsize=LEXEME_CACHE_TEXTS)
def _short_lexemes(text: str) -> frozenset[str]:
    return _lexemes(text)


def _lexemes(text: str) -> frozenset[str]:
    from agent_memory.query.lexemes import tokens

    if "[redacted:" in text:
        text = REDACTION_MARKER.sub(" ", text)
    found = set(map(_informative, tokens(text)))
    found.discard(None)
    return frozenset(found)  # type: ignore[arg-type]


@functools.lru_cache(maxsize=INFORMATIVE_CACHE_TOKENS)
def _informative(token: str) -> str | None:
    """A token's lexeme, None for a stop word (cached: the check reads every token of each
    of its candidates, and most repeat)."""
    from agent_memory.query.lexemes import fold, lexeme

    return None if fold(token) in STOP_WORDS else lexeme(token)


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """The share of the smaller set found in the other; 0 when either is too small."""
    if min(len(a), len(b)) < KEYWORD_MIN_LEXEMES:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def keyword_overlap(a: str, b: str) -> float:
    return overlap(lexemes(a), lexemes(b))


def snippet(content: str) -> str:
    """The start of a memory's text, on one line."""
    flat = " ".join(content.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 3].rstrip() + "..."


def hint(memory_id: int, similarity: float, content: str) -> dict[str, Any]:
    return {"id": memory_id, "similarity": round(similarity, 3), "snippet": snippet(content)}


def by_keywords(content: str, candidates: Iterable[tuple[int, str]]) -> list[dict[str, Any]]:
    """The candidates (id, content) whose keyword overlap with ``content`` reaches
    KEYWORD_THRESHOLD, the most similar first (ties: the lower id), at most MAX_SIMILAR."""
    mine = lexemes(content)
    scored = [(overlap(mine, lexemes(text)), i, text) for i, text in candidates]
    kept = sorted((s, i, t) for s, i, t in scored if s >= KEYWORD_THRESHOLD)
    kept.sort(key=lambda found: (-found[0], found[1]))
    return [hint(i, s, t) for s, i, t in kept[:MAX_SIMILAR]]


def written(content: str) -> dict[str, str]:
    """Each informative lexeme of ``content`` (as ``lexemes`` has them) and its word as
    written, the first seen: how a person is shown a lexeme."""
    from agent_memory.query.lexemes import fold, lexeme, tokens

    words: dict[str, str] = {}
    for token in tokens(REDACTION_MARKER.sub(" ", content)):
        if fold(token) not in STOP_WORDS:
            words.setdefault(lexeme(token), token)
    return words


def _near_words(content: str) -> NearWords | None:
    """One word per informative lexeme of ``content`` (as written, first seen), with the
    thresholds: what the store reads the keyword signal's candidates by (storage.near).
    None when it has none."""
    from agent_memory.storage.hygiene.near import NearWords

    words = written(content)
    if not words:
        return None
    return NearWords(tuple(words.values()), KEYWORD_THRESHOLD, KEYWORD_MIN_LEXEMES)


def find(
    store: Store,
    content: str,
    scope: str | None,
    embedding: Embedding | None,
    now: int,
) -> dict[str, Any]:
    """What a store's answer gains: ``similar`` (up to MAX_SIMILAR hints, the most similar
    first) and ``similar_by`` (the signal: "cosine" or "keyword"), or nothing when no
    memory is near. The cosine is used when the store is pinned to the model of
    ``embedding`` and that model's threshold is measured; else keyword overlap. A read
    before the write: no lock is held. A storage fault loses the hints, never the store."""
    threshold = None if embedding is None else COSINE_THRESHOLDS.get(model_key(embedding.pin.model))
    try:
        signal, found = store.similar_candidates(
            embedding if threshold is not None else None,
            lambda: _near_words(content),
            scope,
            now,
            CANDIDATES,
            at_least=threshold,
        )
    except StorageFault as exc:
        log.error("store: could not look for similar memories: %s", exc.detail)
        return {}
    if signal == "cosine":
        assert threshold is not None
        kept = [(s, i, t) for i, s, t in found if s is not None and s >= threshold]
        hints = [hint(i, s, t) for s, i, t in kept[:MAX_SIMILAR]]
    else:
        hints = by_keywords(content, [(i, t) for i, _, t in found])
    return {"similar": hints, "similar_by": signal} if hints else {}


def stored(
    memory_id: int, duplicate: bool, redacted: list[str], hints: dict[str, Any]
) -> dict[str, Any]:
    """memory_store's answer: ``{"id": N}``; ``duplicate_of`` (the same id, named again so
    that an agent sees nothing new was made) when the content was already stored (decisions,
    "Content"); the kinds of secret ``redacted`` when any was; and the hints, unless the
    memory it names is one of them (an exact duplicate that collapsed onto it)."""
    answer: dict[str, Any] = {"id": memory_id}
    if duplicate:
        answer["duplicate_of"] = memory_id
    if redacted:
        answer["redacted"] = redacted
    if not hints:
        return answer
    similar = [h for h in hints["similar"] if h["id"] != answer["id"]]
    return {**answer, **hints, "similar": similar} if similar else answer
