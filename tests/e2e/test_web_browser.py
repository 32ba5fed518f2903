"""The web page in a real headless Chromium, against the real ``agent-memory serve-rest``.

One browser for the session, one daemon and database for the module, a fresh browser
context per test. Tests share the database, so each keeps to memories of its own (its own
words and scope) and checks what it did through the API, as any other client would.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import sqlean

from agent_memory.cli import display
from tests.support.rest_daemon import RestDaemon

WAIT_MS = 10_000  # for the page to show what the API already answered (a slow CI machine)
DAY = 86_400
IDS_SHOWN = "[...document.querySelectorAll('#results a.item')].map((a) => Number(a.dataset.id))"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    home = tmp_path_factory.mktemp("web-home")
    with RestDaemon(home / "memory.db", env={"HOME": str(home)}) as running:
        running.db_path = home / "memory.db"
        running.drain_stderr()
        yield running
        assert running.stop() == 0


class Page:
    """A tab on the daemon's page, and the page's mishaps: uncaught errors, CSP reports."""

    def __init__(self, context, daemon):
        self.tab = context.new_page()
        self.tab.set_default_timeout(WAIT_MS)
        self.url = daemon.url
        self.problems: list[str] = []
        self.csp_reports_expected = False
        self.tab.on("pageerror", lambda exc: self.problems.append(f"uncaught: {exc}"))
        self.tab.on("console", self._console)
        self.dialogs: list[str] = []
        self.tab.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def _console(self, message) -> None:
        if "Content Security Policy" in message.text and not self.csp_reports_expected:
            self.problems.append(f"CSP: {message.text}")

    def open(self, fragment: str = "") -> Page:
        self.tab.goto(f"{self.url}/{fragment}")
        self.tab.wait_for_selector("#total:not(:empty)")
        if fragment:  # a memory: opened once its title is there
            self.tab.wait_for_selector("#d-title:not(:empty)")
        return self

    def shown(self) -> list[int]:
        return self.tab.evaluate(f"() => {IDS_SHOWN}")

    def expect_shown(self, expected: list[int]) -> None:
        """Wait until the list shows exactly these memories, in this order."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        check = f"(expected) => JSON.stringify({IDS_SHOWN}) === JSON.stringify(expected)"
        try:
            self.tab.wait_for_function(check, arg=expected)
        except PlaywrightTimeout:
            assert self.shown() == expected

    def searched(self, action) -> list[int]:
        """What the search that ``action`` set off answered, best first (the page must show
        this order)."""
        with self.tab.expect_response(lambda r: r.url.endswith("/api/search")) as answer:
            action()
        return [found["id"] for found in answer.value.json()["results"]]

    def listed(self, action) -> list[int]:
        """What the list request that ``action`` set off answered."""
        with self.tab.expect_response(lambda r: "/api/memories?" in r.url) as answer:
            action()
        return [found["id"] for found in answer.value.json()]

    def text(self, selector: str) -> str:
        return self.tab.locator(selector).inner_text()

    def focused(self) -> str:
        return self.tab.evaluate(
            "() => document.activeElement.id || document.activeElement.className"
        )

    def tab_to(self, element_id: str, limit: int = 120) -> None:
        """Press Tab until the element has the focus, as a keyboard user would."""
        for _ in range(limit):
            if self.tab.evaluate("() => document.activeElement.id") == element_id:
                return
            self.tab.keyboard.press("Tab")
        raise AssertionError(f"Tab never reached #{element_id}")


@pytest.fixture
def page(chromium, daemon):
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    opened = Page(context, daemon)
    yield opened
    context.close()
    assert opened.problems == []


def store(daemon, content: str, memory_type: str = "TODO", **fields) -> int:
    answer = daemon.request(
        "POST", "/api/memories", json={"content": content, "type": memory_type, **fields}
    )
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def memory(daemon, memory_id: int) -> dict:
    return daemon.request("GET", f"/api/memories/{memory_id}").json()


def uses(daemon, ids: list[int]) -> dict[int, tuple[int, int]]:
    """Each memory's (access_count, last_accessed), as the API reads them."""
    read = {m: memory(daemon, m) for m in ids}
    return {m: (found["access_count"], found["last_accessed"]) for m, found in read.items()}


