"""Soak: the REST daemon under a steady load from 8 clients for a few minutes.

    .venv/bin/python -m bench.soak [--seconds 180] [--clients 8] [--json out.json]

Not part of the test suite (it runs for minutes). Each client is a thread with its own
keep-alive session, looping over a mix of searches (70%), stores (20%) and filtered lists
(10%) as fast as the daemon answers. Reported: requests served, errors (any status >= 500,
or a connection failure), p50/p99 latency, and the daemon's RSS at the start (after a warm
up), every 30 s, and at the end: it must level off, not grow without bound.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import threading
import time
from pathlib import Path

from bench import corpus
from bench._common import proc_mib
from tests.support.rest_daemon import RestDaemon

SEED_ROWS = 5_000
RSS_EVERY_SECS = 30


def client(daemon: RestDaemon, seed: int, stop: threading.Event, out: dict) -> None:
    import requests

    rng = random.Random(seed)
    session = requests.Session()
    memories = corpus.developer_memories(10**9, seed=seed)
    questions = corpus.questions(500, seed=seed)
    words = corpus.two_word_queries(500, seed=seed)
    while not stop.is_set():
        roll = rng.random()
        if roll < 0.7:
            query = rng.choice(questions if rng.random() < 0.5 else words)
            request = ("POST", "/api/search", {"query": query, "limit": 10})
        elif roll < 0.9:
            request = ("POST", "/api/memories", next(memories))
        else:
            request = ("GET", "/api/memories?type=DECISION&limit=20", None)
        method, path, body = request
        start = time.perf_counter()
        try:
            response = session.request(method, daemon.url + path, json=body, timeout=30)
            failure = (
                f"{response.status_code} {response.text[:200]}"
                if response.status_code >= 500
                else None
            )
        except requests.RequestException as exc:
            failure = repr(exc)[:200]
        out["latencies"].append(time.perf_counter() - start)
        if failure:
            out["errors"] += 1
            out["failures"].append(f"{method} {path}: {failure}")
    session.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="am-soak-") as tmp:
        db = Path(tmp) / "memory.db"
        daemon = RestDaemon(db, log_level="warning")
        daemon.drain_stderr()
        try:
            for memory in corpus.developer_memories(SEED_ROWS, seed=3):
                daemon.request("POST", "/api/memories", json=memory).raise_for_status()
            stop = threading.Event()
            results = [{"latencies": [], "errors": 0, "failures": []} for _ in range(args.clients)]
            threads = [
                threading.Thread(target=client, args=(daemon, i, stop, results[i]))
                for i in range(args.clients)
            ]
            for thread in threads:
                thread.start()
            time.sleep(min(10.0, args.seconds / 10))  # warm up before the first RSS reading
            samples = [(0.0, proc_mib("VmRSS", daemon.proc.pid))]
            started = time.monotonic()
            while (elapsed := time.monotonic() - started) < args.seconds:
                time.sleep(min(RSS_EVERY_SECS, args.seconds - elapsed))
                samples.append((time.monotonic() - started, proc_mib("VmRSS", daemon.proc.pid)))
            stop.set()
            for thread in threads:
                thread.join()
        finally:
            code = daemon.stop()
    latencies = sorted(x for r in results for x in r["latencies"])
    report = {
        "clients": args.clients,
        "seconds": args.seconds,
        "requests": len(latencies),
        "requests_per_s": len(latencies) / (args.seconds + min(10.0, args.seconds / 10)),
        "errors": sum(r["errors"] for r in results),
        "p50_ms": latencies[len(latencies) // 2] * 1e3,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1e3,
        "rss_mib": [round(rss, 1) for _, rss in samples],
        "exit_code": code,
    }
    report["failures"] = [f for r in results for f in r["failures"]][:20]
    lines = daemon.stderr_lines
    first = next((i for i, line in enumerate(lines) if "ERROR" in line), None)
    shown = [] if first is None else lines[first : first + 40]  # the traceback with it
    report["server_errors"] = [line.rstrip() for line in shown]
    for key, value in report.items():
        print(f"{key:>15}: {value:,.2f}" if isinstance(value, float) else f"{key:>15}: {value}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
