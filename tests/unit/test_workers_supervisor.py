"""The worker supervisor (agent_memory.http.workers) on its own: the address is bound once, with
the same refusal as one process, and the least busy serving worker accepts."""

from __future__ import annotations

import socket

import pytest

from agent_memory.http import workers


def test_the_address_is_bound_once_and_a_taken_one_refused():
    sock = workers.listen("127.0.0.1", 0)
    try:
        port = sock.getsockname()[1]
        assert port != 0
        with pytest.raises(OSError):
            workers.listen("127.0.0.1", port)
        with socket.create_connection(("127.0.0.1", port)):
            pass  # it listens before any worker accepts: the connection waits in the backlog
    finally:
        sock.close()


def test_the_least_busy_serving_worker_accepts():
    balance = workers.Balance(3)
    assert balance.least_busy(1, 5)  # the others are not serving yet
    assert balance.least_busy(2, 2) and not balance.least_busy(1, 5)
    assert balance.least_busy(3, 2) and balance.least_busy(2, 2)  # a tie: both listen
    balance.set(2, workers.NOT_SERVING)  # died: nobody waits for it
    balance.set(3, workers.NOT_SERVING)
    assert balance.least_busy(1, 5)