def test_search_and_filters_show_the_right_memories(page, daemon):
    a = store(daemon, "zebra crossing rules for the parser", "DECISION", tags=["zoo"], scope="s1")
    b = store(daemon, "zebra stripes in the error log", "ERROR", tags=["zoo", "logs"], scope="s1")
    c = store(daemon, "zebra migration across scopes", "TODO", scope="s2")
    store(daemon, "nothing striped here", "DECISION", tags=["zoo"], scope="s1")
    page.open()
    stats = daemon.request("GET", "/api/stats").json()
    assert page.text("#total") == f"{stats['memories']} memories"
    assert page.text("#backlog") == f"{stats['pending_embedding']} waiting for a vector"
    health = daemon.request("GET", "/health").json()
    assert page.text("#health").startswith("embedder unreachable · v")
    assert page.text("#mode") == "keyword search"  # how a search would run, beside the box
    assert page.text("#search-hint") == health["search_hint"]  # why, and what changes it

    ranked = page.searched(lambda: page.tab.fill("#q", "zebra"))
    assert sorted(ranked) == sorted([a, b, c])
    page.expect_shown(ranked)  # best first, as the API ranked them
    assert page.text("#mode") == "keyword search"
    assert page.text("header.top").count("search") == 1  # said once, not again by #health
    first = page.tab.locator("#results a.item").first
    assert first.locator(".decay").inner_text().startswith("decay ")
    assert first.locator(".age").inner_text().endswith(" old")

    errors = page.tab.locator("#by-type button[data-value=ERROR]")  # a count filters too
    assert page.searched(errors.click) == [b]
    page.expect_shown([b])
    assert page.tab.input_value("#f-type") == "ERROR"
    assert errors.get_attribute("aria-pressed") == "true"
    page.searched(lambda: page.tab.select_option("#f-type", ""))
    ranked = page.searched(lambda: page.tab.fill("#f-tag", "zoo"))
    assert sorted(ranked) == sorted([a, b])
    page.expect_shown(ranked)
    page.searched(lambda: page.tab.fill("#f-tag", ""))
    page.tab.fill("#f-scope", "s2")
    page.expect_shown([c])
    page.tab.fill("#q", "")  # back to browsing, the filter kept
    page.tab.wait_for_selector("#list-title:text('Newest memories')")
    page.expect_shown([c])
    assert page.text("#mode") == "keyword search"


def test_counts_read_in_the_singular_and_embedding_off_is_said(chromium, tmp_path):
    """A page of its own, on a daemon run with --embedder none: nothing waits for a vector
    there, and one memory or one relation reads as such."""
    db_path = tmp_path / "memory.db"
    env = {"HOME": str(tmp_path), "AGENT_MEMORY_EMBEDDER": "none"}
    with RestDaemon(db_path, env=env) as daemon:
        daemon.drain_stderr()
        first = store(daemon, "the only memory at first")
        context = chromium.new_context()
        try:
            page = Page(context, daemon).open()
            assert page.text("#total") == "1 memory"
            assert page.text("#links-count") == "0 relations"
            assert page.text("#backlog") == "search by meaning is off (--embedder none)"
            second = store(daemon, "a second one, linked to the first")
            linked = daemon.request(
                "POST", "/api/links", json={"from_id": second, "to_id": first, "kind": "relates_to"}
            )
            assert linked.status_code in (200, 201), linked.text
            page.open()
            assert page.text("#total") == "2 memories"
            assert page.text("#links-count") == "1 relation"
            page.open(f"#/m/{first}")  # its own state, in the same words
            assert "waiting for a vector" in page.text("#d-fields")
            assert page.problems == []
        finally:
            context.close()
        assert daemon.stop() == 0


