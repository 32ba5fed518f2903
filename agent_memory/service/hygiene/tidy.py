"""``agent-memory tidy``: what a person may want to clean, and the merge of
near-duplicates, deterministic, with no model call.

The report lists, for a scope or for all:

- ``clusters``: near-duplicates (below), by the store-time hints' signal and
  threshold (service/hygiene/similar.py): the cosine of the stored vectors when search by meaning
  is on and the database's model has a measured threshold, else keyword overlap; ``signal``
  says which, and ``signal_note`` why not the cosine. Each names the member a merge keeps
  and those it would supersede, and why that one (``keep_reason``): it holds every
  informative word of the others (``holds_the_rest``), or ``keep`` named it (``named``).
  When neither, ``keep_reason`` is null: the member shown as kept is only the nearest to
  holding the rest, and the merge leaves the cluster alone. Each merged member lists the
  words of it the kept one lacks (``missing_words``), and every member its ``revision``;
- ``superseded``: memories another one supersedes (of the scope, for a scope: as its search
  counts them) that something still treats as current:
  no current memory replaces them (every memory replacing them has expired, or the chain of
  replacements ends in one that has, or turns in a circle: they are hidden from search with
  nothing in their place), or a current memory is still related to them (relates_to,
  caused_by), where it probably means their replacement;
- ``unused``: current memories not used in ``unused_days`` days (last_accessed, which a
  store sets and every use moves on), the longest unused first.

Expired memories (not swept yet) are gone as far as tidy goes. Only clusters are ever
written (``merge``): a cluster is merged in one transaction, its kept member superseding
the others and taking their tags, only when every member is still as the report showed it
(its revision).

A cluster is built around its newest member (created_at, then id): the memories, newest
first, each not in a cluster yet starts one, and takes every older memory near it that is
not in one yet. So each member is near that newest one itself, never only near another
member (a chain A~B~C with A and C far apart is not one cluster). A merge keeps the member
that holds the others' information: the one whose informative lexemes include every other
member's (``holding_member``). Merging supersedes the others, which leave search; so a member that
says something the kept one lacks (a word, a number) is never merged away unless a person
names the one to keep.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent_memory.contract.errors import InvalidArgument, InvalidType
from agent_memory.service import actor, redact, validate
from agent_memory.service.context import Context
from agent_memory.service.hygiene import similar
from agent_memory.storage.base import ChangedMemory, MissingMemory

if TYPE_CHECKING:
    from agent_memory.contract.models import Pin
    from agent_memory.storage.hygiene.tidy import TidyRead

ARGUMENTS = ("scope", "unused_days", "keep")
DAY_SECS = 86_400
# A memory not used in this many days is listed as unused, unless unused_days says otherwise.
DEFAULT_UNUSED_DAYS = 90
MAX_UNUSED_DAYS = 36_500
# The unused memories listed (all are counted): the longest unused first.
UNUSED_SHOWN = 100
# Link kinds by which a current memory may still point at a superseded one.
LIVE_KINDS = ("relates_to", "caused_by")
# The members ``keep`` may name at once (one per cluster).
MAX_KEEP = 1_000
# The words of a merged member that the kept one lacks, shown at most.
MISSING_WORDS_SHOWN = 20
# Why a cluster keeps the member it does (service/hygiene/py); None: no member holds the
# rest and none was named, so the merge leaves it alone.
HOLDS_THE_REST, NAMED = "holds_the_rest", "named"
KEEP_REASONS = (HOLDS_THE_REST, NAMED, None)


# -- clusters ---------------------------------------------------------------------------
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


def near_groups(
    newest_first: Sequence[int], near: Near
) -> list[tuple[int, list[tuple[int, float]]]]:
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


def holding_member(members: Sequence[int], words: Mapping[int, frozenset[str]]) -> int | None:
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


def report(service: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    """The dry run: what tidy finds, writing nothing (see the module)."""
    days = validate.integer(args, "unused_days", 1, MAX_UNUSED_DAYS)
    days = DEFAULT_UNUSED_DAYS if days is None else days
    scope = redact.filters(
        service.redact, validate.filters({"scope": validate.label(args, "scope")})
    ).scope
    named = _named(args)
    now = service.now()
    with service.storage("tidy"):
        read = service.db.tidy_read(scope, vectors=not service.embedding_off)
    live = {m["id"]: m for m in read.memories if _alive(m["expires_at"], now)}
    superseded_by = _superseders(read, now, scope)
    current = [m for m in live.values() if m["id"] not in superseded_by["all"]]
    signal, threshold, note = _signal(service, read.pin)
    found = _clusters(current, read, signal, threshold, named)
    answer: dict[str, Any] = {"scope": scope, "signal": signal, "threshold": threshold}
    if note:
        answer["signal_note"] = note
    answer["memories"] = len(current)
    answer["not_compared"] = found["not_compared"]
    answer["clusters"] = found["clusters"]
    answer["superseded"] = _superseded(live, read, superseded_by, now)
    answer["unused_days"] = days
    answer["unused"] = _unused(current, now - days * DAY_SECS)
    return answer


def _alive(expires_at: int | None, now: int) -> bool:
    return expires_at is None or expires_at > now


def _signal(service: Context, pin: Pin | None) -> tuple[str, float, str | None]:
    """("cosine" | "keyword", its threshold, why not the cosine)."""
    keyword = similar.KEYWORD_THRESHOLD
    if service.embedding_off:
        return "keyword", keyword, "search by meaning is off (--embedder none)"
    if pin is None:
        return "keyword", keyword, "the database holds no vectors yet"
    threshold = similar.COSINE_THRESHOLDS.get(similar.model_key(pin.model))
    if threshold is None:
        return "keyword", keyword, f"no cosine threshold is measured for {pin.model}"
    return "cosine", threshold, None


def _named(args: Mapping[str, Any]) -> frozenset[int]:
    """``keep``: the members to keep, one id or an array of them (one per cluster)."""
    value = args.get("keep")
    if value is None:
        return frozenset()
    if isinstance(value, list):
        if len(value) > MAX_KEEP:
            raise InvalidArgument(f"keep must name at most {MAX_KEEP} memories (got {len(value)})")
        named = {f"keep[{n}]": item for n, item in enumerate(value)}
    elif isinstance(value, int) and not isinstance(value, bool):
        named = {"keep": value}
    else:
        raise InvalidType(
            f"keep must be a memory id or an array of them (got {validate.shown(value)})"
        )
    return frozenset(validate.memory_id(named, name) for name in named)


def _member(memory: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": memory["id"],
        "type": memory["type"],
        "created_at": memory["created_at"],
        "tags": memory["tags"],
        "snippet": similar.snippet(memory["content"]),
        "revision": memory["revision"],
    }


def _clusters(
    current: list[dict[str, Any]],
    read: TidyRead,
    signal: str,
    threshold: float,
    named: frozenset[int],
) -> dict[str, Any]:
    """The clusters of ``current``, scope by scope, each with the member it keeps (named in
    ``named``, else the one holding the rest: service/hygiene/py); and how many memories
    could not be compared (no vector yet, with the cosine). A name that is no member of any
    cluster, or two names in one cluster, are refused."""
    out: list[dict[str, Any]] = []
    not_compared = 0
    for members in in_scopes(current).values():
        by_id = {m["id"]: m for m in members}
        if signal == "cosine":
            vectors = {i: read.vectors[i] for i in by_id if i in read.vectors}
            not_compared += len(by_id) - len(vectors)
            near = by_cosine(vectors, threshold)
        else:
            near = by_keywords({i: m["content"] for i, m in by_id.items()})
        newest = sorted(by_id, key=lambda i: (by_id[i]["created_at"], i), reverse=True)
        for first, merged in near_groups(newest, near):
            ids = sorted([first, *(m for m, _ in merged)], key=newest.index)
            out.append(
                _cluster(ids, by_id, named, near, read.vectors if signal == "cosine" else None)
            )
    out.sort(key=lambda c: (c["keep"]["created_at"], c["keep"]["id"]), reverse=True)
    kept = {c["keep"]["id"] for c in out if c["keep_reason"] == NAMED}
    unknown = sorted(named - kept)
    if unknown:
        raise InvalidArgument(
            f"keep names memory {unknown[0]}, which is in no cluster of this report: "
            "name a member of the cluster to keep"
        )
    return {"clusters": out, "not_compared": not_compared}


def _cluster(
    ids: list[int],
    by_id: dict[int, dict[str, Any]],
    named: frozenset[int],
    near: Near,
    vectors: dict[int, bytes] | None,
) -> dict[str, Any]:
    """One cluster of the report (``ids`` newest first): the member kept and why, the
    others with their similarity to it and the words of theirs it lacks, the tags after."""
    words = {i: similar.lexemes(by_id[i]["content"]) for i in ids}
    chosen = [i for i in ids if i in named]
    if len(chosen) > 1:
        raise InvalidArgument(
            f"keep names memories {chosen[0]} and {chosen[1]}, of one cluster: name one "
            "member to keep per cluster"
        )
    holder = holding_member(ids, words)
    if chosen:
        keep, reason = chosen[0], NAMED
    elif holder is not None:
        keep, reason = holder, HOLDS_THE_REST
    else:
        keep, reason = proposed(ids, words), None

    def similarity(other: int) -> float:
        if other in near.get(keep, {}):
            return near[keep][other]
        if vectors is not None:
            return cosine(vectors[keep], vectors[other])
        return similar.overlap(words[keep], words[other])

    merged = sorted(((m, similarity(m)) for m in ids if m != keep), key=lambda f: (-f[1], f[0]))
    tags = list(by_id[keep]["tags"])
    for other, _ in merged:
        tags = list(dict.fromkeys([*tags, *by_id[other]["tags"]]))
    return {
        "keep": _member(by_id[keep]),
        "keep_reason": reason,
        "merge": [
            {
                **_member(by_id[m]),
                "similarity": round(s, 3),
                "missing_words": _missing(by_id[m]["content"], words[keep]),
            }
            for m, s in merged
        ],
        "tags": tags[: max(validate.MAX_TAGS, len(by_id[keep]["tags"]))],
    }


def _missing(content: str, kept: frozenset[str]) -> list[str]:
    """The informative words of ``content`` (as written) whose lexeme ``kept`` lacks."""
    found = [word for lexeme, word in similar.written(content).items() if lexeme not in kept]
    return found[:MISSING_WORDS_SHOWN]


def _superseders(read: TidyRead, now: int, scope: str | None) -> dict[Any, Any]:
    """Who supersedes whom: "all" (superseded id: every superseding id, as search hides
    them) and "live" (only the superseding memories not expired). With ``scope``, only
    the memories of the scope (read.memories) supersede, as in its search."""
    every: dict[int, list[int]] = defaultdict(list)
    live: dict[int, list[int]] = defaultdict(list)
    ours = None if scope is None else {m["id"] for m in read.memories}
    for a, b, kind, a_expires, _ in read.links:
        if kind == "supersedes" and (ours is None or a in ours):
            every[b].append(a)
            if _alive(a_expires, now):
                live[b].append(a)
    return {"all": every, "live": live}


def _replacements(memory_id: int, by: dict[str, Any]) -> list[int]:
    """The current memories at the ends of ``memory_id``'s chains of live replacements."""
    found: set[int] = set()
    seen = {memory_id}
    todo = list(by["live"].get(memory_id, ()))
    while todo:
        other = todo.pop()
        if other in seen:
            continue
        seen.add(other)
        if other not in by["all"]:
            found.add(other)
        todo += by["live"].get(other, ())
    return sorted(found)


