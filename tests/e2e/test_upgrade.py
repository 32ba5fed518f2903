"""Upgrading real old files with spawned servers: a genuine backup, refusals, concurrent
starts migrating once, interrupted backups cleaned up."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import sqlean

from agent_memory.storage.sqlite import database as db
from agent_memory.storage.sqlite.backups import remove_stray_temps, stray_backup_temps
from tests.support.files import file_hashes
from tests.support.spawned import executable, run_agent_memory, server_env
from tests.support.upgrade import ALL_FIXTURES, HEAD, OLD_FIXTURES, ROWS, copy_fixture, query, today

# Rounds of the start-up race tests: 7 each keeps the whole suite within its 10 minutes on
# two cores (20 each took about 100 s of it; 10 each, 58 s, left the run at 9.9 minutes).
ROUNDS = 7


@pytest.mark.parametrize("fixture", OLD_FIXTURES, ids=lambda p: p.stem)
def test_backup_is_a_genuine_self_contained_pre_migration_copy(fixture, tmp_path):
    path = copy_fixture(fixture, tmp_path)
    before = query(path, ROWS)
    db.open_database(path).close()
    backup = tmp_path / f"memory.db.backup-pre-{HEAD:04d}-{today()}"
    assert backup.is_file()
    assert query(backup, "SELECT version_num FROM alembic_version") == [(fixture.stem[-4:],)]
    assert query(backup, ROWS) == before
    assert backup.read_bytes()[18:20] == b"\x01\x01"  # rollback journal, not WAL: one file
    assert not Path(f"{backup}-wal").exists()
    assert [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name] == []
    sqlite3 = shutil.which("sqlite3")
    if sqlite3 is None:
        pytest.skip("the sqlite3 command-line shell is not installed")
    out = subprocess.run(
        [sqlite3, str(backup), "SELECT count(*) FROM memories"], capture_output=True, text=True
    )
    assert out.stdout.strip() == str(len(before))


def test_unwritable_backup_stops_the_server(tmp_path):
    path = copy_fixture(OLD_FIXTURES[0], tmp_path)
    blocker = tmp_path / f"memory.db.backup-pre-{HEAD:04d}-{today()}"
    blocker.mkdir()  # a directory where the backup must go: stops root too
    proc = run_agent_memory("--db", str(path), "serve")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"cannot back up the database to {blocker} before migrating (")
    assert lines[0].endswith("the database was not migrated")
    assert db.read_revision(path) == int(OLD_FIXTURES[0].stem[-4:])


def _make_newer(path: Path, version: int) -> None:
    conn = sqlean.connect(str(path))
    conn.execute(f"UPDATE alembic_version SET version_num = '{version:04d}'")
    conn.commit()
    conn.close()


def test_newer_database_is_refused_byte_identical(tmp_path):
    path = tmp_path / "memory.db"
    db.open_database(path).close()  # a WAL-mode file, cleanly closed: no -wal, no -shm
    _make_newer(path, HEAD + 1)
    assert query(path, "PRAGMA journal_mode") == [("wal",)]
    before = file_hashes(path)
    assert before["-wal"] is None and before["-shm"] is None
    proc = run_agent_memory("--db", str(path), "serve")
    assert proc.returncode == 1
    assert proc.stderr == (
        f"database schema is version {HEAD + 1} but this binary supports up to "
        f"version {HEAD} — upgrade agent-memory (pipx upgrade typed-agent-memory) or point --db "
        "at a different file\n"
    )
    assert file_hashes(path) == before
    assert not list(tmp_path.glob("*.backup-pre-*"))


def test_newer_database_in_use_by_another_process_is_refused_untouched(tmp_path):
    path = tmp_path / "memory.db"
    db.open_database(path).close()
    _make_newer(path, HEAD + 3)
    holder = sqlean.connect(str(path))  # keeps -wal and -shm alive, like a running newer server
    holder.execute("SELECT count(*) FROM memories").fetchall()
    try:
        before = file_hashes(path)
        assert before["-wal"] is not None
        proc = run_agent_memory("--db", str(path), "serve")
        assert proc.returncode == 1
        assert f"database schema is version {HEAD + 3}" in proc.stderr
        after = file_hashes(path)
        assert (after[""], after["-wal"]) == (before[""], before["-wal"])
    finally:
        holder.close()


OPEN_AFTER_BARRIER = """
import logging, sys
from agent_memory.storage import open_store
logging.basicConfig(level=logging.INFO)
sys.stdin.read(1)  # released together with the other processes
open_store(sys.argv[1]).close()
"""


def test_concurrent_starts_migrate_once_with_a_genuine_backup(tmp_path):
    fixture = OLD_FIXTURES[0]
    expected_rows = query(fixture, ROWS)
    for round_ in range(ROUNDS):
        work = tmp_path / f"round-{round_}"
        work.mkdir()
        path = copy_fixture(fixture, work)
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_AFTER_BARRIER, str(path)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=server_env(),
            )
            for _ in range(4)
        ]
        for proc in procs:  # each has imported and now blocks on stdin
            proc.stdin.write("go")
        for proc in procs:
            proc.stdin.close()
        results = [(proc.wait(timeout=120), proc.stderr.read()) for proc in procs]
        assert [code for code, _ in results] == [0, 0, 0, 0], results
        assert sum("migrated database" in err for _, err in results) == 1, results
        backups = list(work.glob("memory.db.backup-pre-*"))
        assert [b.name for b in backups] == [f"memory.db.backup-pre-{HEAD:04d}-{today()}"]
        assert query(backups[0], "SELECT version_num FROM alembic_version") == [
            (fixture.stem[-4:],)
        ]
        assert query(backups[0], ROWS) == expected_rows
        assert db.read_revision(path) == HEAD
        assert query(path, ROWS) == expected_rows


REAL_SERVER_ROUNDS = 7


def test_real_servers_started_together_on_an_old_file_all_start(tmp_path):
    """Caught a real bug: two processes switching a rollback-journal file to WAL at once."""
    for round_ in range(REAL_SERVER_ROUNDS):
        work = tmp_path / f"round-{round_}"
        work.mkdir()
        path = copy_fixture(OLD_FIXTURES[0], work)
        procs = [
            subprocess.Popen(
                [executable(), "--db", str(path), "serve"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=server_env(),
            )
            for _ in range(2)
        ]
        outcomes = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
        assert [code for code, _ in outcomes] == [0, 0], outcomes
        assert sum("migrated database" in err for _, err in outcomes) == 1
        (backup,) = work.glob("memory.db.backup-pre-*")
        assert query(backup, "SELECT version_num FROM alembic_version") == [
            (OLD_FIXTURES[0].stem[-4:],)
        ]
        assert query(backup, ROWS) == query(OLD_FIXTURES[0], ROWS)
        assert db.read_revision(path) == HEAD


MIXED_ROUNDS = 5


@pytest.mark.parametrize("round_", range(MIXED_ROUNDS))
def test_mcp_server_and_rest_daemon_started_together_on_an_old_file(tmp_path, round_):
    from tests.support.rest_daemon import RestDaemon

    path = copy_fixture(OLD_FIXTURES[0], tmp_path)
    mcp = subprocess.Popen(
        [executable(), "--db", str(path), "serve"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env(),
    )
    with RestDaemon(path) as daemon:  # started while the MCP server is starting
        assert daemon.request("GET", "/health").json()["schema_version"] == HEAD
        assert mcp.wait(timeout=120) == 0
        assert daemon.stop() == 0
    logs = mcp.stderr.read() + "".join(daemon.stderr_lines)
    assert logs.count("migrated database") == 1
    (backup,) = tmp_path.glob("memory.db.backup-pre-*")
    assert query(backup, "SELECT version_num FROM alembic_version") == [
        (OLD_FIXTURES[0].stem[-4:],)
    ]
    assert query(path, ROWS) == query(OLD_FIXTURES[0], ROWS)


PAUSE_AFTER_THE_COPY = """
import sys
from agent_memory.storage.sqlite import database, migrate