def test_the_search_and_its_filters_are_in_the_address(page, chromium, daemon):
    a = store(daemon, "quokka habits in the morning", "DECISION", tags=["fauna"], scope="addr")
    b = store(daemon, "quokka sightings logged wrong", "ERROR", tags=["fauna"], scope="addr")
    page.open()
    page.searched(lambda: page.tab.fill("#q", "quo"))
    typed = page.searched(lambda: page.tab.fill("#q", "quokka"))  # more typing: one entry
    assert sorted(typed) == sorted([a, b])
    page.tab.wait_for_url("**/?q=quokka")
    assert page.searched(lambda: page.tab.select_option("#f-type", "ERROR")) == [b]
    page.tab.wait_for_url("**/?q=quokka&type=ERROR")
    page.expect_shown([b])
    page.tab.fill("#f-scope", "addr")
    page.tab.wait_for_url("**/?q=quokka&type=ERROR&scope=addr")
    page.tab.click("#results a.item")  # the open memory goes in the hash, beside the search
    page.tab.wait_for_url(f"**/?q=quokka&type=ERROR&scope=addr#/m/{b}")
    page.tab.wait_for_selector(f"#d-title:text('ERROR #{b}')")
    shared = page.tab.url
    assert page.tab.title() == "quokka · agent-memory"

    # Back and Forward walk the same views: the memory closes, then the filters go one by one
    page.tab.go_back()
    page.tab.wait_for_selector("#detail", state="hidden")
    assert page.searched(page.tab.go_back) == [b]
    assert page.tab.url.endswith("/?q=quokka&type=ERROR")
    assert page.tab.input_value("#f-scope") == ""
    unfiltered = page.searched(page.tab.go_back)  # the search as first typed
    assert sorted(unfiltered) == sorted(typed)
    assert page.tab.url.endswith("/?q=quokka")
    assert (page.tab.input_value("#q"), page.tab.input_value("#f-type")) == ("quokka", "")
    page.expect_shown(unfiltered)
    assert page.searched(page.tab.go_forward) == [b]
    assert page.tab.input_value("#f-type") == "ERROR"
    page.tab.go_back()
    page.tab.go_back()  # before the search: browsing, with the search box empty
    page.tab.wait_for_selector("#list-title:text('Newest memories')")
    assert page.tab.input_value("#q") == ""
    assert page.tab.url == f"{daemon.url}/"

    # a bookmark, or a link someone shared, opens the same view in a new browser
    context = chromium.new_context()
    try:
        tab = context.new_page()
        with tab.expect_response(lambda r: r.url.endswith("/api/search")) as answer:
            tab.goto(shared)
        assert [found["id"] for found in answer.value.json()["results"]] == [b]
        assert answer.value.request.post_data_json == {
            "query": "quokka",
            "type": "ERROR",
            "scope": "addr",
            "limit": 50,
            "record_use": False,
            "include_superseded": True,  # the page strikes superseded memories through
        }
        tab.wait_for_selector(f"#d-title:text('ERROR #{b}')")
        assert [tab.input_value(f) for f in ("#q", "#f-type", "#f-tag", "#f-scope")] == [
            "quokka",
            "ERROR",
            "",
            "addr",
        ]
        with tab.expect_response(lambda r: r.url.endswith("/api/search")) as answer:
            tab.goto(f"{daemon.url}/?q=quokka&tag=fauna&type=decision")  # any case
        assert [found["id"] for found in answer.value.json()["results"]] == [a]
    finally:
        context.close()


WHY_SHOWN = (
    "[...document.querySelectorAll('#results .why:not([hidden])')].map((w) => w.textContent)"
)


