"""Faults that stop a spawned server from starting: a directory where no file can be
created, a corrupt file, no sqlite-vec. Each is one clear start-up line.

Tests and CI run as root, where file permissions stop nothing, so each fault is provoked in
a way that holds for root too; how is said at each test."""

from __future__ import annotations

from tests.support.faults import seeded
from tests.support.spawned import run_agent_memory, server_env


def test_a_directory_where_no_file_can_be_created_is_one_clear_line(tmp_path):
    # Provoked by a directory where SQLite must create the -wal file: no file can be made
    # there, as in a read-only directory, whoever runs the server.
    db_path = tmp_path / "memory.db"
    (tmp_path / "memory.db-wal").mkdir()
    proc = run_agent_memory("--db", str(db_path), "serve")
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"cannot open database {db_path}: "), lines
    assert "Traceback" not in proc.stderr


def test_a_corrupt_file_is_one_clear_start_up_line(db_path, clock):
    seeded(db_path, clock)
    # Provoked by overwriting the schema page (page 1 after the 100-byte header).
    with db_path.open("r+b") as f:
        f.seek(100)
        f.write(b"\x00garbage" * 400)
    proc = run_agent_memory("--db", str(db_path), "serve")
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"cannot open database {db_path}: "), lines
    assert "malformed" in lines[0]


def test_a_missing_sqlite_vec_is_one_clear_start_up_line(db_path, tmp_path):
    # Provoked by a sqlite_vec package, first on the path, whose extension file is missing.
    shim = tmp_path / "shim" / "sqlite_vec"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text(
        "def loadable_path():\n    return '/nonexistent/vec0'\n\n"
        "def load(conn):\n    conn.load_extension(loadable_path())\n"
    )
    env = server_env(PYTHONPATH=str(shim.parent))
    proc = run_agent_memory("--db", str(db_path), "serve", env=env)
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"cannot open database {db_path}: cannot load sqlite-vec")
    assert not db_path.exists() or db_path.stat().st_size == 0
