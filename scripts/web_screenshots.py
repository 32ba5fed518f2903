"""The README's pictures of the web page: docs/images/web-*.png.

    .venv/bin/python -m scripts.web_screenshots [--out docs/images]

A small database of one project's memories, with relations, served by the real
`agent-memory serve-rest` and photographed in Debian's headless Chromium (Playwright).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from tests.support import browser
from tests.support.rest_daemon import RestDaemon

ROOT = Path(__file__).resolve().parents[1]
VIEWPORT = {"width": 1360, "height": 860}
TALL = {"width": 1360, "height": 1240}  # one memory: its text, fields, relations and graph
DAY = 86_400
# (type, content, tags, scope)
MEMORIES = [
    (
        "DECISION",
        "Use SQLite in WAL mode with one writer connection for the shared memory file: "
        "every agent runtime on the machine opens the same database.",
        ["sqlite", "storage"],
        "kore-runtime",
    ),
    (
        "ARCHITECTURE",
        "Transports (MCP stdio, REST, CLI) parse, call one service method and map "
        "errors; validation lives in the service only.",
        ["design"],
        "kore-runtime",
    ),
    (
        "CONSTRAINT",
        "The REST daemon binds loopback only; --allow-remote is needed for anything "
        "else, since the API has no authentication.",
        ["security", "rest"],
        "kore-runtime",
    ),
    (
        "ERROR",
        "database is locked during the nightly import: the sweep held the write lock for "
        "200 ms; fixed by batching to about 12 ms per transaction.",
        ["sqlite", "sweep"],
        "kore-runtime",
    ),
    (
        "DECISION",
        "Replace the 5 s busy timeout with 30 s: a writer waiting for the lock behind "
        "a migration must wait, not fail.",
        ["sqlite"],
        "kore-runtime",
    ),
    (
        "PATTERN",
        "Every tunable is a CAPS constant at the top of its module, with the measurement "
        "that chose the value.",
        ["style"],
        "kore-runtime",
    ),
    (
        "TODO",
        "Page the memory list by a keyset cursor so the viewer stays fast at 100,000 memories.",
        ["web", "perf"],
        "kore-runtime",
    ),
    (
        "ERROR",
        "Kafka consumer times out against the staging cluster after the broker upgrade; "
        "raised session.timeout.ms to 45 s.",
        ["kafka"],
        "billing",
    ),
    (
        "DECISION",
        "Billing exports are written as JSON lines, one invoice per line, UTC timestamps.",
        ["export", "billing"],
        "billing",
    ),
    (
        "TODO",
        "Move the rate limiter from Redis to the gateway once the new gateway ships.",
        ["rate-limit"],
        "platform",
    ),
    ("CONSTRAINT", "Signed download URLs expire after one hour.", ["security"], "platform"),
    ("PATTERN", "Retries use exponential backoff with jitter, capped at 30 s.", ["retry"], None),
    (
        "ARCHITECTURE",
        "Readers never take the write lock: a long read only delays the WAL checkpoint.",
        ["sqlite"],
        "kore-runtime",
    ),
]
# (from, to, kind) by position in MEMORIES
LINKS = [
    (4, 0, "relates_to"),
    (3, 0, "caused_by"),
    (4, 3, "caused_by"),
    (2, 1, "relates_to"),
    (6, 1, "relates_to"),
    (5, 1, "relates_to"),
    (7, 11, "relates_to"),
    (12, 0, "relates_to"),
]


def seed(daemon: RestDaemon) -> list[int]:
    ids = []
    for memory_type, content, tags, scope in MEMORIES:
        body = {"content": content, "type": memory_type, "tags": tags}
        if scope:
            body["scope"] = scope
        if memory_type == "TODO":
            body["ttl_secs"] = 30 * DAY
        ids.append(daemon.request("POST", "/api/memories", json=body).json()["id"])
    for a, b, kind in LINKS:
        edge = {"from_id": ids[a], "to_id": ids[b], "kind": kind}
        daemon.request("POST", "/api/links", json=edge)
    return ids


def shoot(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="am-shots-"))
    with RestDaemon(work / "memory.db", log_level="warning") as daemon, sync_playwright() as pw:
        daemon.drain_stderr()
        ids = seed(daemon)
        chromium = browser.launch(pw)
        tab = chromium.new_context(viewport=VIEWPORT, color_scheme="light").new_page()
        tab.goto(f"{daemon.url}/")
        tab.wait_for_selector("#results li")
        tab.wait_for_selector("#total:not(:empty)")
        tab.screenshot(path=out / "web-browse.png")

        tab.fill("#q", "lock")
        tab.wait_for_selector("#list-title:text('lock')")
        with tab.expect_response(lambda r: r.url.endswith("/api/search")):
            tab.fill("#f-scope", "kore-runtime")
        tab.wait_for_selector("#results li")
        tab.screenshot(path=out / "web-search.png")

        tab.fill("#q", "")
        tab.fill("#f-scope", "")
        tab.set_viewport_size(TALL)
        tab.goto(f"{daemon.url}/#/m/{ids[0]}")
        tab.wait_for_selector("#g-nodes a")
        tab.wait_for_timeout(300)  # the second ring arrives after the first
        tab.screenshot(path=out / "web-memory.png")
        tab.set_viewport_size(VIEWPORT)

        tab.fill("#e-ttl", "0")
        tab.click("#e-save")
        tab.wait_for_selector("#e-ttl_secs-error:not(:empty)")
        tab.locator("#edit-form").scroll_into_view_if_needed()
        tab.screenshot(path=out / "web-edit.png")
        chromium.close()
        daemon.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    reason = browser.missing()
    if reason:
        sys.exit(reason)
    shoot(args.out)


if __name__ == "__main__":
    main()