def test_why_these_results_explains_each_keyword_result(page, daemon):
    """The toggle beside the search box: the page's search asks for explain and each result
    says why it is there in the terminal's words; off again, the lines go."""
    made = [store(daemon, f"narwhal tusk fact {i}", scope="why") for i in range(2)]
    page.open()
    ranked = page.searched(lambda: page.tab.fill("#q", "narwhal"))
    page.expect_shown(ranked)
    assert page.tab.evaluate(f"() => {WHY_SHOWN}") == []  # off by default
    with page.tab.expect_response(lambda r: r.url.endswith("/api/search")) as sent:
        page.tab.get_by_label("Why these results?").check()
    assert sent.value.request.post_data_json["explain"] is True
    answer = sent.value.json()
    assert sorted(r["id"] for r in answer["results"]) == made
    page.tab.wait_for_selector("#results .why:not([hidden])")
    expected = [f"why: {display.why(r['why'])}" for r in answer["results"]]
    assert page.tab.evaluate(f"() => {WHY_SHOWN}") == expected
    assert expected[0].startswith("why: holds ")
    assert page.text("#list-status") == (
        f"2 best first · score = decay + bm25 · {answer['explain']['cut']['reason']}"
    )

    with page.tab.expect_response(lambda r: r.url.endswith("/api/search")) as sent:
        page.tab.get_by_label("Why these results?").uncheck()
    assert "explain" not in sent.value.request.post_data_json
    page.tab.wait_for_selector("#list-status:text-is('2 best first')")
    assert page.tab.evaluate(f"() => {WHY_SHOWN}") == []


def test_why_these_results_on_a_hybrid_search_says_where_the_page_ended(chromium, tmp_path, ollama):
    """A daemon of its own whose embedder is the fake Ollama: each result's why says what it
    holds and why it is in, and the status line the fusion and where the page ended."""
    env = {"HOME": str(tmp_path), "AGENT_MEMORY_OLLAMA_URL": ollama.url}
    with RestDaemon(tmp_path / "memory.db", env=env) as daemon:
        daemon.drain_stderr()
        for content in [
            "We chose PostgreSQL as our datastore",
            "The login page crashed on a bad password",
            "Cache the embeddings in redis",
            "Ship the release on Friday",
        ]:
            store(daemon, content, "DECISION")
        context = chromium.new_context(viewport={"width": 1400, "height": 900})
        try:
            page = Page(context, daemon).open()
            page.tab.get_by_label("Why these results?").check()
            with page.tab.expect_response(lambda r: r.url.endswith("/api/search")) as sent:
                page.tab.fill("#q", "which database did we pick")
            answer = sent.value.json()
            assert answer["search_mode"] == "hybrid"
            page.expect_shown([r["id"] for r in answer["results"]])
            expected = [f"why: {display.why(r['why'])}" for r in answer["results"]]
            assert page.tab.evaluate(f"() => {WHY_SHOWN}") == expected
            assert "σ above unrelated text; in because" in expected[0]
            cut = answer["explain"]["cut"]
            assert cut["kept"] < cut["candidates"]  # the unrelated memories
            status = page.text("#list-status")
            assert status == (
                f"{len(expected)} best first · {display.explanation(answer['explain'])}"
            )
            assert status.endswith(cut["reason"])
            assert page.problems == []
        finally:
            context.close()
        assert daemon.stop() == 0


def test_the_page_counts_no_use_searching_browsing_or_opening(page, daemon):
    """A person browsing is not an agent using a memory: a search typed into the page, the
    memory it opens, the graph around it and the list leave each memory's access_count and
    last_accessed as they were (read back through the API, from the database)."""
    made = [store(daemon, f"wombat burrow note {i}", scope="nouse") for i in range(3)]
    daemon.request(
        "POST", "/api/links", json={"from_id": made[0], "to_id": made[1], "kind": "relates_to"}
    )
    conn = sqlean.connect(str(daemon.db_path))  # a day old: a use now would move last_accessed
    try:
        with conn:
            conn.execute(
                f"UPDATE memories SET last_accessed = last_accessed - {DAY} WHERE scope = 'nouse'"
            )
    finally:
        conn.close()
    before = uses(daemon, made)
    assert [count for count, _ in before.values()] == [0, 0, 0]

    page.open()
    page.tab.fill("#f-scope", "nouse")
    page.tab.wait_for_url("**/?scope=nouse")
    ranked = page.searched(lambda: page.tab.fill("#q", "wombat burrow"))
    assert sorted(ranked) == made
    page.expect_shown(ranked)
    page.tab.click(f"#results a.item[data-id='{made[0]}']")
    page.tab.wait_for_selector(f"#d-title:text('TODO #{made[0]}')")
    page.tab.wait_for_function("() => document.querySelectorAll('#g-nodes a').length === 2")
    assert page.listed(lambda: page.tab.fill("#q", "")) == made[::-1]
    assert uses(daemon, made) == before

    agent = daemon.request("POST", "/api/search", json={"query": "wombat", "limit": 1}).json()
    (used,) = [found["id"] for found in agent["results"]]  # a client's search is a use
    count, last_accessed = uses(daemon, made)[used]
    assert (count, last_accessed > before[used][1]) == (1, True)


