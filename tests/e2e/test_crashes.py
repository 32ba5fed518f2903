"""kill -9 at the worst moments: mid-stream of stores, mid-migration, mid-import.

A killed process gets no chance to clean up, so what survives is what SQLite committed.
Every store the server acknowledged must survive, the indexes must stay consistent, the
next start must be normal; a migration is all or nothing; an import is all or nothing per
batch, and running it again completes it without duplicates.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import sqlean

from agent_memory.storage import open_store
from agent_memory.storage.sqlite.database import head_revision
from agent_memory.transfer import jsonl
from tests.support.files import check_consistent, dump
from tests.support.paths import FIXTURES
from tests.support.spawned import executable, run_agent_memory, server_env

ROUNDS = 8
STORES_PER_ROUND = 150
DEADLINE_SECS = 60


def rpc(id_: int | None, method: str, params: dict | None = None) -> str:
    message: dict = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        message["id"] = id_
    if params is not None:
        message["params"] = params
    return json.dumps(message) + "\n"


HELLO = rpc(
    0,
    "initialize",
    {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "crash-test", "version": "0"},
    },
) + rpc(None, "notifications/initialized")


def test_acknowledged_stores_survive_kill_9_mid_stream(db_path):
    rng = random.Random(9)
    acknowledged: list[str] = []
    for round_ in range(ROUNDS):
        proc = subprocess.Popen(
            [executable(), "--db", str(db_path), "--log-level", "warning", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=server_env(),
        )
        contents = [f"crash round {round_} store {i}" for i in range(STORES_PER_ROUND)]
        stores = "".join(
            rpc(
                i + 1,
                "tools/call",
                {"name": "memory_store", "arguments": {"content": c, "type": "TODO"}},
            )
            for i, c in enumerate(contents)
        )
        proc.stdin.write(HELLO + stores)  # the whole stream at once: the server is busy when killed
        proc.stdin.flush()
        hello = json.loads(proc.stdout.readline())
        assert hello["id"] == 0 and "serverInfo" in hello["result"]  # a normal start, every round
        kill_after = rng.randint(1, STORES_PER_ROUND - 20)
        for _ in range(kill_after):
            answer = json.loads(proc.stdout.readline())
            assert answer["result"]["structuredContent"]["id"] > 0
            acknowledged.append(contents[answer["id"] - 1])
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=DEADLINE_SECS)
        assert proc.returncode == -signal.SIGKILL

    conn = check_consistent(db_path)
    try:
        stored = [row[0] for row in conn.execute("SELECT content FROM memories")]
        assert len(stored) == len(set(stored))  # nothing doubled
        assert set(acknowledged) <= set(stored)  # nothing acknowledged lost
        # The index answers for them too.
        hits = conn.execute(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'crash'"
        ).fetchone()
        assert hits == (len(stored),)
    finally:
        conn.close()
    assert run_agent_memory("--db", str(db_path), "export").returncode == 0


def kill_after(delay: float, *args: str) -> None:
    """Run agent-memory with ``args``; kill -9 it if it is still running after ``delay`` s."""
    proc = subprocess.Popen(
        [executable(), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=server_env(),
    )
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=DEADLINE_SECS)


def old_database(tmp_path: Path) -> Path:
    path = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "memory-0001.db", path)
    return path


# Kill points spread from the first import to after the commit: wherever the kill lands, the
# outcome must be one of the two states (the assertion does not depend on the timing).
@pytest.mark.parametrize("delay", [0.05, 0.2, 0.35, 0.5, 0.7, 0.9, 1.2, 1.6])
def test_kill_9_during_migration_leaves_old_or_new(tmp_path, delay):
    path = old_database(tmp_path)
    before = dump(path)
    conn = sqlean.connect(str(path))
    contents = sorted(row[0] for row in conn.execute("SELECT content FROM memories"))
    conn.close()
    kill_after(delay, "--db", str(path), "export", "--output", str(tmp_path / "out.jsonl"))
    conn = sqlean.connect(str(path))
    try:
        version = int(conn.execute("SELECT version_num FROM alembic_version").fetchone()[0])
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    assert version in (1, head_revision())
    if version == 1:
        assert dump(path) == before  # untouched: the migration's transaction never committed
    # Either way the next open completes normally and keeps every row.
    result = run_agent_memory("--db", str(path), "export")
    assert result.returncode == 0, result.stderr
    exported = [json.loads(line) for line in result.stdout.splitlines()[1:]]
    assert sorted(r["content"] for r in exported if r["record"] == "memory") == contents


def write_export(path: Path, rows: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.write(
            jsonl.line(
                jsonl.header(
                    exported_at=1_767_225_600,
                    embedding_model="nomic-embed-text",
                    embedding_dim=768,
                    schema_version=head_revision(),
                    agent_memory_version="0",
                    exported_rows=rows,
                    exported_links=0,
                )
            )
        )
        for key in range(1, rows + 1):
            record = {
                "record": "memory",
                "key": key,
                "type": "PATTERN",
                "content": f"imported row {key}",
                "tags": ["crash"],
                "source": None,
                "scope": None,
                "created_at": 1_767_225_600,
                "last_accessed": 1_767_225_600,
                "access_count": 0,
                "expires_at": None,
            }
            out.write(jsonl.line(record))


@pytest.mark.parametrize("delay", [0.3, 0.8, 1.4, 2.2])
def test_kill_9_during_import_keeps_whole_batches_and_a_rerun_completes(db_path, tmp_path, delay):
    source = tmp_path / "big.jsonl"
    rows = 12_000
    write_export(source, rows)
    open_store(db_path).close()  # created at head
    arguments = ("--db", str(db_path), "import", "--from", "jsonl", str(source))
    kill_after(delay, *arguments)
    conn = check_consistent(db_path)
    try:
        landed = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    finally:
        conn.close()
    assert landed % 1_000 == 0  # whole batches (IMPORT_BATCH_ROWS) or nothing
    rerun = subprocess.run(
        [executable(), *arguments], capture_output=True, text=True, env=server_env(), timeout=120
    )
    assert rerun.returncode == 0, rerun.stderr
    assert (
        f"imported: {rows - landed}, skipped duplicates: {landed}," in rerun.stdout + rerun.stderr
    )
    conn = check_consistent(db_path)
    try:
        contents = [r[0] for r in conn.execute("SELECT content FROM memories")]
    finally:
        conn.close()
    assert len(contents) == len(set(contents)) == rows
