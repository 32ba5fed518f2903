"""A team's database for the HTTP token tests: memories in two scopes, tokens of every kind
(full, read-only, scope-bound, expired, revoked), and clients that send a token."""

from __future__ import annotations

import time

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from agent_memory.service.core import MemoryService
from agent_memory.service.tokens import DAY_SECS, Tokens
from agent_memory.storage import open_store
from tests.support.clock import Clock
from tests.support.rest_daemon import RestDaemon

# The SDK client's modes for the two eras: initialize + session, and 2026-07-28 stateless.
MODES = ["legacy", "2026-07-28"]
ACCEPT = "application/json, text/event-stream"


def make_tokens(location: str) -> dict[str, str]:
    """Memories 1 (scope alpha, "alpha plan") and 2 (beta, "beta plan") linked 1 -> 2, and
    the tokens: rw, ro (read-only), alpha (scope-bound), expired (a day ago), revoked."""
    service = MemoryService(open_store(location))
    try:
        service.store({"content": "alpha plan", "type": "DECISION", "scope": "alpha"})
        service.store({"content": "beta plan", "type": "DECISION", "scope": "beta"})
        service.link({"from_id": 1, "to_id": 2, "kind": "relates_to"})
        tokens = Tokens(service)
        made = {
            "rw": tokens.create("rw"),
            "ro": tokens.create("ro", read_only=True),
            "alpha": tokens.create("alpha", scope="alpha"),
            "revoked": tokens.create("revoked"),
        }
        assert tokens.revoke("revoked")
    finally:
        service.close()
    # made two days ago, for one day: the daemon's real clock finds it expired
    past = MemoryService(open_store(location), clock=Clock(int(time.time()) - 2 * DAY_SECS))
    try:
        made["expired"] = Tokens(past).create("expired", days=1)
    finally:
        past.close()
    return made


def revoke(location: str, name: str) -> None:
    """Revoke ``name`` as `agent-memory token revoke` does: another process, same database."""
    service = MemoryService(open_store(location))
    try:
        assert Tokens(service).revoke(name)
    finally:
        service.close()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def mcp_client(daemon: RestDaemon, token: str | None, mode: str) -> Client:
    """The SDK's Streamable HTTP client, sending ``token`` on every request."""
    headers = bearer(token) if token else None
    http = create_mcp_http_client(headers=headers)
    return Client(streamable_http_client(daemon.url + "/mcp", http_client=http), mode=mode)
