"""MCP over Streamable HTTP: the SDK's session manager over the same server as stdio.

The tools, resources, prompt and error mapping are :func:`server.build_server`'s, so an
HTTP client sees exactly what a stdio client sees. The SDK's manager serves both protocol
eras from one endpoint: a request whose ``MCP-Protocol-Version`` header names 2026-07-28 is
one stateless exchange (``server/discover``, no session); anything else takes the
2025-06-18/2025-11-25 path (``initialize``, an ``Mcp-Session-Id``, 202 for notifications).

Answers are JSON, never an SSE stream: this server sends nothing unasked (its listings
never change, and it asks the client nothing), so a stream would only hold a worker. The
service is called in a worker thread, so one client's search does not hold up another's.
A daemon of several worker processes (``serve-rest --workers N``) serves the 2025 era
stateless too: a client's next request may reach another process, which holds none of the
first one's sessions. Nothing is lost by it: this server keeps no state per session and
sends nothing unasked. ``initialize`` is answered as always, with no ``Mcp-Session-Id``,
and the clients send none after it.
Host and Origin are checked by the daemon before a request reaches this (one rule for
every route), so the SDK's own copy of that check is off here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from agent_memory.mcp.server import build_server

if TYPE_CHECKING:
    from agent_memory.service.core import MemoryService

# Where the daemon serves MCP, and the methods it takes there: POST for messages, DELETE
# to end a session. GET would open a stream for messages this server never sends.
PATH = "/mcp"
METHODS = ("POST", "DELETE")
# Open sessions at most, of one token and of all. Past a token's cap, its new session ends
# that token's own least recently used idle one (never another token's; 503 when every one of
# its sessions is busy); past the whole cap (many tokens' worth), a new client gets 503 until
# one ends or expires.
MAX_SESSIONS_PER_TOKEN = 50
MAX_SESSIONS = 1000
# A session with no request for this long is closed (its client initializes again).
SESSION_IDLE_SECS = 30 * 60


class TokenSessions(StreamableHTTPSessionManager):
    """The SDK's manager with its 2025-era sessions capped per token: the credential that
    opened a session owns it (the token, or one of its OAuth grants), and the sessions of
    every credential of a token (the owner's subject) count against that token's cap. An
    open daemon's requests carry no token: every local process has full rights there, and
    only the daemon-wide cap applies."""

    def __init__(self, *args: Any, per_token: int = MAX_SESSIONS_PER_TOKEN, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.per_token = per_token

    def _admit_session(self, requestor: Any) -> Any:
        """The SDK's admission, once the token has room: past its cap its least recently used
        idle session ends (its client initializes again); None (503) when none is idle."""
        if requestor is not None and not self._room_for(requestor):
            return None
        return super()._admit_session(requestor)

    def _room_for(self, requestor: Any) -> bool:
        """Whether ``requestor`` may open a session, once its oldest idle one is ended if it
        is at its cap. An idle session's scope is due to end at its last request plus the
        idle timeout; a busy one's never is."""
        owners = self._session_owners
        token = _token_of(requestor)
        own = [
            (t, sid)
            for sid, t in self._server_instances.items()
            if sid in owners and _token_of(owners[sid]) == token
        ]
        if len(own) < self.per_token:
            return True
        idle = [
            (t.idle_scope.deadline, sid)
            for t, sid in own
            if t.idle_scope is not None and math.isfinite(t.idle_scope.deadline)
        ]
        if not idle:
            return False
        oldest = min(idle)[1]
        transport = self._server_instances.pop(oldest)
        owners.pop(oldest, None)
        assert transport.idle_scope is not None
        transport.idle_scope.cancel()  # its server task ends it, as at its idle timeout
        return True


def _token_of(owner: Any) -> str:
    """The token a session's owner acts as: its subject, else (no subject given) itself."""
    return owner["subject"] or owner["client_id"]


def session_manager(
    service: MemoryService,
    *,
    max_body_bytes: int,
    outlook: str = "",
    service_for: Callable[[Any], Any] | None = None,
    stateless: bool = False,
) -> StreamableHTTPSessionManager:
    """The SDK's manager for ``service``; run it (``.run()``) for as long as it serves.
    ``service_for``: the service a request may use (its token's), from its context.
    ``stateless``: the 2025 era without sessions too, for a daemon of several processes."""
    server = build_server(
        service, outlook=outlook, run=anyio.to_thread.run_sync, service_for=service_for
    )
    return TokenSessions(
        server,
        json_response=True,
        stateless=stateless,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        session_idle_timeout=SESSION_IDLE_SECS,
        max_request_body_size=max_body_bytes,
        max_sessions=MAX_SESSIONS,
    )
