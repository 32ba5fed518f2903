"""The worker supervisor with real forked processes: a worker that fails before it serves
stops the daemon (exit status 1) instead of being started again and again."""

from __future__ import annotations

import logging
import signal

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
