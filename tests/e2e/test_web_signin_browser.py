"""Signing in on the page, in a real headless Chromium, against the real
``agent-memory serve-rest`` with tokens created: the form, the memories once signed in, a
write through the page, a scope-bound session, a revoked token, sign-out.

One daemon and database for the module, a fresh browser context (no cookie) per test.
"""

from __future__ import annotations

import pytest

from agent_memory.service.core import MemoryService
from agent_memory.service.tokens import Tokens
from agent_memory.storage import open_store
from tests.support.rest_daemon import RestDaemon

WAIT_MS = 10_000  # for the page to show what the API already answered (a slow CI machine)
IDS_SHOWN = "[...document.querySelectorAll('#results a.item')].map((a) => Number(a.dataset.id))"


def with_service(db_path, work):
    service = MemoryService(open_store(db_path))
    try:
        return work(service)
    finally:
        service.close()


def seed(service: MemoryService) -> dict[str, str]:
    service.store({"content": "alpha plan for the parser", "type": "DECISION", "scope": "alpha"})
    service.store({"content": "beta plan for the lexer", "type": "DECISION", "scope": "beta"})
    tokens = Tokens(service)
    made = {name: tokens.create(name, scope=scope) for name, scope in TOKENS.items()}
    return {**made, "reader": tokens.create("reader", read_only=True)}


TOKENS = {"rw": None, "alpha": "alpha", "doomed": None}


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    home = tmp_path_factory.mktemp("signin-home")
    db_path = home / "memory.db"
    tokens = with_service(db_path, seed)
    with RestDaemon(db_path, env={"HOME": str(home)}) as daemon:
        daemon.db_path = db_path
        daemon.drain_stderr()
        yield daemon, tokens
        assert daemon.stop() == 0


@pytest.fixture
def tab(chromium, team):
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"uncaught: {exc}"))
    page.on(
        "console",
        lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None,
    )
    page.goto(team[0].url + "/")
    yield page
    context.close()
    assert problems == []


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def expect_shown(tab, expected: list[int]) -> None:
    check = f"(expected) => JSON.stringify({IDS_SHOWN}) === JSON.stringify(expected)"
    tab.wait_for_function(check, arg=expected)


def sign_in(tab, token: str) -> None:
    tab.wait_for_selector("#signin-token", state="visible")
    tab.fill("#signin-token", token)
    tab.click("#signin-submit")


def test_the_page_asks_for_a_token_then_reads_writes_and_signs_out(tab, team):
    daemon, tokens = team
    tab.wait_for_selector("#signin", state="visible")
    assert tab.is_hidden("#layout") and tab.is_hidden("#who")
    assert tab.get_attribute("#signin-token", "type") == "password"
    sign_in(tab, tokens["rw"][:-3] + "xyz")
    tab.wait_for_selector("#signin-error:text('That token is wrong, expired or revoked.')")
    assert tab.context.cookies() == []

    sign_in(tab, tokens["rw"])
    tab.wait_for_selector("#signin", state="hidden")
    expect_shown(tab, [2, 1])
    assert tab.inner_text("#who-name") == "Signed in as rw"
    assert tab.input_value("#signin-token") == ""  # the token is not kept in the page
    (cookie,) = tab.context.cookies()
    assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"]) == (
        "agent_memory_session",
        True,
        "Strict",
    )
    assert tab.evaluate("() => document.cookie") == ""  # out of the scripts' reach

    tab.reload()  # the session outlives a reload
    expect_shown(tab, [2, 1])
    assert tab.is_hidden("#signin")

    tab.goto(daemon.url + "/#/m/1")  # a write through the page: an edit, saved
    tab.wait_for_selector("#d-title:text('DECISION #1')")
    tab.fill("#e-content", "alpha plan for the parser, signed off")
    tab.click("#e-save")
    tab.wait_for_selector("#d-status:text('Saved.')")
    saved = daemon.request("GET", "/api/memories/1", headers=bearer(tokens["rw"])).json()
    assert (saved["content"], saved["updated_by"]) == (
        "alpha plan for the parser, signed off",
        "rw",
    )

    tab.click("#sign-out")
    tab.wait_for_selector("#signin", state="visible")
    assert tab.is_hidden("#layout")
    assert tab.evaluate(f"() => {IDS_SHOWN}") == []
    old = {"Cookie": f"agent_memory_session={cookie['value']}"}
    assert daemon.request("GET", "/api/memories", headers=old).status_code == 401


def test_a_scope_bound_session_shows_only_its_scope(tab, team):
    _, tokens = team
    sign_in(tab, tokens["alpha"])
    expect_shown(tab, [1])
    tab.wait_for_selector("#total:text('1 memory')")
    assert tab.inner_text("#who-name") == "Signed in as alpha (scope alpha)"


def test_a_revoked_token_takes_the_page_back_to_the_form(tab, team):
    daemon, tokens = team
    sign_in(tab, tokens["doomed"])
    expect_shown(tab, [2, 1])
    with_service(daemon.db_path, lambda service: Tokens(service).revoke("doomed"))
    tab.fill("#q", "plan")  # the next request finds the session ended
    tab.wait_for_selector("#signin", state="visible")
    assert tab.is_hidden("#layout")


def test_an_open_loopback_daemon_shows_no_sign_in(chromium, tmp_path):
    with RestDaemon(tmp_path / "memory.db", env={"HOME": str(tmp_path)}) as daemon:
        daemon.drain_stderr()
        daemon.request("POST", "/api/memories", json={"content": "open", "type": "TODO"})
        context = chromium.new_context()
        try:
            tab = context.new_page()
            tab.set_default_timeout(WAIT_MS)
            tab.goto(daemon.url + "/")
            expect_shown(tab, [1])
            assert tab.is_hidden("#signin") and tab.is_hidden("#who")
        finally:
            context.close()
        assert daemon.stop() == 0


WRITES = ["#e-save", "#link-form button[type=submit]", "#d-related .unlink", "#d-forget"]


def test_a_read_only_session_offers_no_write_and_says_why(tab, team):
    """The page knows its token's rights: Save, Link, Unlink and Forget are not offered to a
    read-only token, and the page says why, before anything is clicked."""
    daemon, tokens = team
    edge = {"from_id": 1, "to_id": 2, "kind": "relates_to"}
    assert daemon.request("POST", "/api/links", json=edge, headers=bearer(tokens["rw"])).ok
    sign_in(tab, tokens["reader"])
    expect_shown(tab, [2, 1])
    assert tab.inner_text("#who-name") == "Signed in as reader (read-only)"
    tab.goto(daemon.url + "/#/m/1")
    tab.wait_for_selector("#d-title:text('DECISION #1')")
    tab.wait_for_selector("#d-related a.rel")  # the relation is shown, its Unlink is not
    tab.wait_for_selector("#d-rights", state="visible")
    assert [tab.is_visible(selector) for selector in WRITES] == [False] * 4
    assert tab.inner_text("#d-rights") == (
        "The token reader is read-only: it may browse and search, so Save, Link, Unlink "
        "and Forget are not offered."
    )


def test_a_writing_session_is_offered_every_write(tab, team):
    daemon, tokens = team
    sign_in(tab, tokens["alpha"])
    expect_shown(tab, [1])
    tab.goto(daemon.url + "/#/m/1")
    tab.wait_for_selector("#d-title:text('DECISION #1')")
    tab.wait_for_selector("#e-save", state="visible")
    assert [tab.is_visible(selector) for selector in WRITES if "unlink" not in selector] == [
        True
    ] * 3
    assert tab.is_hidden("#d-rights")
