"""The REST daemon's HTTP server against hostile clients.

Raw sockets against the real ``agent-memory serve-rest``: a request the daemon would refuse
is refused on its headers, before its body is read; slow clients cannot lock the others
out; on port 80 the Host without its port is the daemon's own. Every refusal, waitress's
own included, is the JSON ``{"error": ...}`` body of every other answer."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket

import pytest
import requests

from agent_memory.http import rest
from agent_memory.http import server as daemon
from agent_memory.service.validate import DEFAULT_MAX_CONTENT_BYTES
from tests.support.rest_daemon import CLIENT_TIMEOUT_SECS, RestDaemon
from tests.support.terminal import am

# Under waitress's default 1 GiB limit, so the old daemon waited for all of it.
HUGE = 1_000_000_000
LIMIT = rest.max_body_bytes(DEFAULT_MAX_CONTENT_BYTES)
# More than waitress's default connection_limit (100), which locked the daemon.
SLOW_CLIENTS = 120
HEALTH = "GET /health HTTP/1.1"


def request(*headers: str, start: str = "POST /api/memories HTTP/1.1") -> bytes:
    return ("\r\n".join([start, *headers]) + "\r\n\r\n").encode("latin-1")


def read_until_closed(sock: socket.socket) -> bytes:
    """All the server sends until it closes (a reset, when it left bytes of ours unread)."""
    chunks = []
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def exchange(port: int, data: bytes) -> tuple[str, dict[str, str], bytes]:
    """Send ``data`` on a new connection and read the answer until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=CLIENT_TIMEOUT_SECS) as sock:
        sock.sendall(data)
        answer = read_until_closed(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    fields = dict(line.split(": ", 1) for line in lines)
    return status, {name.lower(): value for name, value in fields.items()}, body


def assert_json_error(answer: tuple[str, dict[str, str], bytes], status: str, error: str):
    line, headers, body = answer  # HTTP/1.0 for a 431: waitress parses no request line then
    assert (line.split(" ", 1)[1], headers["content-type"], json.loads(body)) == (
        status,
        "application/json",
        {"error": error},
    )
    assert headers["connection"] == "close"


@pytest.mark.parametrize(
    "headers,status,error",
    [
        (
            ["Host: attacker.example:{port}"],
            "403 Forbidden",
            "forbidden: Host 'attacker.example:{port}' is not this daemon's address",
        ),
        (
            ["Host: 127.0.0.1:{port}", "Origin: http://attacker.example"],
            "403 Forbidden",
            "forbidden: cross-site request from Origin 'http://attacker.example'",
        ),
        (  # no "100 Continue" invites the body first
            ["Host: attacker.example:{port}", "Expect: 100-continue"],
            "403 Forbidden",
            "forbidden: Host 'attacker.example:{port}' is not this daemon's address",
        ),
        (
            ["Host: 127.0.0.1:{port}"],
            "413 Request Entity Too Large",
            f"request entity too large: Content-Length {HUGE} is more than the {LIMIT} bytes allowed",
        ),
    ],
    ids=["foreign Host", "foreign Origin", "Expect: 100-continue", "over the limit"],
)
def test_refused_on_its_headers_before_the_body_is_read(db_path, headers, status, error):
    with RestDaemon(db_path) as server:
        head = request(
            *(h.format(port=server.port) for h in headers),
            "Content-Type: application/json",
            f"Content-Length: {HUGE}",
        )
        answer = exchange(server.port, head + b'{"content": "only the first bytes')
        assert_json_error(answer, status, error.format(port=server.port))
        assert server.request("GET", "/api/memories").json() == []
        assert server.stop() == 0


def test_a_chunked_body_is_cut_off_at_the_limit(db_path):
    with RestDaemon(db_path) as server:
        head = request(f"Host: 127.0.0.1:{server.port}", "Transfer-Encoding: chunked")
        chunk = f"{HUGE:x}\r\n".encode() + b"x" * LIMIT  # one chunk, never finished
        answer = exchange(server.port, head + chunk)
        assert_json_error(
            answer,
            "413 Request Entity Too Large",
            f"request entity too large: exceeds max_body of {LIMIT + 1}",
        )
        assert server.stop() == 0


@pytest.mark.parametrize(
    "headers,status,error",
    [
        (["Content-Length: ten"], "400 Bad Request", "bad request: Content-Length is invalid"),
        (
            ["Transfer-Encoding: gzip"],
            "501 Not Implemented",
            "not implemented: Transfer-Encoding requested is not supported",
        ),
        (
            ["X-Padding: " + "x" * 300_000],
            "431 Request Header Fields Too Large",
            "request header fields too large: exceeds max_header of 262144",
        ),
    ],
    ids=["400", "501", "431"],
)
def test_waitress_refusals_are_json_too(db_path, headers, status, error):
    with RestDaemon(db_path) as server:
        answer = exchange(server.port, request(f"Host: 127.0.0.1:{server.port}", *headers))
        assert_json_error(answer, status, error)
        assert server.stop() == 0


def test_slow_clients_do_not_lock_the_others_out(db_path):
    with RestDaemon(db_path) as server, contextlib.ExitStack() as stack:
        slow = [
            stack.enter_context(
                socket.create_connection(("127.0.0.1", server.port), timeout=CLIENT_TIMEOUT_SECS)
            )
            for _ in range(SLOW_CLIENTS)
        ]
        for sock in slow:
            sock.sendall(b"GET /health HTTP/1.1\r\nHo")
        for sock in slow:
            sock.sendall(b"s")  # a trickle: each byte kept waitress's idle timer young
        answer = requests.get(server.url + "/health", timeout=CLIENT_TIMEOUT_SECS)
        assert answer.json()["status"] == "ok"
        assert server.stop() == 0


def test_a_burst_of_requests_logs_no_queue_depth(db_path):
    """A page load sends about ten requests at once; those waiting a few milliseconds for
    one of the threads are no news for the operator (waitress warned on each)."""
    with RestDaemon(db_path) as server, contextlib.ExitStack() as stack:
        burst = [
            stack.enter_context(
                socket.create_connection(("127.0.0.1", server.port), timeout=CLIENT_TIMEOUT_SECS)
            )
            for _ in range(4 * daemon.REST_THREADS)
        ]
        for sock in burst:
            sock.sendall(
                request(f"Host: 127.0.0.1:{server.port}", "Connection: close", start=HEALTH)
            )
        for sock in burst:
            assert read_until_closed(sock).startswith(b"HTTP/1.1 200 ")
        assert server.stop() == 0
    assert not [line for line in server.stderr_lines if "Task queue depth" in line]


def port_80_is_free() -> bool:
    with socket.socket() as sock:
        sock.setsockopt(
            socket.SOL_SOCKET, socket.SO_REUSEADDR, 1
        )  # as waitress: TIME_WAIT is no owner
        try:
            sock.bind(("127.0.0.1", 80))
        except OSError as exc:
            assert exc.errno in (errno.EACCES, errno.EADDRINUSE), exc
            return False
    return True


@pytest.mark.skipif(os.geteuid() != 0, reason="binding port 80 needs root")
def test_port_80_end_to_end(db_path):
    if not port_80_is_free():
        pytest.skip("port 80 is taken")
    with RestDaemon(db_path, addr="127.0.0.1:80") as server:
        assert requests.get("http://127.0.0.1/health", timeout=CLIENT_TIMEOUT_SECS).ok
        for host in ("127.0.0.1", "127.0.0.1:80"):
            line, _, _ = exchange(80, request(f"Host: {host}", "Connection: close", start=HEALTH))
            assert line == "HTTP/1.1 200 OK"
        refused = exchange(80, request("Host: 127.0.0.1:8080", start=HEALTH))
        assert_json_error(
            refused,
            "403 Forbidden",
            "forbidden: Host '127.0.0.1:8080' is not this daemon's address",
        )
        assert server.stop() == 0


@pytest.mark.parametrize("tokens", [False, True], ids=["open", "with a token"])
def test_serve_rest_names_the_page_and_says_when_it_asks_for_a_token(db_path, tokens):
    if tokens:
        assert am(db_path, "token", "create", "alice").exit_code == 0
    with RestDaemon(db_path) as daemon:
        assert daemon.stop() == 0  # then every line it wrote is read
    said = "".join(daemon.stderr_lines)
    assert f"web page at http://127.0.0.1:{daemon.port}/\n" in said
    assert ("the page asks for a token: `agent-memory token create NAME`" in said) == tokens
