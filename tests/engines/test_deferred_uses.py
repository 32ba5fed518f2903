"""Uses of search results on both engines: two processes bumping the same memories add up,
and a use count saturates at the largest integer."""

from __future__ import annotations

import threading

import pytest

from agent_memory.contract.vocabulary import SQLITE_INT_MAX
from agent_memory.storage import open_store
from tests.support.stores import T0, new

pytest_plugins = ["tests.support.pg_fixtures"]


@pytest.fixture(params=["sqlite", "postgres"])
def store_engine(request) -> str:
    return request.param


@pytest.fixture
def two_stores(store_engine, request, tmp_path):
    if store_engine == "postgres":
        url = request.getfixturevalue("pg_url")
        opened = open_store(url), open_store(url)
    else:
        opened = open_store(tmp_path / "memory.db"), open_store(tmp_path / "memory.db")
    yield opened
    for store in opened:
        store.close()


def test_two_processes_bumping_the_same_memories_add_up(two_stores):
    """Two servers' writes overlap (in opposite orders): no deadlock, no use lost."""
    first, second = two_stores
    ids = [first.insert(new(f"used {i}"), None) for i in range(40)]
    rounds = 25

    def bumping(store, order):
        for r in range(rounds):
            store.bump({i: (2, T0 + r) for i in order})

    threads = [
        threading.Thread(target=bumping, args=(first, ids)),
        threading.Thread(target=bumping, args=(second, ids[::-1])),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for memory_id in ids:
        memory, _ = first.get(memory_id, 0)
        assert (memory["access_count"], memory["last_accessed"]) == (4 * rounds, T0 + rounds - 1)


def test_a_use_count_saturates_at_the_largest_integer(two_stores):
    store, _ = two_stores
    memory_id = store.insert(new("worn"), None)
    store.bump({memory_id: (SQLITE_INT_MAX - 2, T0)})
    store.bump({memory_id: (5, T0)})
    assert store.get(memory_id, 0)[0]["access_count"] == SQLITE_INT_MAX
