"""Connecting an MCP client with OAuth alone, as a person does it: the SDK's client meets the
daemon's 401, registers, and sends the person to the authorization page, which a real
headless Chromium opens: the sign-in (a wrong token first), the consent naming the client and
the token's rights, Allow (or Deny); the browser follows the redirect to the client's
loopback callback, and the client then calls tools with exactly the token's rights."""

from __future__ import annotations

import queue
import threading

import anyio
import pytest

from agent_memory.service.core import MemoryService
from agent_memory.service.tokens import Tokens
from agent_memory.storage import open_store
from tests.support.oauth import Callback, authorize_url, oauth_client, oauth_provider, pkce
from tests.support.oauth import register as register_client
from tests.support.rest_daemon import RestDaemon

WAIT_SECS = 60
WAIT_MS = 10_000


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    home = tmp_path_factory.mktemp("oauth-home")
    db_path = home / "memory.db"
    service = MemoryService(open_store(db_path))
    try:
        service.store({"content": "alpha plan", "type": "DECISION", "scope": "alpha"})
        service.store({"content": "beta plan", "type": "DECISION", "scope": "beta"})
        token = Tokens(service).create("viewer", read_only=True, scope="alpha")
    finally:
        service.close()
    with RestDaemon(db_path, env={"HOME": str(home)}) as daemon:
        daemon.drain_stderr()
        yield daemon, token
        assert daemon.stop() == 0


@pytest.fixture
def tab(chromium):
    context = chromium.new_context()
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"uncaught: {exc}"))
    page.on(
        "console",
        lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None,
    )
    yield page
    context.close()
    assert problems == []


def test_a_client_connects_through_the_sign_in_in_a_browser(tab, team):
    daemon, token = team
    server = daemon.url + "/mcp"
    urls: queue.Queue[str | None] = queue.Queue()
    with Callback() as callback:

        def person(url: str) -> dict[str, str]:  # the client opens the person's browser
            urls.put(url)
            return callback.queries.get(timeout=WAIT_SECS)

        provider = oauth_provider(server, person, redirect_uri=callback.url)
        outcome: dict[str, object] = {}

        def connect() -> None:
            async def main() -> None:
                async with oauth_client(server, provider, "2026-07-28") as mcp:
                    outcome["listed"] = await mcp.call_tool("memory_list", {})
                    outcome["stored"] = await mcp.call_tool(
                        "memory_store", {"content": "x", "type": "TODO"}
                    )

            try:
                anyio.run(main)
            except BaseException as exc:  # reported below, in the test's thread
                outcome["error"] = exc
            finally:
                urls.put(None)

        client = threading.Thread(target=connect)
        client.start()
        url = urls.get(timeout=WAIT_SECS)
        assert url is not None, outcome
        tab.goto(url)
        assert tab.inner_text("#client") == "Test connector"
        assert tab.inner_text("#destination") == callback.url.removesuffix("/callback")
        assert tab.get_attribute("#credential", "type") == "password"
        tab.fill("#credential", token[:-3] + "xyz")
        tab.click("#sign-in")
        tab.wait_for_selector("#error:text('That token or code is wrong, expired or revoked.')")
        tab.fill("#credential", token)
        tab.click("#sign-in")
        tab.wait_for_selector("#allow")
        assert tab.inner_text("#token") == "viewer"
        assert tab.inner_text("#rights").splitlines() == [
            "read memories, never change them (read-only)",
            "only in the scope alpha",
        ]
        tab.click("#allow")
        tab.wait_for_url(callback.url + "?*")
        client.join(WAIT_SECS)
    assert "error" not in outcome, outcome.get("error")
    listed = outcome["listed"].structured_content["memories"]  # type: ignore[attr-defined]
    assert [m["content"] for m in listed] == ["alpha plan"]
    stored = outcome["stored"]
    assert stored.is_error  # type: ignore[attr-defined]
    assert stored.content[0].text == (  # type: ignore[attr-defined]
        "forbidden: the token 'viewer' is read-only and cannot store"
    )


def test_deny_sends_the_person_back_to_the_client_with_access_denied(tab, team):
    daemon, token = team
    with Callback() as callback:
        client_id = register_client(daemon, redirect_uri=callback.url)
        url = authorize_url(daemon, client_id, pkce()[1], redirect_uri=callback.url)
        tab.goto(url)
        tab.fill("#credential", token)
        tab.click("#sign-in")
        consent = tab.get_attribute("input[name=consent]", "value")
        tab.click("#deny")
        tab.wait_for_url(callback.url + "?*")
        answer = callback.queries.get(timeout=WAIT_SECS)
    assert (answer["error"], answer["state"]) == ("access_denied", "xyz")
    assert "code" not in answer
    # the consent, once answered, cannot be answered again (a form posted twice, a replay)
    again = daemon.request(
        "POST",
        "/authorize/consent",
        data={"consent": consent, "decision": "allow"},
        allow_redirects=False,
    )
    assert again.status_code == 400 and "Location" not in again.headers
    assert "This sign-in has expired or was used already" in again.text
