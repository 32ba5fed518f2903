"""The REST daemon's HTTP server: waitress with the guards that act before a body is read.

waitress reads a whole request, body included, before the app sees it, and by default takes
bodies up to 1 GiB, spooled to a temporary file. So the app's refusals come too late: the
parser here applies the app's Host/Origin rule (:class:`rest.app.AddressGuard`) and
its body limit to the headers, and a refused request's body is never read. Slow clients are
bounded too: a request must arrive whole within REQUEST_DEADLINE_SECS of its first byte, so
connections trickling a byte at a time cannot hold every slot. waitress's own refusals (400,
413, 431, 501) are the same JSON ``{"error": ...}`` body as the app's.
"""

from __future__ import annotations

import json
import logging
import resource
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.server import TcpWSGIServer
from waitress.task import ErrorTask
from waitress.utilities import Error, RequestEntityTooLarge

from agent_memory.http import rest, signin
from agent_memory.service.core import MemoryService

log = logging.getLogger(__name__)

# environ key of the service as a request's token may use it (see rest.app._service)
SERVICE = rest.SERVICE
# What the token gate (agent_memory.http.daemon) takes of the page's sign-in (rest.signin).
GRANT = signin.GRANT
SIGN_IN_PATH = signin.PATH
CrossSite = signin.CrossSite
SignIn = signin.SignIn
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Any]

REST_THREADS = 4
# A request (headers and body) must be received whole within this many seconds of its
# first byte. On loopback the largest body takes well under a second; 30 s leaves room for
# a --allow-remote client on a slow link (7 MiB at 2 Mbit/s) and caps how long a client
# trickling a byte at a time, which resets waitress's idle timer with each byte, holds a slot.
REQUEST_DEADLINE_SECS = 30.0
# A connection with no request in progress is closed after this many idle seconds
# (waitress: 120). Clients reconnect transparently; an idle slot is one an attacker fills.
IDLE_TIMEOUT_SECS = 15
# How often the deadline and the idle timeout are checked: the loop wakes at least once a
# second anyway, and one pass over a few hundred connections costs microseconds.
CLEANUP_INTERVAL_SECS = 1
# Open connections at most (waitress: 100, which slow clients can fill), fewer when the
# process may not open descriptors for them all: each holds its socket and, while a body or
# an answer is too big for memory (512 KiB, 1 MiB), a spool file for each; RESERVED_FDS
# stay for the database files, the log and the trigger pipe (a daemon at rest holds 14).
# Past the descriptor limit accept() fails in a busy loop. The loop waits in poll(), not
# select(), which refuses descriptors from 1024 up with an error that ends the loop.
CONNECTION_LIMIT = 500
FDS_PER_CONNECTION = 3
RESERVED_FDS = 64


class Forbidden(Error):
    code = 403
    reason = "Forbidden"


class GuardedParser(HTTPRequestParser):
    """waitress's request parser, refusing on the headers what the app would refuse."""

    def __init__(self, adj: Adjustments, server: DaemonServer) -> None:
        super().__init__(adj)
        self.server = server
        self.started = time.time()  # made on a request's first byte: its deadline counts from here

    def received(self, data: bytes) -> int:
        in_headers = not self.headers_finished
        consumed = super().received(data)
        refusal = self.refusal() if in_headers and self.headers_finished else None
        if refusal is None:
            return consumed
        self.error, self.completed = refusal, True
        self.expect_continue = False  # no "100 Continue": the body is not wanted
        return len(data)  # the rest of this read is that body: dropped with it

    def refusal(self) -> Error | None:
        """The answer to headers just read when the request must go no further (None: read
        on). A malformed request keeps waitress's own answer."""
        if self.empty or not (self.error is None or isinstance(self.error, RequestEntityTooLarge)):
            return None
        cross_site = self.path.rstrip("/") in self.server.any_origin
        origin = None if cross_site else self.headers.get("ORIGIN")
        reason = self.server.guard.refusal(self.headers.get("HOST"), origin)
        if reason is not None:
            return Forbidden(reason)
        if self.content_length > self.server.max_body_bytes:
            return RequestEntityTooLarge(
                f"Content-Length {self.content_length} is more than the "
                f"{self.server.max_body_bytes} bytes allowed"
            )
        return None


class JsonErrorTask(ErrorTask):
    """waitress's error answer as the app's: ``{"error": "<reason>: <detail>"}``."""

    def execute(self) -> None:
        error = self.request.error
        text = f"{error.reason.lower()}: {error.body.rstrip('.')}"
        body = (
            json.dumps({"error": text}, ensure_ascii=False, separators=(",", ":")) + "\n"
        ).encode("utf-8")
        self.status = f"{error.code} {error.reason}"
        self.response_headers.append(("Content-Type", "application/json"))
        self.response_headers.append(("X-Content-Type-Options", "nosniff"))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class GuardedChannel(HTTPChannel):
    error_task_class = JsonErrorTask
    server: DaemonServer

    def parser_class(self, adj: Adjustments) -> GuardedParser:  # waitress calls it per request
        return GuardedParser(adj, self.server)


