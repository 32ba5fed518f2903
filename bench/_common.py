"""What the bench scripts share: percentiles, tables, timing, /proc readings, spawning
``agent-memory`` and ``python -m bench.NAME``, the JSONL that loads a corpus, and a throwaway
PostgreSQL.

Kept light on imports: scripts that measure their own process's memory import this first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from tests.support.spawned import executable as agent_memory_cmd

__all__ = [
    "ROOT",
    "agent_memory_cmd",
    "call",
    "child_peak_rss_mib",
    "clean_env",
    "clip",
    "export_header",
    "log",
    "machine",
    "module_cmd",
    "pct",
    "proc_mib",
    "recall_at",
    "run_module",
    "table",
    "throwaway_postgres",
    "timed",
]

# The repository root: ``python -m bench.NAME`` runs from here.
ROOT = Path(__file__).resolve().parent.parent
# The export format the bench's JSONL files claim to be (agent-memory imports them).
EXPORT_SCHEMA_VERSION = 4
EXPORT_MODEL = "nomic-embed-text"
EXPORT_DIM = 768

T = TypeVar("T")


def pct(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank: the value below which a share q of them lie."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def recall_at(found: Sequence[Sequence[int]], truth: Sequence[Sequence[int]], k: int) -> float:
    """The share of each query's true first ``k`` (at most ``k``, fewer when fewer exist) that
    its found first ``k`` hold, over the queries found."""
    hits = sum(
        len(set(f[:k]) & {int(i) for i in t[:k]}) for f, t in zip(found, truth, strict=False)
    )
    return hits / sum(min(k, len(t)) for t in truth[: len(found)])


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at a space so no word is halved."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip()


def table(head: Sequence[str], rows: Iterable[Sequence[Any]], align: str = "") -> str:
    """A Markdown table. ``align`` holds one of l/r per column (default: first left, rest
    right); floats print with thousands separators and two decimals."""
    align = align or "l" + "r" * (len(head) - 1)
    marks = ["---:" if a == "r" else "---" for a in align]

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:,.2f}"
        if isinstance(value, int) and not isinstance(value, bool):
            return f"{value:,}"
        return "" if value is None else str(value)

    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(marks) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def timed(fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[float, T]:
    """Seconds ``fn(*args, **kwargs)`` took on the wall clock, and what it returned."""
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - start, result


def log(message: str) -> None:
    """A timestamped progress line on stderr (stdout holds the results)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def machine() -> str:
    """The line that goes under every table: CPUs, load average and Python."""
    load = os.getloadavg()[0]
    return f"machine: {os.cpu_count()} cpus, load {load:.2f}, python {sys.version.split()[0]}"


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without the caller's AGENT_MEMORY_* settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
    env.update(extra)
    return env


def module_cmd(name: str, *args: str) -> list[str]:
    """The command line of ``python -m bench.NAME ARGS`` (run it with ``cwd=ROOT``)."""
    return [sys.executable, "-m", f"bench.{name}", *args]


def run_module(name: str, *args: str, **kwargs: Any) -> subprocess.CompletedProcess:
    """Run another bench script (or this one again) in a fresh process, from the root."""
    return subprocess.run(module_cmd(name, *args), cwd=ROOT, **kwargs)


def proc_mib(field: str = "VmRSS", pid: int | str = "self") -> float:
    """A memory figure of /proc/PID/status (VmRSS now, VmHWM the peak) in MiB; Linux only.
    Not getrusage: its ru_maxrss survives exec, so a child would report its parent's peak."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child_peak_rss_mib() -> float:
    """The largest VmHWM among this process's children (the one server running now)."""
    peak = 0.0
    me = str(os.getpid())
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat.rsplit(")", 1)[1].split()[1] != me:
                continue
            peak = max(peak, proc_mib("VmHWM", pid))
        except (OSError, IndexError, ValueError):
            continue
    return peak


async def call(client: Any, request: tuple[str, dict]) -> float:
    """Seconds one MCP tool call took; a tool error stops the bench."""
    start = time.perf_counter()
    result = await client.call_tool(*request)
    elapsed = time.perf_counter() - start
    if result.is_error:
        text = "".join(getattr(part, "text", "") for part in result.content)
        raise RuntimeError(f"{request[0]} failed: {text[:200]}")
    return elapsed


def export_header(rows: int, links: int = 0, now: int | None = None) -> str:
    """The first line of a JSONL export holding ``rows`` memories and ``links`` links."""
    from agent_memory import __version__
    from agent_memory.transfer import jsonl

    return jsonl.line(
        jsonl.header(
            exported_at=int(time.time()) if now is None else now,
            embedding_model=EXPORT_MODEL,
            embedding_dim=EXPORT_DIM,
            schema_version=EXPORT_SCHEMA_VERSION,
            agent_memory_version=__version__,
            exported_rows=rows,
            exported_links=links,
        )
    )


@contextmanager
def throwaway_postgres(name: str | None = "bench", extensions: Sequence[str] = ()) -> Iterator[str]:
    """A throwaway PostgreSQL 18 (tests/support/postgres_server.py: the test extra's binaries,
    no fsync, a Unix socket), stopped and removed when the block ends. Yields the URL of a new
    database ``name`` on it with ``extensions`` created, or with ``name=None`` the server's
    own URL (its maintenance database, to make databases on)."""
    import psycopg
    from psycopg import sql

    from tests.support.pg_fixtures import database_url
    from tests.support.postgres_server import PostgresServer

    server = PostgresServer()
    server.start()
    try:
        if name is None:
            yield server.url
            return
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        url = database_url(server.url, name)
        with psycopg.connect(url, autocommit=True) as conn:
            for extension in extensions:
                conn.execute(sql.SQL("CREATE EXTENSION {}").format(sql.Identifier(extension)))
        yield url
    finally:
        server.stop()


class TreeWorker:
    """A worker process of ``script`` (run as a file, ``--worker ARG``) importing
    agent_memory from ``code``: the benches that run an older tree beside this one
    (``--before DIR``) ask each a JSON line and read one back."""

    def __init__(self, name: str, code: Path, script: str, arg: str) -> None:
        env = clean_env(PYTHONPATH=f"{Path(code).resolve()}{os.pathsep}{ROOT}")
        # run as a file, from a neutral directory: the older tree may have no such module
        command = [sys.executable, str(Path(script).resolve()), "--worker", arg]
        self.name = name
        self.proc = subprocess.Popen(
            command,
            env=env,
            cwd=tempfile.gettempdir(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        log(f"{name}: {json.loads(self.stdout.readline())['ready']}")

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        self.stdin.write(json.dumps(request) + "\n")
        self.stdin.flush()
        return json.loads(self.stdout.readline())

    def close(self) -> None:
        self.stdin.close()
        self.proc.wait(timeout=60)
