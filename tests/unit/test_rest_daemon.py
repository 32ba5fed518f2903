"""The REST daemon's HTTP server in this process, so a test can shorten its deadline: a
trickled request is cut off, an idle keep-alive connection is not, connections fit the
descriptor limit; on port 80 the Host without its port is the daemon's own."""

from __future__ import annotations

import socket
import threading
import time
from http.client import HTTPConnection

import pytest

from agent_memory.http import server as daemon
from agent_memory.http.rest import create_app
from tests.support.rest_daemon import CLIENT_TIMEOUT_SECS


@pytest.fixture
def in_process(service):
    """The daemon's server in this process, so a test can shorten its deadline."""
    servers = []

    def start(**tunables: float) -> daemon.DaemonServer:
        server = daemon.create_server(service, "127.0.0.1", 0, allow_remote=False, **tunables)
        servers.append(server)
        threading.Thread(target=server.run, daemon=True).start()
        return server

    yield start
    for server in servers:
        server.task_dispatcher.shutdown()
        server.close()


def test_a_trickled_request_is_cut_off_at_the_deadline(in_process):
    deadline = 1.0
    server = in_process(request_deadline=deadline)
    with socket.create_connection(("127.0.0.1", server.effective_port)) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /health HTTP/1.1\r\n")
        sock.settimeout(0.2)  # the pace of the trickle
        closed = False
        while not closed and time.monotonic() - started < CLIENT_TIMEOUT_SECS:
            try:
                sock.sendall(b"X-Slow: 1\r\n")
                closed = sock.recv(1) == b""
            except TimeoutError:
                continue
            except (ConnectionResetError, BrokenPipeError):
                closed = True
        elapsed = time.monotonic() - started
    assert closed, f"still open after {elapsed:.1f} s of trickling"
    assert deadline <= elapsed < deadline + 3 * daemon.CLEANUP_INTERVAL_SECS


def test_an_idle_keep_alive_connection_is_not_cut_by_the_deadline(in_process):
    server = in_process(request_deadline=0.5)
    conn = HTTPConnection("127.0.0.1", server.effective_port, timeout=CLIENT_TIMEOUT_SECS)
    conn.request("GET", "/health")
    assert conn.getresponse().read()
    conn.sock.settimeout(0.5 + 2 * daemon.CLEANUP_INTERVAL_SECS)
    with pytest.raises(TimeoutError):
        conn.sock.recv(1)  # idle past the deadline: nothing comes, the connection stays open
    conn.sock.settimeout(CLIENT_TIMEOUT_SECS)
    conn.request("GET", "/health")
    assert conn.getresponse().status == 200
    conn.close()


def test_connections_fit_the_descriptor_limit(monkeypatch):
    monkeypatch.setattr(daemon.resource, "getrlimit", lambda _: (256, 4096))  # macOS's default
    assert daemon.connection_limit() == (256 - daemon.RESERVED_FDS) // daemon.FDS_PER_CONNECTION
    monkeypatch.setattr(daemon.resource, "getrlimit", lambda _: (1_048_576, 1_048_576))
    assert daemon.connection_limit() == daemon.CONNECTION_LIMIT


@pytest.mark.parametrize(
    "host,origin",
    [
        ("127.0.0.1", None),
        ("127.0.0.1:80", None),
        ("localhost", "http://localhost"),
        ("127.0.0.1", "http://127.0.0.1"),
        ("127.0.0.1", "http://127.0.0.1:80"),
    ],
)
def test_port_80_is_also_named_without_its_port(service, host, origin):
    client = create_app(service, host="127.0.0.1", port=80).test_client()
    headers = {"Host": host} | ({"Origin": origin} if origin else {})
    assert client.get("/health", headers=headers).status_code == 200


@pytest.mark.parametrize(
    "port,host,origin",
    [
        (8080, "127.0.0.1", None),
        (8080, "127.0.0.1:8080", "http://127.0.0.1"),
        (80, "127.0.0.1:8080", None),
        (80, "127.0.0.1", "http://127.0.0.1:8080"),
        (80, "attacker.example", None),
    ],
)
def test_only_port_80_may_be_left_out(service, port, host, origin):
    client = create_app(service, host="127.0.0.1", port=port).test_client()
    headers = {"Host": host} | ({"Origin": origin} if origin else {})
    answer = client.get("/health", headers=headers)
    assert answer.status_code == 403 and answer.json["error"].startswith("forbidden: ")
