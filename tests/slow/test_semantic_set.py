"""The semantic set's own invariant (keyword search cannot find a paraphrase's target) and
what the local model makes of it (each target in the top 3 for its paraphrase).

The invariant is proved with FTS5 itself, configured as the memories table is, so no
stemmer of ours can disagree with the one the search runs.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.embedders.local import LocalModel
from tests.support.local_model import needs_model
from tests.support.semantic_set import (
    DISTRACTORS,
    EXACT,
    EXACT_TARGETS,
    MEMORIES,
    PARAPHRASES,
    TARGETS,
    TOP3_FLOOR,
    TOP10_FLOOR,
    TYPES,
)

TOKENIZER = "porter unicode61 remove_diacritics 2"  # migrations/versions/0001_initial.py
RRF_K = 60  # service.RRF_K
TOP = 3

ROWID = {m.key: i + 1 for i, m in enumerate(MEMORIES)}


@pytest.fixture(scope="module")
def fts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    """The memories in an FTS5 table of the project's tokenizer, on a temp file."""
    path = Path(tmp_path_factory.mktemp("semantic")) / "set.db"
    conn = sqlite3.connect(path)
    conn.execute(f"CREATE VIRTUAL TABLE mem USING fts5(content, tokenize = '{TOKENIZER}')")
    conn.executemany(
        "INSERT INTO mem (rowid, content) VALUES (?, ?)",
        [(ROWID[m.key], m.content) for m in MEMORIES],
    )
    conn.commit()
    yield conn
    conn.close()


def stemmed(conn: sqlite3.Connection, text: str) -> set[str]:
    """The terms FTS5 indexes for ``text`` (stemmed, case-folded, diacritics removed)."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS probe USING fts5(t, tokenize = 'porter "
        "unicode61 remove_diacritics 2')"
    )
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS probe_v USING fts5vocab(probe, 'row')")
    conn.execute("DELETE FROM probe")
    conn.execute("INSERT INTO probe (t) VALUES (?)", (text,))
    return {row[0] for row in conn.execute("SELECT term FROM probe_v")}


def test_set_shape() -> None:
    """Five targets per type, one paraphrase each, about as many distractors, unique keys."""
    assert Counter(m.type for m in TARGETS) == dict.fromkeys(TYPES, 5)
    assert sorted(q.target for q in PARAPHRASES) == sorted(m.key for m in TARGETS)
    assert len(DISTRACTORS) >= 30
    assert {m.type for m in MEMORIES} <= set(TYPES)
    assert len({m.key for m in MEMORIES}) == len(MEMORIES)
    assert len({m.content for m in MEMORIES}) == len(MEMORIES)
    assert {q.target for q in EXACT} == {m.key for m in EXACT_TARGETS}


def test_no_paraphrase_shares_a_stemmed_word_with_its_target(fts: sqlite3.Connection) -> None:
    content = {m.key: m.content for m in MEMORIES}
    shared = {
        q.query: sorted(stemmed(fts, q.query) & stemmed(fts, content[q.target]))
        for q in PARAPHRASES
    }
    assert {q: words for q, words in shared.items() if words} == {}


def test_keyword_search_finds_none_of_the_targets(fts: sqlite3.Connection) -> None:
    """The service's fallback for a plain question (its words quoted and OR-ed) finds other
    memories for most paraphrases, never the target."""
    found_any = 0
    for q in PARAPHRASES:
        match = " OR ".join(f'"{word}"' for word in re.findall(r"\w+", q.query))
        assert match is not None
        rows = {r[0] for r in fts.execute("SELECT rowid FROM mem WHERE mem MATCH ?", (match,))}
        assert ROWID[q.target] not in rows, q.query
        found_any += bool(rows)
    assert found_any >= len(PARAPHRASES) // 2  # the distractors are real keyword neighbours


def test_exact_terms_are_found_by_keyword_first(fts: sqlite3.Connection) -> None:
    for q in EXACT:
        rows = [
            r[0]
            for r in fts.execute(
                "SELECT rowid FROM mem WHERE mem MATCH ? ORDER BY bm25(mem)", (q.query,)
            )
        ]
        assert rows == [ROWID[q.target]], q.query


def ranks_under_local_model() -> tuple[dict[str, int], dict[str, int]]:
    """Rank (1 = best) of each paraphrase's target, and of each exact-term target, by cosine
    among all memories."""

    model = LocalModel()
    docs = model.encode_array([m.content for m in MEMORIES], query=False)
    keys = [m.key for m in MEMORIES]

    def rank(query: str, target: str) -> int:
        sims = docs @ model.encode_array([query], query=True)[0]
        return int((sims > sims[keys.index(target)]).sum()) + 1

    return (
        {q.query: rank(q.query, q.target) for q in PARAPHRASES},
        {q.query: rank(q.query, q.target) for q in EXACT},
    )


@needs_model
def test_local_model_ranks_most_targets_near_the_top() -> None:
    """Meaning alone, no shared word, 64 memories: where the local model puts each target.

    The goal was every target in the top 3. It is not met: multilingual-e5-small (4-bit)
    puts 17 of 30 there, 26 of 30 in the top 10, median rank 3 (``-s`` prints the ranks);
    the misses lose to near-topic distractors. The first draft placed 12 of 30 in the top 3;
    its questions that read unnaturally, or that a distractor answered as well, were rewritten
    once, and the set was then left as it stands. The floors hold that line (a little under
    it, for other CPUs' rounding), so a model or prefix change that loses meaning fails here.
    """
    import statistics

    paraphrase_ranks, _ = ranks_under_local_model()
    for query, r in paraphrase_ranks.items():
        print(f"rank {r:2d}  {query}")
    ranks = list(paraphrase_ranks.values())
    top3 = sum(r <= TOP for r in ranks)
    top10 = sum(r <= 10 for r in ranks)
    print(
        f"top 3: {top3}/{len(ranks)}, top 10: {top10}/{len(ranks)}, "
        f"median rank {statistics.median(ranks)}"
    )
    assert top3 >= TOP3_FLOOR
    assert top10 >= TOP10_FLOOR
    assert statistics.median(ranks) <= TOP + 1


@needs_model
def test_fused_ranking_puts_exact_terms_first(fts: sqlite3.Connection) -> None:
    """RRF of the keyword leg (one hit) and the vector leg: the exact match comes first
    whatever rank the vector leg gives it."""
    import numpy as np

    model = LocalModel()
    docs = model.encode_array([m.content for m in MEMORIES], query=False)
    for q in EXACT:
        keyword = [
            r[0]
            for r in fts.execute(
                "SELECT rowid FROM mem WHERE mem MATCH ? ORDER BY bm25(mem)", (q.query,)
            )
        ]
        sims = docs @ model.encode_array([q.query], query=True)[0]
        vector = [int(i) + 1 for i in np.argsort(-sims, kind="stable")]
        fused: Counter[int] = Counter()
        for ranking in (keyword, vector):
            for r, rowid in enumerate(ranking, start=1):
                fused[rowid] += 1.0 / (RRF_K + r)
        print(f"{q.query}: vector rank {vector.index(ROWID[q.target]) + 1}, fused rank 1")
        assert fused.most_common(1)[0][0] == ROWID[q.target], q.query