real_copy = migrate._copy


def copy_then_wait(source, destination):
    real_copy(source, destination)
    print(destination, flush=True)
    sys.stdin.read()  # killed here: the copy written, not yet renamed


migrate._copy = copy_then_wait
database.open_database(sys.argv[1])
"""


def test_a_killed_backup_leaves_a_private_copy_that_the_next_open_removes(tmp_path):
    path = copy_fixture(OLD_FIXTURES[0], tmp_path)
    child = subprocess.Popen(
        [sys.executable, "-c", PAUSE_AFTER_THE_COPY, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=server_env(),
    )
    try:
        temp = Path(child.stdout.readline().strip())
        assert temp.name == f"memory.db.backup-pre-{HEAD:04d}-{today()}.tmp-{child.pid}"
        assert stat.S_IMODE(temp.stat().st_mode) == 0o600  # private while it is written
        # The child holds the write lock: its copy is being written, and stays.
        assert remove_stray_temps(path) == []
        assert temp.exists()
    finally:
        child.kill()
        child.wait(timeout=60)
    assert stray_backup_temps(path) == [temp]  # a whole copy of the database, left behind
    db.open_database(path).close()
    assert stray_backup_temps(path) == []
    backup = tmp_path / f"memory.db.backup-pre-{HEAD:04d}-{today()}"
    assert query(backup, ROWS) == query(OLD_FIXTURES[0], ROWS)
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert db.read_revision(path) == HEAD


def dead_pid() -> int:
    """The PID of a process that has exited and been reaped."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize("at_head", [False, True], ids=["old file", "file at head"])
def test_leftover_backup_copies_are_removed_at_the_next_open(tmp_path, at_head):
    path = copy_fixture(ALL_FIXTURES[-1] if at_head else OLD_FIXTURES[0], tmp_path)
    name = f"memory.db.backup-pre-{HEAD:04d}-20260101"
    leftovers = [
        tmp_path / f"{name}.tmp-{dead_pid()}",
        tmp_path / f"{name}.tmp-{dead_pid()}-journal",
        tmp_path / f"memory.db.backup-pre-0002-20250101.tmp-{os.getpid()}",  # no writer now
    ]
    kept = [
        tmp_path / "memory.db.backup-pre-0002-20250101",  # a finished backup
        tmp_path / f"other.db.backup-pre-{HEAD:04d}-20260101.tmp-1",  # another database's
        tmp_path / f"{name}.tmp-notes.txt",
    ]
    for file in leftovers + kept:
        file.write_bytes(b"forgotten memories")
    assert stray_backup_temps(path) == sorted(leftovers)
    db.open_database(path).close()
    assert [p for p in leftovers if p.exists()] == []
    assert [p for p in kept if p.exists()] == kept
