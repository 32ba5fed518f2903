"""Peak memory of an unlimited list: REST `GET /api/memories` and MCP `memory_list`.

    .venv/bin/python -m bench.list_memory [--count 150] [--size 1048576] [--json out.json]

Fills a temporary database through the service with COUNT memories of SIZE bytes of ASCII
text each, then starts a real `agent-memory serve-rest` and a real `agent-memory serve`
(stdio, driven with raw JSON-RPC lines) and has each answer one unlimited list. For each
daemon it prints its resident memory before the request (VmRSS), its peak while answering
(VmHWM, restarted just before the request through /proc/PID/clear_refs) and after (VmRSS),
read from /proc/PID/status, and the size of the answer on the wire. Each daemon is measured
once its start-up sweep has logged its line. The rows are marked embedded (as if an earlier
Ollama had embedded them; a list never reads vectors): with Ollama absent, the sweep's
backfill of pending rows loads a batch of their contents, a cost of its own (kept by the
allocator afterwards) that would otherwise blur the list's figures.
--pending keeps them pending to show it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sqlite3
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import IO

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from bench._common import agent_memory_cmd, clean_env

MIB = 1024 * 1024
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india")


SWEEP_LINE = "sweep: "
SWEEP_WAIT_SECS = 300


def drain(stream: IO[bytes], seen: dict[str, threading.Event]) -> None:
    """Read a daemon's stderr to the end, setting the event of each text once it appears."""
    for line in stream:
        for text, event in seen.items():
            if text.encode() in line:
                event.set()


def watch(proc: subprocess.Popen, *texts: str) -> dict[str, threading.Event]:
    seen = {text: threading.Event() for text in texts}
    assert proc.stderr is not None
    threading.Thread(target=drain, args=(proc.stderr, seen), daemon=True).start()
    return seen


def launch(args: list[str], **kwargs: int) -> subprocess.Popen:
    return subprocess.Popen(args, stderr=subprocess.PIPE, env=clean_env(), **kwargs)


def fill(db: Path, count: int, size: int) -> None:
    svc = MemoryService(open_store(db), max_content_bytes=size)
    try:
        for i in range(count):
            text = " ".join(f"{WORDS[(i + j) % len(WORDS)]}{j % 997}" for j in range(size // 6))
            svc.store({"content": text[:size], "type": "PATTERN", "tags": [f"t{i % 7}"]})
    finally:
        svc.close()


def mark_embedded(db: Path) -> None:
    """No row pending embedding, so no backfill runs beside the list being measured."""
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE memories SET embedding_status = 1")
    conn.close()


def status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of ``pid`` in MiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            out[name] = int(value.split()[0]) // 1024
    return out


def reset_peak(pid: int) -> int:
    """Restart ``pid``'s VmHWM from its current RSS (clear_refs 5); that RSS in MiB."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return status(pid)["VmRSS"]


def figures(pid: int, before: int, wire: int) -> dict[str, int]:
    now = status(pid)
    return {"before": before, "peak": now["VmHWM"], "after": now["VmRSS"], "wire": wire}


def command(db: Path, size: int, *args: str) -> list[str]:
    return [
        agent_memory_cmd(),
        "--db",
        str(db),
        "--log-level",
        "info",
        "--max-content-bytes",
        str(size),
        *args,
    ]


def rest(db: Path, size: int, count: int) -> dict[str, int]:
    proc = launch(command(db, size, "serve-rest", "--addr", "127.0.0.1:0"))
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith(b"REST listening on "):
                host, port = line.decode().split()[-1].rsplit(":", 1)
                break
        swept = watch(proc, SWEEP_LINE)[SWEEP_LINE]
        conn = http.client.HTTPConnection(host, int(port), timeout=600)
        conn.request("GET", "/health")
        conn.getresponse().read()
        assert swept.wait(SWEEP_WAIT_SECS)
        before = reset_peak(proc.pid)
        conn.request("GET", "/api/memories")
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200, response.status
        assert len(json.loads(body)) == count
        return figures(proc.pid, before, len(body))
    finally:
        proc.terminate()
        proc.wait()


def _send(proc: subprocess.Popen, message: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def mcp(db: Path, size: int, count: int) -> dict[str, int]:
    proc = launch(command(db, size, "serve"), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    swept = watch(proc, SWEEP_LINE)[SWEEP_LINE]
    assert proc.stdout is not None
    try:
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}})  # fmt: skip
        json.loads(proc.stdout.readline())
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        json.loads(proc.stdout.readline())
        assert swept.wait(SWEEP_WAIT_SECS)
        before = reset_peak(proc.pid)
        _send(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                     "params": {"name": "memory_list", "arguments": {}}})  # fmt: skip
        line = proc.stdout.readline()
        row = figures(proc.pid, before, len(line))
        result = json.loads(line)["result"]
        assert len(result["structuredContent"]["memories"]) == count
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
        return row
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=150)
    parser.add_argument("--size", type=int, default=MIB)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--db", type=Path, help="reuse this database (filled when absent)")
    parser.add_argument("--pending", action="store_true", help="leave rows pending embedding")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = opts.db or Path(tmp) / "memory.db"
        if not db.exists():
            fill(db, opts.count, opts.size)
        if not opts.pending:
            mark_embedded(db)
        data = opts.count * opts.size / MIB
        rows = {"REST GET /api/memories": rest(db, opts.size, opts.count)}
        rows["MCP memory_list"] = mcp(db, opts.size, opts.count)
    print(f"{opts.count} memories of {opts.size} bytes ({data:.0f} MiB of content)")
    print(f"{'surface':<24}{'before MiB':>11}{'peak MiB':>10}{'after MiB':>10}{'wire MiB':>10}")
    for name, row in rows.items():
        wire = row["wire"] / MIB
        print(f"{name:<24}{row['before']:>11}{row['peak']:>10}{row['after']:>10}{wire:>10.0f}")
    if opts.json:
        opts.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
