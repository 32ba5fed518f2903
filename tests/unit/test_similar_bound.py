"""The keyword signal's candidate bound (storage/hygiene/near.py): every stored memory at least as
long as the new one that reaches the threshold is read, and every one holding a rare word
of it, whatever the lengths; checked against brute force."""

from __future__ import annotations

import random

import pytest

from agent_memory.service.core import MemoryService
from agent_memory.service.hygiene import similar
from agent_memory.storage import open_store
from agent_memory.storage.hygiene import near
from agent_memory.storage.hygiene.near import NearWords, need, plan


def holds(planned: near.NearPlan, stored: set[str]) -> bool:
    return any(w in stored for w in planned.any_of) or any(
        all(w in stored for w in words) for words in planned.all_of
    )


def test_need_is_the_fewest_shared_lexemes_that_reach_the_threshold():
    for size in range(1, 60):
        c = need(size, 0.85)
        assert c / size >= 0.85 and (c == 0 or (c - 1) / size < 0.85)
    assert [need(s, 0.85) for s in (3, 6, 7, 12, 13, 20)] == [3, 6, 6, 11, 12, 17]


@pytest.mark.parametrize("seed", range(6))
def test_the_plan_reads_every_near_duplicate_the_bound_promises(seed):
    """Random memories over a small vocabulary with random row counts: a stored memory that
    reaches the threshold is read when it is at least as long, or holds a rare word."""
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(40)]
    checked = 0
    for _ in range(300):
        mine = rng.sample(vocabulary, rng.randint(3, 24))
        counts = [rng.choice([0, 5, 100, 1000, 10_000]) for _ in mine]
        planned = plan(NearWords(tuple(mine), 0.85, 3), counts)
        assert planned is not None
        rare = {w for w, n in zip(mine, counts, strict=True) if n < near.NEAR_RARE_ROWS}
        for _ in range(30):
            kept = rng.sample(mine, max(1, len(mine) - rng.randint(0, 4)))
            stored = set(kept + rng.sample(vocabulary, rng.randint(0, 6)))
            if similar.overlap(frozenset(mine), frozenset(stored)) < 0.85:
                continue
            if len(stored) >= len(mine) or stored & rare:
                checked += 1
                assert holds(planned, stored), (mine, counts, stored, planned)
    assert checked > 100


def test_conjunctions_of_the_rarest_other_words():
    words = tuple(f"w{i}" for i in range(12))  # need 11 of 12: a longer row misses one
    planned = plan(asked(words), [1000 - i for i in range(12)])
    assert planned is not None and planned.any_of == ()
    rarest = ["w8", "w9", "w10", "w11"]  # one missed: three of the four rarest held
    assert set(planned.all_of) == {tuple(w for w in rarest if w != gone) for gone in rarest}
    planned = plan(asked(words), [0, 5] + [1000] * 10)  # two rare: any of them
    assert planned == near.NearPlan(("w0", "w1"), ())
    planned = plan(asked(words), [0] + [1000] * 11)  # one rare, none missed
    assert planned is not None and planned.any_of == ("w0",)
    assert planned.all_of == (("w1", "w2", "w3"),)
    assert plan(asked(("a", "b")), [0, 0]) is None


def asked(words: tuple[str, ...]) -> NearWords:
    return NearWords(words, 0.85, 3)


def test_a_narrower_plan_asks_more_words_of_each_conjunction():
    words = tuple(f"w{i}" for i in range(16))  # need 14 of 16: two misses
    counts = [100 + i for i in range(16)]
    first = plan(asked(words), counts)
    assert first is not None and {len(c) for c in first.all_of} == {near.NEAR_HOLD}
    second = near.narrower(asked(words), counts, first)
    assert second is not None and {len(c) for c in second.all_of} == {2 * near.NEAR_HOLD}
    assert len(second.all_of) <= near.NEAR_MAX_CONJUNCTIONS
    assert near.narrower(asked(words), counts, near.NearPlan(("w0",), ())) is None
    longer = set(words[:2]) | set(words[4:]) | {"x"}  # misses w2, w3: still read
    assert holds(second, longer)


def test_sqlite_counts_rare_words_exactly_and_orders_the_common_by_how_common(tmp_path):
    from agent_memory.storage.sqlite import near as sqlite_near

    svc = MemoryService(open_store(tmp_path / "memory.db"))
    try:
        for k in range(300):
            words = ["everywhere", f"filler{k}"]
            words += ["halfway"] * (k % 2 == 0) + ["tenth"] * (k % 10 == 0)
            words += ["seldom"] * (k < 7)
            svc.store({"content": " ".join(words), "type": "PATTERN"})
        with svc.db._read() as conn:
            found = sqlite_near.counts(
                conn, ["seldom", "nowhere", "everywhere", "halfway", "tenth"]
            )
    finally:
        svc.close()
    seldom, nowhere, everywhere, halfway, tenth = found
    assert (seldom, nowhere) == (7, 0)  # rare: exact
    assert everywhere > halfway > near.NEAR_RARE_ROWS  # common: ordered, 300 / 150 rows
    assert tenth == 30  # 30 rows: still rare