def _superseded(
    live: dict[int, dict[str, Any]], read: TidyRead, by: dict[str, Any], now: int
) -> list[dict[str, Any]]:
    """The superseded memories of the scope that something still treats as current."""
    related: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for a, b, kind, a_expires, b_expires in read.links:
        if kind not in LIVE_KINDS:
            continue
        if _alive(a_expires, now) and a not in by["all"]:
            related[b].append({"id": a, "kind": kind})
        if _alive(b_expires, now) and b not in by["all"]:
            related[a].append({"id": b, "kind": kind})
    out = []
    for memory_id in sorted(i for i in live if i in by["all"]):
        replacements = _replacements(memory_id, by)
        problems = [] if replacements else ["no_current_replacement"]
        if related.get(memory_id):
            problems.append("still_related")
        if problems:
            memory = live[memory_id]
            out.append(
                {
                    "id": memory_id,
                    "type": memory["type"],
                    "snippet": similar.snippet(memory["content"]),
                    "superseded_by": sorted(by["all"][memory_id]),
                    "current_replacements": replacements,
                    "related": related.get(memory_id, []),
                    "problems": problems,
                }
            )
    return out


def _unused(current: list[dict[str, Any]], since: int) -> dict[str, Any]:
    """The current memories last used at or before ``since``, the longest unused first."""
    found = sorted(
        (m for m in current if m["last_accessed"] <= since),
        key=lambda m: (m["last_accessed"], m["id"]),
    )
    shown = [
        {
            "id": m["id"],
            "type": m["type"],
            "scope": m["scope"],
            "last_accessed": m["last_accessed"],
            "access_count": int(m["access_count"]),
            "snippet": similar.snippet(m["content"]),
        }
        for m in found[:UNUSED_SHOWN]
    ]
    return {"count": len(found), "memories": shown}


