"""Opening a database: path resolution, pragmas, schema creation, refusals."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
import sqlalchemy
import sqlean
from sqlalchemy import inspect

from agent_memory.contract.errors import DatabaseMissing, DatabaseOpenError, SchemaTooNew
from agent_memory.storage import EXISTING, READ
from agent_memory.storage.sqlite import database as db
from agent_memory.storage.sqlite import schema
from tests.support.files import file_hashes


def test_explicit_path_wins_over_env(monkeypatch, tmp_path):
    monkeypatch.setenv("AGENT_MEMORY_DB", str(tmp_path / "env.db"))
    assert db.resolve_path(tmp_path / "flag.db") == tmp_path / "flag.db"
    assert db.resolve_path(None) == tmp_path / "env.db"


def test_default_path_is_the_user_data_dir(monkeypatch, tmp_path):
    import platformdirs

    monkeypatch.delenv("AGENT_MEMORY_DB", raising=False)
    monkeypatch.setattr(platformdirs, "user_data_dir", lambda app, appauthor: str(tmp_path / app))
    assert db.resolve_path() == tmp_path / "agent-memory" / "memory.db"


def test_home_is_expanded(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert db.resolve_path("~/m.db") == tmp_path / "m.db"


def test_missing_parents_are_created_private(tmp_path):
    path = tmp_path / "a" / "b" / "memory.db"
    database = db.open_database(path)
    database.close()
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert path.exists()


def test_every_connection_has_the_pragmas_and_sqlite_vec(db_path):
    database = db.open_database(db_path)
    with database.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == db.BUSY_TIMEOUT_MS
        assert conn.exec_driver_sql("SELECT vec_version()").scalar().startswith("v")
    database.close()


def test_new_file_is_created_at_head(db_path):
    from alembic.script import ScriptDirectory

    from agent_memory.storage.sqlite.migrate import alembic_config

    database = db.open_database(db_path)
    database.close()
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert db.head_revision() == int(head) == database.schema_version
    assert db.read_revision(db_path) == int(head)


def test_core_tables_match_the_migrated_schema(db_path):
    database = db.open_database(db_path)
    inspector = inspect(database.engine)
    for table in schema.metadata.sorted_tables:
        columns = [c["name"] for c in inspector.get_columns(table.name)]
        assert columns == [c.name for c in table.columns]
    database.close()


def test_fts_index_and_triggers_exist(db_path):
    db.open_database(db_path).close()
    conn = sqlean.connect(str(db_path))
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
    assert names == {
        "memories_fts_insert",
        "memories_fts_delete",
        "memories_fts_update",
        "memories_content_hash_stale",
        "memories_keyword_text_stale",
        "memories_keyword_tags_stale",
        "vector_changes_pruned",
    }
    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
    conn.close()


def test_not_a_database_is_refused(db_path):
    db_path.write_bytes(b"this is not sqlite at all, just some text" * 100)
    before = db_path.read_bytes()
    with pytest.raises(DatabaseOpenError) as raised:
        db.open_database(db_path)
    assert str(raised.value) == f"cannot open database {db_path}: file is not a database"
    assert db_path.read_bytes() == before


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(DatabaseOpenError, match="is a directory"):
        db.open_database(tmp_path)


def test_parent_that_cannot_be_created_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")  # a file where a directory must go: fails for root too
    with pytest.raises(DatabaseOpenError, match="Not a directory"):
        db.open_database(tmp_path / "file" / "sub" / "memory.db")


def test_newer_schema_is_refused_and_left_untouched(db_path):
    db.open_database(db_path).close()
    conn = sqlean.connect(str(db_path))
    newer = db.head_revision() + 1
    conn.execute("UPDATE alembic_version SET version_num = ?", (f"{newer:04d}",))
    conn.commit()
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    before = file_hashes(db_path)
    with pytest.raises(SchemaTooNew) as raised:
        db.open_database(db_path)
    assert str(raised.value) == (
        f"database schema is version {newer} but this binary supports up to version {db.head_revision()}"
        " — upgrade agent-memory (pipx upgrade typed-agent-memory) or point --db at a different file"
    )
    assert file_hashes(db_path) == before


@pytest.fixture
def failing_migrations(tmp_path, monkeypatch):
    """This build's migrations plus one more that creates a table, alters one, then fails."""
    scripts = tmp_path / "migrations"
    shutil.copytree(db.migrations_dir(), scripts, ignore=shutil.ignore_patterns("__pycache__"))
    head = db.head_revision()
    (scripts / "versions" / f"{head + 1:04d}_broken.py").write_text(
        "from alembic import op\n"
        f"revision = '{head + 1:04d}'\ndown_revision = '{head:04d}'\n"
        "branch_labels = None\ndepends_on = None\n"
        "def upgrade():\n"
        "    op.execute('CREATE TABLE half_done (x)')\n"
        "    op.execute('ALTER TABLE memories ADD COLUMN extra TEXT')\n"
        "    op.execute('SELECT * FROM no_such_table')\n"
    )
    monkeypatch.setattr(db, "migrations_dir", lambda: scripts)