def test_browsing_pages_newest_first(page, daemon):
    made = [store(daemon, f"paged note {i}", scope="paging") for i in range(57)]
    newest_first = made[::-1]
    page.open()
    assert page.listed(lambda: page.tab.fill("#f-scope", "paging")) == newest_first[:51]
    page.expect_shown(newest_first[:50])
    assert page.tab.locator("#newer").is_disabled()
    page.tab.click("#older")
    page.expect_shown(newest_first[50:])
    assert page.tab.locator("#older").is_disabled()
    assert page.text("#list-status") == "page 2"
    page.tab.click("#newer")
    page.expect_shown(newest_first[:50])


def test_an_edit_persists_and_the_api_messages_show_inline(page, daemon):
    m = store(daemon, "the original text", "PATTERN", tags=["old"], scope="edit")
    page.open(f"#/m/{m}")
    page.tab.wait_for_selector(f"#d-title:text('PATTERN #{m}')")
    page.tab.fill("#e-content", "the corrected text")
    page.tab.fill("#e-tags", "new\nfixed")
    page.tab.fill("#e-scope", "")
    page.tab.fill("#e-ttl", "2")  # typing a lifetime picks "expires in"
    page.tab.select_option("#e-ttl-unit", "86400")
    page.tab.click("#e-save")
    page.tab.wait_for_selector("#d-status:text('Saved.')")
    saved = memory(daemon, m)
    assert (saved["content"], saved["tags"], saved["scope"]) == (
        "the corrected text",
        ["new", "fixed"],
        None,
    )
    assert saved["expires_at"] - saved["last_accessed"] == 2 * 86400
    assert page.text("#d-content") == "the corrected text"

    page.tab.fill("#e-ttl", "0")
    page.tab.click("#e-save")
    error = page.tab.locator("#e-ttl_secs-error")
    error.wait_for()
    assert (
        error.inner_text() == "invalid argument: ttl_secs must be between 1 and 3155760000 (got 0)"
    )
    page.tab.fill("#e-content", "   ")
    page.tab.click("#e-save")
    page.tab.locator("#e-content-error").wait_for()
    assert page.text("#e-content-error") == "invalid argument: content must be a non-empty string"
    assert memory(daemon, m) == saved  # refused whole: nothing written


def test_forget_asks_first_then_removes(page, daemon):
    m = store(daemon, "a stale note to forget", scope="forget")
    page.open(f"#/m/{m}")
    page.tab.click("#d-forget")
    assert page.tab.locator("#confirm").is_visible()
    assert f"Forget memory #{m}?" in page.text("#confirm-text")
    page.tab.click("#confirm button[value=cancel]")
    assert not page.tab.locator("#confirm").is_visible()
    assert "content" in memory(daemon, m)

    page.tab.click("#d-forget")
    page.tab.click("#confirm button[value=forget]")
    page.tab.wait_for_selector(f"#list-status:text('Memory #{m} is forgotten.')")
    assert memory(daemon, m) == {"id": m, "found": False, "reason": "not_found"}
    page.tab.wait_for_function(f"() => !{IDS_SHOWN}.includes({m})")  # the list reloads after
    assert page.tab.locator("#detail").is_hidden()
    page.open(f"#/m/{m}")
    page.tab.wait_for_selector(f"#d-status:text('There is no memory #{m}.')")


