"""The worker supervisor (agent_memory.http.workers) on its own, with real forked processes: a
worker that fails before it serves stops the daemon (exit status 1) instead of being started
again and again; the address is bound once, with the same refusal as one process."""

from __future__ import annotations

import logging
import signal
import socket

import pytest

from agent_memory.http import workers


@pytest.fixture
def own_signals():
    """Supervisor.run sets SIGTERM and SIGINT handlers: put pytest's back."""
    saved = {signum: signal.getsignal(signum) for signum in workers.STOP_SIGNALS}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def test_a_worker_failing_before_it_serves_stops_the_daemon(own_signals, caplog):
    def fails(index: int, ready) -> int:
        return 3  # never ready: a start-up failure

    supervisor = workers.Supervisor(2, fails)
    with caplog.at_level(logging.ERROR, logger="agent_memory.http.workers"):
        assert supervisor.run() == 1
    assert not supervisor.workers
    assert "exited with status 3 before it served: stopping the daemon" in caplog.text


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