class DaemonServer(TcpWSGIServer):
    """waitress's TCP server with the guarded channels and the request deadline."""

    channel_class = GuardedChannel

    def __init__(
        self,
        service: MemoryService,
        adj: Adjustments,
        *,
        host: str,
        allow_remote: bool,
        request_deadline: float,
        extra_hosts: tuple[str, ...] = (),
        sock: socket.socket | None = None,
        worker: int | None = None,
        least_busy: Callable[[int], bool] | None = None,
    ) -> None:
        self.least_busy = least_busy  # given this worker's connections: whether to accept
        if sock is None:  # binds: the app and the rule need the real port
            super().__init__(None, adj=adj)
        else:  # a worker process serves the socket its parent bound (agent_memory.http.workers)
            info = (sock.family, sock.type, sock.proto, sock.getsockname())
            super().__init__(None, adj=adj, _sock=sock, sockinfo=info, bind_socket=False)
        self.max_body_bytes = adj.max_request_body_size - 1
        self.request_deadline = request_deadline
        port = int(self.effective_port)
        self.guard = rest.AddressGuard(host, port, allow_remote, extra_hosts)
        self.flask_app = rest.create_app(
            service,
            host=host,
            port=port,
            allow_remote=allow_remote,
            bound_ip=str(self.effective_host),
            extra_hosts=extra_hosts,
            worker=worker,
        )
        self.application = self.flask_app
        self.sign_in: SignIn = self.flask_app.extensions[signin.KEY]
        self.mounts: dict[str, WsgiApp] = {}
        self.any_origin: frozenset[str] = frozenset()

    def mount(self, mounts: Mapping[str, WsgiApp], any_origin: Iterable[str] = ()) -> None:
        """Serve each path (with or without a final slash) with its own WSGI app, the rest
        with the REST app. Behind the same parser: the Host/Origin rule and the body limit
        hold for them too, but for the paths of ``any_origin``, which other sites' pages
        call by design (CORS, no cookie read): the Host rule holds there, not the Origin
        one."""
        self.mounts = {path.rstrip("/"): app for path, app in mounts.items()}
        self.any_origin = frozenset(path.rstrip("/") for path in any_origin)
        self.application = self._dispatch

    def _dispatch(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO", "")
        target = self.mounts.get(path.rstrip("/")) if path != "/" else None
        return (target or self.flask_app)(environ, start_response)

    def readable(self) -> bool:
        """Whether the loop listens for a new connection: waitress's answer, and with
        several workers only while none has fewer connections (agent_memory.http.workers)."""
        listening = super().readable()
        if self.least_busy is None:
            return listening
        return self.least_busy(len(self.active_channels)) and listening

    def maintenance(self, now: float) -> None:
        """waitress's idle timeout, and the deadline of requests still arriving."""
        super().maintenance(now)
        cutoff = now - self.request_deadline
        for channel in self.active_channels.values():
            request = channel.request
            if request is not None and not channel.requests and request.started < cutoff:
                log.info(
                    "closing the connection from %s: no whole request within %s s",
                    channel.addr[0],
                    self.request_deadline,
                )
                channel.will_close = True


def create_server(
    service: MemoryService,
    host: str,
    port: int,
    *,
    allow_remote: bool,
    request_deadline: float = REQUEST_DEADLINE_SECS,
    extra_hosts: tuple[str, ...] = (),
    sock: socket.socket | None = None,
    worker: int | None = None,
    least_busy: Callable[[int], bool] | None = None,
) -> DaemonServer:
    """The REST daemon's server bound to ``host:port`` (port 0: a free one), not yet running;
    or serving ``sock``, already bound there by the parent of worker ``worker``."""
    adj = Adjustments(
        host=host,
        port=port,
        threads=REST_THREADS,
        # waitress refuses a body of this many bytes or more (a chunked one, counted as it
        # arrives); the app refuses more than its limit
        max_request_body_size=rest.max_body_bytes(service.max_content_bytes) + 1,
        channel_timeout=IDLE_TIMEOUT_SECS,
        cleanup_interval=CLEANUP_INTERVAL_SECS,
        connection_limit=connection_limit(),
        asyncore_use_poll=True,
    )
    return DaemonServer(
        service,
        adj,
        host=host,
        allow_remote=allow_remote,
        request_deadline=request_deadline,
        extra_hosts=extra_hosts,
        sock=sock,
        worker=worker,
        least_busy=least_busy,
    )


def connection_limit() -> int:
    """CONNECTION_LIMIT, or as many connections as the descriptor limit leaves room for."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return CONNECTION_LIMIT
    return max(1, min(CONNECTION_LIMIT, (soft - RESERVED_FDS) // FDS_PER_CONNECTION))