def test_link_unlink_and_the_graph(page, daemon):
    new = store(daemon, "cache entries for 10 minutes", "DECISION", scope="graph")
    old = store(daemon, "cache entries for 1 minute", "DECISION", scope="graph")
    why = store(daemon, "the cache missed on every deploy", "ERROR", scope="graph")
    daemon.request("POST", "/api/links", json={"from_id": old, "to_id": why, "kind": "caused_by"})
    page.open(f"#/m/{new}")
    page.tab.select_option("#l-kind", "supersedes:out")
    page.tab.fill("#l-other", str(old))
    page.tab.click("#link-form button[type=submit]")
    page.tab.wait_for_selector(f"#d-related a[href='#/m/{old}']")
    assert page.text("#d-related li").startswith(f"supersedes DECISION #{old}")
    related = memory(daemon, new)["related"]
    assert [(r["id"], r["kind"], r["direction"]) for r in related] == [(old, "supersedes", "out")]

    nodes = "[...document.querySelectorAll('#g-nodes a')].map((a) => Number(a.dataset.id)).sort((a, b) => a - b)"
    page.tab.wait_for_function(f"() => {nodes}.length === 3")  # a function: the CSP refuses eval
    assert page.tab.evaluate(f"() => {nodes}") == sorted([new, old, why])  # two hops out
    page.tab.check("input[name=hops][value='1']")
    page.tab.wait_for_function(f"() => {nodes}.length === 2")
    page.tab.click(f"#g-nodes a[data-id='{old}'] circle")  # move through the graph
    page.tab.wait_for_selector(f"#d-title:text('DECISION #{old}')")
    assert page.text("#d-related").count("#") == 2  # superseded by new, was caused by why

    page.tab.fill("#l-other", "999999")
    page.tab.click("#link-form button[type=submit]")
    page.tab.wait_for_selector("#l-error:text('There is no memory #999999.')")
    page.tab.fill("#l-other", "one")
    page.tab.click("#link-form button[type=submit]")
    page.tab.wait_for_selector("#l-error:text('must be an integer')")

    page.open(f"#/m/{new}")
    page.tab.click("#d-related button.unlink")
    page.tab.wait_for_selector("#d-status:text('Unlinked')")
    assert memory(daemon, new)["related"] == []
    assert memory(daemon, old)["related"][0]["id"] == why  # the other relation stays


def test_a_crowded_graph_draws_its_first_sixteen_neighbours(page, daemon):
    hub = store(daemon, "a hub with many relations", scope="crowd")
    for i in range(18):
        spoke = store(daemon, f"spoke {i}", scope="crowd")
        daemon.request(
            "POST", "/api/links", json={"from_id": spoke, "to_id": hub, "kind": "relates_to"}
        )
    page.open(f"#/m/{hub}")
    page.tab.wait_for_selector("#graph-note:text('2 more not drawn')")
    assert page.tab.locator("#g-nodes a").count() == 17
    assert page.tab.locator("#d-related li").count() == 18  # the list has them all


XSS = '<img src=x onerror="window.pwned=1;alert(1)"><script>window.pwned=2</script>'


def test_memory_text_stays_text_and_runs_no_script(page, daemon):
    m = store(daemon, f"xsscheck {XSS}", "ERROR", tags=[XSS], scope="<b>xss</b>")
    page.open()
    page.tab.fill("#q", "xsscheck")
    page.expect_shown([m])
    page.tab.click("#results a.item")
    page.tab.wait_for_selector(f"#d-title:text('ERROR #{m}')")
    assert page.text("#d-content") == f"xsscheck {XSS}"
    assert page.text("#results .tags") == XSS
    assert page.tab.locator("#d-fields").inner_text().count(XSS) == 1
    assert page.tab.locator("main img, #detail img, main script, #detail script, b").count() == 0
    assert page.tab.evaluate("() => window.pwned") is None
    assert page.dialogs == []
    # and the policy holds where the page itself would slip: no inline script, no inline style
    page.csp_reports_expected = True  # the two reports of this check
    page.tab.evaluate(
        """() => { const s = document.createElement('script'); s.textContent = 'window.pwned = 3';
        document.body.append(s); document.body.setAttribute('style', 'display: none'); }"""
    )
    assert page.tab.evaluate("() => window.pwned") is None
    assert page.tab.locator("#q").is_visible()