def _tables(path: Path) -> set[str]:
    conn = sqlean.connect(str(path))
    try:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()


def test_failed_migration_of_a_new_file_leaves_nothing(db_path, failing_migrations):
    with pytest.raises(DatabaseOpenError, match="no such table"):
        db.open_database(db_path)
    assert _tables(db_path) == set()


def test_failed_migration_leaves_the_old_schema(tmp_path, monkeypatch, failing_migrations):
    path = tmp_path / "old.db"
    broken = db.head_revision()  # the failing revision is the head now
    with monkeypatch.context() as patch:
        patch.setattr(db, "head_revision", lambda: broken - 1)
        db.open_database(path).close()  # a file at this build's real head
    before = _tables(path)
    with pytest.raises(DatabaseOpenError, match="no such table"):
        db.open_database(path)
    assert _tables(path) == before
    assert db.read_revision(path) == broken - 1
    conn = sqlean.connect(str(path))
    assert "extra" not in [row[1] for row in conn.execute("PRAGMA table_info(memories)")]
    conn.close()


def test_modes_other_than_create_refuse_a_missing_database_and_create_nothing(tmp_path):
    for mode in (EXISTING, READ):
        with pytest.raises(DatabaseMissing, match="no database at"):
            db.open_database(tmp_path / "a" / "memory.db", mode=mode)
    assert list(tmp_path.iterdir()) == []


def test_read_mode_opens_a_file_it_cannot_write_read_only(db_path, monkeypatch):
    db.open_database(db_path).close()
    monkeypatch.setattr(db, "writable", lambda path: False)
    database = db.open_database(db_path, mode=READ)
    try:
        assert database.read_only
        with database.engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM memories").scalar() == 0
            with pytest.raises(sqlalchemy.exc.OperationalError, match="readonly"):
                conn.exec_driver_sql("DELETE FROM memories")
    finally:
        database.close()
    assert not db.open_database(db_path, mode=EXISTING).read_only  # a write will be tried


@pytest.mark.parametrize(
    ("readable", "dir_writable", "file_writable", "expected"),
    [
        (False, True, True, "the file is not readable (boom)"),
        (True, False, True, "read-only directory {dir} (boom)"),
        (True, True, False, "read-only file (boom)"),
        (True, True, True, "boom"),
    ],
)
def test_the_cause_of_a_failure_is_named(
    db_path, monkeypatch, readable, dir_writable, file_writable, expected
):
    """os.access is asked (as root every file is writable, so its answers are set here)."""
    db_path.touch()
    answers = {
        (str(db_path), os.R_OK): readable,
        (str(db_path), os.W_OK): file_writable,
        (str(db_path.parent), os.W_OK): dir_writable,
    }
    monkeypatch.setattr(db.os, "access", lambda path, how: answers[(str(path), how)])
    assert db.cause(db_path, "boom") == expected.format(dir=db_path.parent)
