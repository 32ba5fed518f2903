"""The web page at 100,000 memories, timed in a real headless Chromium (Playwright).

    .venv/bin/python -m bench.web_page [--size 100000] [--keep DIR] [--runs 15] [--json out.json]

A database of developer memories (bench/corpus.py, loaded through `agent-memory import` as
bench/run.py does, with a few hundred relations) is served by the real `agent-memory
serve-rest`. Then, in Debian's Chromium:

- first paint: a new browser context per run (nothing cached) loads `/`; when the HTML is
  in, the browser's first-contentful-paint, and when the first page of memories is on
  screen (the page's `list:shown` mark), all from the start of navigation; and a floor:
  the first paint of the same HTML with its style, scripts and icon refused (what a new tab
  and a first paint cost this browser on this machine, whatever the page);
- search round trip: for each question, the same search sent by the page itself (typing in
  the box: from the request leaving, `search:sent`, to the 50 results drawn, `search:shown`;
  the 150 ms debounce before it is the page's choice and not counted) and by a bare
  `fetch` in the same page (request to parsed JSON). Their difference is what the page adds.
  The two alternate in order, so neither always meets a warmer cache;
- the API figures the page depends on: /api/stats, and a page of the list at the head and
  99 % deep (by the `before` cursor), from Python.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests

from bench import corpus
from bench._common import pct
from bench.run import AgentMemory
from tests.support import browser
from tests.support.rest_daemon import RestDaemon

LINKS = 500  # relations among the newest memories, so the graph has something to draw
QUESTIONS = 40
API_RUNS = 30
# Functions, not expressions: Playwright evaluates an expression string with eval, which the
# page's Content-Security-Policy (rightly) refuses.
SHOWN_OR_FAILED = """() => performance.getEntriesByName('list:shown').length > 0
  || document.querySelector('.is-error') !== null"""
PAINTED = "() => performance.getEntriesByName('first-contentful-paint').length > 0"
PAINT = """() => {
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  const shown = performance.getEntriesByName('list:shown')[0];
  const page = performance.getEntriesByType('navigation')[0];
  return {fcp: paint ? paint.startTime : null, shown: shown ? shown.startTime : null,
    html: page.responseEnd};
}"""
PAGE_SEARCH = """async (query) => {
  performance.clearMarks();
  const box = document.getElementById('q');
  box.value = query;
  box.dispatchEvent(new Event('input', {bubbles: true}));
  while (!performance.getEntriesByName('search:shown').length) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const sent = performance.getEntriesByName('search:sent').at(-1).startTime;
  return performance.getEntriesByName('search:shown').at(-1).startTime - sent;
}"""
API_SEARCH = """async (query) => {
  const start = performance.now();
  const answer = await fetch('/api/search', {method: 'POST',
    headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({query, limit: 50, record_use: false})});
  await answer.json();
  return performance.now() - start;
}"""


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(values), 1),
        "p95": round(pct(values, 0.95), 1),
        "max": round(max(values), 1),
    }


def build(workdir: Path, size: int) -> Path:
    system = AgentMemory(workdir)
    if not system.db.exists():
        system.load(list(corpus.developer_memories(size)))
        from agent_memory.service.core import MemoryService
        from agent_memory.storage import open_store

        service = MemoryService(open_store(system.db))
        kinds = ("relates_to", "supersedes", "caused_by")
        for i in range(LINKS):
            a, b = size - i, size - i - 1 - (i * 7) % 40
            service.link({"from_id": a, "to_id": b, "kind": kinds[i % 3]})
        service.close()
    return system.db


def first_paint(chromium, url: str, runs: int) -> dict[str, dict[str, float]]:
    figures: dict[str, list[float]] = {"html": [], "fcp": [], "shown": [], "floor": []}
    for run in range(runs + 1):  # the first is not counted: the browser's own first start
        context = chromium.new_context(viewport={"width": 1400, "height": 900})
        tab = context.new_page()
        tab.goto(url)
        tab.wait_for_function(SHOWN_OR_FAILED)
        failed = tab.locator(".is-error")
        if failed.count():
            sys.exit(f"the page failed: {failed.first.inner_text()}")
        tab.wait_for_function(PAINTED)
        found = tab.evaluate(PAINT)
        context.close()
        # the floor: the same HTML with its style, scripts and icon refused, so what is left
        # is the browser's own cost of a new tab and a first paint
        context = chromium.new_context(viewport={"width": 1400, "height": 900})
        tab = context.new_page()
        tab.route("**/assets/*", lambda route: route.abort())
        tab.goto(url)
        tab.wait_for_function(PAINTED)
        floor = tab.evaluate(PAINT)["fcp"]
        context.close()
        if run:
            for name in ("html", "fcp", "shown"):
                figures[name].append(found[name])
            figures["floor"].append(floor)
    return {
        "html_received_ms": summary(figures["html"]),
        "first_contentful_paint_ms": summary(figures["fcp"]),
        "memories_shown_ms": summary(figures["shown"]),
        "floor_first_paint_ms": summary(figures["floor"]),
    }


def search_round_trips(chromium, url: str) -> dict[str, dict[str, float]]:
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.goto(url)
    tab.wait_for_function(SHOWN_OR_FAILED)
    questions = corpus.questions(QUESTIONS + 5)
    for question in questions[:5]:  # warm the daemon's caches and the page's code paths
        tab.evaluate(API_SEARCH, question)
        tab.evaluate(PAGE_SEARCH, question)
    page_ms, api_ms, added = [], [], []
    for i, question in enumerate(questions[5:]):
        if i % 2:
            api = tab.evaluate(API_SEARCH, question)
            page = tab.evaluate(PAGE_SEARCH, question)
        else:
            page = tab.evaluate(PAGE_SEARCH, question)
            api = tab.evaluate(API_SEARCH, question)
        page_ms.append(page)
        api_ms.append(api)
        added.append(page - api)
    context.close()
    return {
        "page_ms": summary(page_ms),
        "api_ms": summary(api_ms),
        "page_minus_api_ms": summary(added),
    }


def api_figures(url: str, db: Path) -> dict[str, dict[str, float]]:
    with sqlite3.connect(db) as conn:  # a cursor 99 % of the way down the list
        (total,) = conn.execute("SELECT count(*) FROM memories").fetchone()
        created, memory_id = conn.execute(
            "SELECT created_at, id FROM memories ORDER BY created_at DESC, id DESC LIMIT 1 "
            "OFFSET ?",
            (int(0.99 * total),),
        ).fetchone()
    conn.close()
    session = requests.Session()
    requests_by_name = {
        "stats_ms": ("/api/stats", None),
        "list_head_ms": ("/api/memories", {"limit": 51}),
        "list_99pct_deep_ms": ("/api/memories", {"limit": 51, "before": f"{created}:{memory_id}"}),
    }
    figures: dict[str, list[float]] = {name: [] for name in requests_by_name}
    for _ in range(API_RUNS):
        for name, (path, params) in requests_by_name.items():
            start = time.perf_counter()
            answer = session.get(f"{url}{path}", params=params)
            assert answer.status_code == 200 and answer.json() is not None
            figures[name].append((time.perf_counter() - start) * 1e3)
    return {name: summary(values) for name, values in figures.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, help="reuse (or leave) the database in DIR")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    reason = browser.missing()
    if reason:
        sys.exit(reason)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="am-web-"))
    workdir.mkdir(parents=True, exist_ok=True)
    db = build(workdir, args.size)
    from playwright.sync_api import sync_playwright

    with RestDaemon(db, log_level="warning") as daemon, sync_playwright() as playwright:
        daemon.drain_stderr()
        chromium = browser.launch(playwright)
        results = {
            "size": args.size,
            **first_paint(chromium, f"{daemon.url}/", args.runs),
            "search": search_round_trips(chromium, f"{daemon.url}/"),
            **api_figures(daemon.url, db),
        }
        chromium.close()
        daemon.stop()
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