def test_the_keyboard_alone_does_everything(page, daemon):
    first = store(daemon, "keyboard walk one", scope="kbd")
    second = store(daemon, "keyboard walk two", scope="kbd")
    page.open()
    keys = page.tab.keyboard
    keys.press("/")
    assert page.focused() == "q"
    keys.type("keyboard walk")
    page.tab.wait_for_selector("#list-title:text('keyboard walk')")
    order = page.shown()
    assert sorted(order) == sorted([first, second])
    keys.press("ArrowDown")
    keys.press("Enter")
    page.tab.wait_for_selector(f"#d-title:text('TODO #{order[0]}')")
    assert page.focused() == "d-title"
    page.tab_to("e-tags")
    keys.type("typed-tag")
    page.tab_to("e-save")
    keys.press("Enter")
    page.tab.wait_for_selector("#d-status:text('Saved.')")
    assert memory(daemon, order[0])["tags"] == ["typed-tag"]

    page.tab_to("d-forget")
    keys.press("Enter")
    assert page.tab.evaluate("() => document.activeElement.value") == "cancel"  # "Keep it" first
    keys.press("Tab")
    assert page.tab.evaluate("() => document.activeElement.value") == "forget"
    keys.press("Enter")
    page.tab.wait_for_selector(f"#list-status:text('Memory #{order[0]} is forgotten.')")
    assert memory(daemon, order[0]).get("found") is False

    page.expect_shown([order[1]])
    assert page.focused() == "q"
    keys.press("ArrowDown")
    keys.press("Enter")
    page.tab.wait_for_selector(f"#d-title:text('TODO #{order[1]}')")
    keys.press("Escape")
    page.tab.wait_for_selector("#detail", state="hidden")
    assert page.tab.evaluate("() => document.activeElement.dataset.id") == str(order[1])


class OtherSite(BaseHTTPRequestHandler):
    """Another origin: a page that frames the daemon's page."""

    target = ""

    def do_GET(self) -> None:
        body = f'<!doctype html><title>elsewhere</title><iframe src="{self.target}/"></iframe>'.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def test_another_origin_can_neither_read_nor_write_nor_frame(chromium, daemon):
    handler = type("Handler", (OtherSite,), {"target": daemon.url})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    victim = store(daemon, "a memory another site wants", scope="origin")
    count = daemon.request("GET", "/api/stats").json()["memories"]
    context = chromium.new_context()
    try:
        tab = context.new_page()
        tab.goto(f"http://127.0.0.1:{server.server_port}/")
        outcome = tab.evaluate(
            """async ([target, victim]) => {
              const attempt = async (name, url, init) => {
                try { const r = await fetch(url, init); return [name, `HTTP ${r.status} ${await r.text()}`]; }
                catch (e) { return [name, 'blocked']; }
              };
              const body = JSON.stringify({content: 'planted from elsewhere', type: 'TODO'});
              return Object.fromEntries(await Promise.all([
                attempt('simple', target + '/api/memories', {method: 'POST', mode: 'no-cors',
                  headers: {'Content-Type': 'text/plain'}, body}),
                attempt('json', target + '/api/memories', {method: 'POST',
                  headers: {'Content-Type': 'application/json'}, body}),
                attempt('read', target + '/api/memories'),
                attempt('delete', target + '/api/memories/' + victim, {method: 'DELETE'}),
              ]));
            }""",
            [daemon.url, victim],
        )
        framed = tab.frame_locator("iframe").locator("#q").count()
    finally:
        context.close()
        server.shutdown()
        server.server_close()
    # the browser keeps the other site from reading or preflighting; the simple POST it
    # sends opaque (no-cors) is refused by the daemon, on the Origin and on the body type
    assert outcome == {
        "simple": "HTTP 0 ",
        "json": "blocked",
        "read": "blocked",
        "delete": "blocked",
    }
    assert daemon.request("GET", "/api/stats").json()["memories"] == count
    assert "content" in memory(daemon, victim)
    refused = daemon.request(
        "POST",
        "/api/memories",
        data='{"content": "planted", "type": "TODO"}',
        headers={"Origin": f"http://127.0.0.1:{server.server_port}", "Content-Type": "text/plain"},
    )
    assert refused.status_code == 403
    assert framed == 0  # frame-ancestors 'none': the page does not load in the frame