def merge(
    service: Context, found: Sequence[Mapping[str, Any]], scope: str | None = None
) -> list[dict[str, Any]]:
    """Merge each cluster of a report of ``scope`` (None: of all; ``keep``, ``keep_reason``
    and ``merge``, as ``report`` lists them), one transaction each: the kept memory
    supersedes the others and takes their tags. A cluster is skipped whole, and says why,
    when no member holds the rest and none was named; when one of its memories is gone or
    expired since, or changed since (its revision); or when its kept memory is superseded
    since (as that report counts it)."""
    done = []
    for cluster in found:
        keep, others, revisions, reason = _cluster_parts(cluster)
        entry: dict[str, Any] = {"keep": keep, "merge": others}
        if reason is None:
            entry["skipped"] = (
                "no member holds every word of the others, and none was named to keep; "
                "nothing was written"
            )
            done.append(entry)
            continue
        try:
            with service.storage("tidy"):
                tags = service.db.merge(
                    keep,
                    others,
                    revisions,
                    service.now(),
                    actor.current(),
                    validate.MAX_TAGS,
                    scope,
                )
        except MissingMemory as exc:
            entry["skipped"] = f"memory {exc.memory_id} is gone; nothing was written"
        except ChangedMemory as exc:
            entry["skipped"] = (
                f"memory {exc.memory_id} changed since the report; nothing was written"
            )
        else:
            if tags is None:
                entry["skipped"] = f"memory {keep} is superseded itself; nothing was written"
            else:
                entry["tags"] = tags
        done.append(entry)
    return done


def _cluster_parts(
    cluster: Mapping[str, Any],
) -> tuple[int, list[int], dict[int, str], str | None]:
    """A cluster's kept id, the ids it merges, each member's revision and why that one is
    kept, checked."""
    try:
        members = [cluster["keep"], *cluster["merge"]]
        ids = [m["id"] for m in members]
        revisions = [m["revision"] for m in members]
        reason = cluster.get("keep_reason")
    except (KeyError, TypeError, AttributeError):
        raise InvalidArgument(
            "a cluster must name keep.id, keep.revision, merge[].id and merge[].revision"
        ) from None
    for n, memory_id in enumerate(ids):
        validate.memory_id({f"cluster[{n}]": memory_id}, f"cluster[{n}]")
    keep, others = ids[0], ids[1:]
    if not others or keep in others:
        raise InvalidArgument(f"a cluster must merge other memories into {keep}")
    if not all(isinstance(r, str) for r in revisions) or reason not in KEEP_REASONS:
        raise InvalidArgument(f"the cluster of {keep} is not one a tidy report gave")
    return keep, others, dict(zip(ids, revisions, strict=True)), reason