def test_who_wrote_a_memory_is_shown_and_filters(page, daemon):
    from agent_memory import storage
    from agent_memory.service.actor import acting_as
    from agent_memory.service.core import MemoryService

    mine = store(daemon, "okapi notes kept here", scope="writers")
    service = MemoryService(storage.open_store(str(daemon.db_path)))  # a second writer
    try:
        with acting_as("alice"):
            hers = service.store({"content": "okapi notes by alice", "type": "TODO"})["id"]
            service.update({"id": mine, "tags": ["seen"]})
    finally:
        service.close()
    page.open(f"#/m/{mine}")
    assert "Stored by\nlocal" in page.text("#d-fields")
    assert "Changed by\nalice" in page.text("#d-fields")
    assert sorted(page.listed(lambda: page.tab.fill("#f-by", "alice"))) == sorted([mine, hers])
    page.tab.fill("#f-scope", "writers")
    page.expect_shown([mine])
    page.tab.wait_for_url("**by=alice**")


def test_the_history_panel_lists_the_versions(page, daemon):
    m = store(daemon, "the first wording of the history case", scope="history")
    answer = daemon.request("PATCH", f"/api/memories/{m}", json={"content": "the second wording"})
    assert answer.status_code == 200, answer.text
    page.open(f"#/m/{m}")
    page.tab.wait_for_selector("#d-history li:nth-child(2)")
    items = page.tab.locator("#d-history li")
    assert items.count() == 2
    first, second = items.nth(0).inner_text(), items.nth(1).inner_text()
    assert first.startswith("v1 · written") and "replaced" in first
    assert "the first wording of the history case" in first
    assert "current" in second and "the second wording" in second


def test_the_tidy_panel_shows_the_clusters_of_the_scope(page, daemon):
    """The page asks GET /api/tidy for the scope filtered on and shows its clusters: the
    memory a merge keeps, those it would supersede; nothing is written."""
    older = store(daemon, "Deploys run the kudu migrations first, then restart the API", scope="td")
    newer = store(daemon, "Run the kudu migrations first on deploys; then restart API", scope="td")
    store(daemon, "The kudu design system uses an 8 pixel spacing grid.", scope="td")
    page.open()
    page.listed(lambda: page.tab.fill("#f-scope", "td"))
    with page.tab.expect_response(lambda r: "/api/tidy?scope=td" in r.url) as answer:
        page.tab.click("#tidy-show")
    report = answer.value.json()
    assert [(c["keep"]["id"], [m["id"] for m in c["merge"]]) for c in report["clusters"]] == [
        (newer, [older])
    ]
    page.tab.wait_for_selector("#tidy-clusters li.tidy-cluster")
    assert page.tab.locator("#tidy-clusters li.tidy-cluster").get_attribute("data-keep") == str(
        newer
    )
    ids = page.tab.locator("#tidy-clusters a.tidy-member").evaluate_all(
        "(links) => links.map((a) => Number(a.dataset.id))"
    )
    assert ids == [newer, older]
    assert "by keyword overlap" in page.text("#tidy-status")
    assert "in scope “td”" in page.text("#tidy-status")
    assert memory(daemon, older)["related"] == []  # a dry run: nothing was linked


def test_the_tidy_panel_says_when_no_member_holds_the_rest(page, daemon):
    """A cluster whose members each add their own words keeps none: the panel says that a
    merge needs --keep ID, and what words each member has that the one shown lacks."""
    rule = "Run the kudu migrations first on deploys, then restart the API"
    store(daemon, rule + "; notify ops", scope="tn")
    store(daemon, rule + "; page the owner", scope="tn")
    store(daemon, rule, scope="tn")
    page.open()
    page.listed(lambda: page.tab.fill("#f-scope", "tn"))
    page.tab.click("#tidy-show")
    page.tab.wait_for_selector("#tidy-clusters li.tidy-cluster")
    cluster = page.tab.locator("#tidy-clusters li.tidy-cluster")
    assert cluster.get_attribute("data-keep") is None
    text = cluster.inner_text()
    assert "merge with agent-memory tidy --apply --keep ID" in text
    assert "lacks:" in text and "supersedes" not in text
