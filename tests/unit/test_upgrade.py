"""Upgrading real old files in process: every released revision to head, intact; backups
and their refusals; the restore steps from the README."""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import struct
from pathlib import Path

import pytest
import sqlean
import sqlite_vec

from agent_memory.contract import models
from agent_memory.contract.errors import BackupFailed
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.storage.sqlite import database as db
from agent_memory.storage.sqlite import migrate
from tests.support.upgrade import (
    ALL_FIXTURES,
    FIXTURES,
    HEAD,
    OLD_FIXTURES,
    ROWS,
    copy_fixture,
    query,
    today,
)


def normalized_schema(path: Path) -> list[tuple]:
    rows = query(
        path,
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    return [(t, n, tb, re.sub(r"\s+", " ", sql or "").strip()) for t, n, tb, sql in rows]


def test_there_is_a_fixture_for_every_revision():
    assert [int(p.stem[-4:]) for p in ALL_FIXTURES] == list(range(1, HEAD + 1))


@pytest.mark.parametrize("fixture", ALL_FIXTURES, ids=lambda p: p.stem)
def test_every_released_revision_upgrades_to_head_intact(fixture, tmp_path):
    path = copy_fixture(fixture, tmp_path)
    before = query(path, ROWS)
    fresh = tmp_path / "fresh.db"
    db.open_database(fresh).close()

    service = MemoryService(open_store(path))
    assert db.read_revision(path) == HEAD
    assert query(path, ROWS) == before
    hashed = query(path, "SELECT content, content_hash FROM memories")
    assert [h for _, h in hashed] == [models.content_hash(c) for c, _ in hashed]
    assert [r["id"] for r in service.search({"query": "maven group"})["results"]] == [1]
    assert [r["id"] for r in service.search({"query": "cafe resume"})["results"]] == [4]
    new_id = service.store({"content": "stored after the upgrade", "type": "TODO"})["id"]
    assert [r["id"] for r in service.search({"query": "upgrade"})["results"]] == [new_id]
    service.update({"id": 2, "content": "rewritten text"})
    assert service.search({"query": "IMMEDIATE"})["results"] == []
    service.close()
    assert query(path, "PRAGMA integrity_check") == [("ok",)]
    query(path, "INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
    assert normalized_schema(path) == normalized_schema(fresh)


def test_an_upgraded_file_gets_an_id_of_its_own_and_keeps_it(tmp_path):
    """Two copies of a file from before ids: each gets its own random id at its upgrade
    (ui tells databases apart by it), and keeps it at every later open."""
    paths = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        paths.append(copy_fixture(FIXTURES / "memory-0006.db", tmp_path / name))
        open_store(paths[-1]).close()
    ids = [db.read_meta(path)["database_id"] for path in paths]
    assert all(re.fullmatch("[0-9a-f]{32}", stored) for stored in ids)
    assert ids[0] != ids[1]
    open_store(paths[0]).close()
    assert db.read_meta(paths[0])["database_id"] == ids[0]


CJK_BEFORE_0008 = [
    "我们选择了数据库PostgreSQL，因为它支持事务。",
    "データベースにはPostgreSQLを選びました。",
    "데이터베이스는 PostgreSQL을 선택했습니다.",
]


def add_rows_as_0007_did(path: Path, contents: list[str]) -> list[int]:
    """Rows stored by a version at revision 0007: its triggers index them."""
    conn = sqlean.connect(str(path))
    try:
        ids = []
        for content in contents:
            cursor = conn.execute(
                "INSERT INTO memories (type, content, tags, base_weight, created_at,"
                " last_accessed, content_hash) VALUES ('DECISION', ?, '[]', 2.0, ?, ?, ?)",
                (content, 1767225600, 1767225600, models.content_hash(content)),
            )
            ids.append(cursor.lastrowid)
        conn.commit()
        return ids
    finally:
        conn.close()


def test_an_upgrade_finds_cjk_words_inside_the_sentences_already_there(tmp_path):
    """Before 0008 a sentence without spaces was one token of the index: a word inside it
    found nothing. The upgrade indexes the rows already there as bigrams."""
    path = copy_fixture(FIXTURES / "memory-0007.db", tmp_path)
    zh, ja, ko = add_rows_as_0007_did(path, CJK_BEFORE_0008)
    match = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?"
    assert query(path, match.replace("?", "'数据库'")) == []
    service = MemoryService(open_store(path))
    try:
        for word, expected in [("数据库", zh), ("事务", zh), ("データベース", ja), ("선택", ko)]:
            assert [r["id"] for r in service.search({"query": word})["results"]] == [expected]
        found = service.search({"query": "PostgreSQL"})["results"]
        assert sorted(r["id"] for r in found) == [zh, ja, ko]
        assert [r["id"] for r in service.search({"query": "maven group"})["results"]] == [1]
    finally:
        service.close()
    query(path, "INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")


def test_a_rewrite_by_a_process_older_than_0008_leaves_no_old_meaning(tmp_path):
    """A process that opened the file before 0008 rewrites content without its keyword
    text: the stale one is dropped, so the old sentence's words stop matching."""
    path = tmp_path / "memory.db"
    service = MemoryService(open_store(path))
    memory_id = service.store({"content": CJK_BEFORE_0008[0], "type": "DECISION"})["id"]
    conn = sqlean.connect(str(path))
    conn.execute("UPDATE memories SET content = '缓存放在内存里' WHERE id = ?", (memory_id,))
    conn.commit()
    conn.close()
    assert service.search({"query": "数据库"})["results"] == []
    assert query(path, "SELECT keyword_text FROM memories") == [(None,)]
    service.update({"id": memory_id, "content": "缓存放在内存里"})
    assert [r["id"] for r in service.search({"query": "内存"})["results"]] == [memory_id]
    service.close()
    query(path, "INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")


def test_brand_new_database_is_not_backed_up(tmp_path):
    db.open_database(tmp_path / "memory.db").close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]


def test_opening_at_head_makes_no_backup(tmp_path):
    path = copy_fixture(ALL_FIXTURES[-1], tmp_path)
    db.open_database(path).close()
    assert not list(tmp_path.glob("*.backup-pre-*"))


def test_one_backup_per_target_others_untouched(tmp_path):
    path = copy_fixture(OLD_FIXTURES[0], tmp_path)
    older_same = tmp_path / f"memory.db.backup-pre-{HEAD:04d}-20250101"
    same_day = tmp_path / f"memory.db.backup-pre-{HEAD:04d}-{today()}"
    other_target = tmp_path / "memory.db.backup-pre-0001-20250101"
    unrelated = tmp_path / f"other.db.backup-pre-{HEAD:04d}-20250101"
    for p in (older_same, same_day, other_target, unrelated):
        p.write_bytes(b"an older copy")
    db.open_database(path).close()
    assert not older_same.exists()
    assert same_day.read_bytes() != b"an older copy"  # replaced atomically by the new copy
    assert other_target.read_bytes() == b"an older copy"
    assert unrelated.read_bytes() == b"an older copy"


def test_fault_in_the_backup_step_refuses_and_does_not_migrate(tmp_path, monkeypatch):
    path = copy_fixture(OLD_FIXTURES[0], tmp_path)
    before = (normalized_schema(path), query(path, ROWS))

    def disk_full(source, destination):
        destination.write_bytes(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(migrate, "_copy", disk_full)
    with pytest.raises(BackupFailed) as raised:
        db.open_database(path)
    target = tmp_path / f"memory.db.backup-pre-{HEAD:04d}-{today()}"
    assert str(raised.value) == (
        f"cannot back up the database to {target} before migrating (No space left on device); "
        "the database was not migrated"
    )
    assert db.read_revision(path) == int(OLD_FIXTURES[0].stem[-4:])
    assert (normalized_schema(path), query(path, ROWS)) == before
    assert not [p for p in tmp_path.iterdir() if "backup" in p.name]  # no temp file left


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.mark.parametrize("db_mode", [0o600, 0o644, 0o660], ids=oct)
def test_backup_is_private_whatever_the_umask(tmp_path, umask_022, db_mode):
    path = copy_fixture(OLD_FIXTURES[0], tmp_path)
    path.chmod(db_mode)
    db.open_database(path).close()
    backup = tmp_path / f"memory.db.backup-pre-{HEAD:04d}-{today()}"
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600


def plant_link(at: Path, tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.write_bytes(b"not yours")
    at.symlink_to(victim)
    return victim


def test_a_link_at_the_backup_temp_name_is_removed_not_followed(tmp_path):
    path = copy_fixture(OLD_FIXTURES[0], tmp_path)
    backup = tmp_path / f"memory.db.backup-pre-{HEAD:04d}-{today()}"
    victim = plant_link(backup.with_name(f"{backup.name}.tmp-{os.getpid()}"), tmp_path)
    db.open_database(path).close()
    assert victim.read_bytes() == b"not yours"
    assert not backup.is_symlink()
    assert query(backup, ROWS) == query(OLD_FIXTURES[0], ROWS)
    assert [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name] == []


def test_a_link_at_the_final_backup_name_is_replaced_not_written_through(tmp_path):
    path = copy_fixture(OLD_FIXTURES[0], tmp_path)
    backup = tmp_path / f"memory.db.backup-pre-{HEAD:04d}-{today()}"
    victim = plant_link(backup, tmp_path)
    db.open_database(path).close()
    assert victim.read_bytes() == b"not yours"
    assert not backup.is_symlink()
    assert query(backup, ROWS) == query(OLD_FIXTURES[0], ROWS)


@pytest.mark.parametrize("suffix", ["-journal", "-wal", "-shm"])
def test_a_link_beside_the_backup_temp_file_fails_in_one_line(tmp_path, suffix):
    path = copy_fixture(OLD_FIXTURES[0], tmp_path)
    before = (normalized_schema(path), query(path, ROWS))
    temp = tmp_path / f"memory.db.backup-pre-{HEAD:04d}-{today()}.tmp-{os.getpid()}"
    victim = plant_link(Path(f"{temp}{suffix}"), tmp_path)
    try:  # SQLite opens its own files with O_NOFOLLOW: it removes a stale link or fails
        db.open_database(path).close()
    except BackupFailed as exc:  # today: at -shm
        assert "\n" not in str(exc)
        assert (normalized_schema(path), query(path, ROWS)) == before
        assert not temp.exists()
    else:  # today: at -journal and -wal
        assert query(temp.with_name(temp.name.split(".tmp-")[0]), ROWS) == before[1]
    assert victim.read_bytes() == b"not yours"


def test_restore_steps_from_the_readme(tmp_path, monkeypatch):
    path = copy_fixture(OLD_FIXTURES[0], tmp_path)
    old_version = int(OLD_FIXTURES[0].stem[-4:])
    rows = query(path, ROWS)
    service = MemoryService(open_store(path))
    service.store({"content": "written by the newer version", "type": "TODO"})
    service.close()
    backup = tmp_path / f"memory.db.backup-pre-{HEAD:04d}-{today()}"

    # 1. every process stopped (service closed); 2. copy the backup over the database
    shutil.copyfile(backup, path)
    # 3. delete the -wal and -shm that belonged to the replaced database
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    # 4. start the older agent-memory: here, this code with only the old migrations
    old_scripts = tmp_path / "old-migrations"
    shutil.copytree(db.migrations_dir(), old_scripts, ignore=shutil.ignore_patterns("__pycache__"))
    for script in (old_scripts / "versions").glob("*.py"):
        if int(script.name[:4]) > old_version:
            script.unlink()
    monkeypatch.setattr(db, "migrations_dir", lambda: old_scripts)
    store = open_store(path)
    assert store.schema_version == old_version
    assert query(path, ROWS) == rows
    # (the rows are read with SQL: this version's store reads columns the old file lacks)
    store.close()


# The vector tables as revisions 0003-0005 made them with a pin (vectors.py of that day).
PINNED_0005 = (
    "CREATE VIRTUAL TABLE memory_vectors USING vec0("
    "memory_id integer primary key, embedding float[8] distance_metric=cosine)",
    "CREATE TABLE memory_vector_bits (memory_id INTEGER PRIMARY KEY, bits BLOB NOT NULL)",
    "CREATE TABLE memory_vector_int8 (memory_id INTEGER PRIMARY KEY, vector BLOB NOT NULL)",
    "CREATE TRIGGER memory_vectors_delete AFTER DELETE ON memories BEGIN"
    " DELETE FROM memory_vectors WHERE memory_id = old.id;"
    " DELETE FROM memory_vector_bits WHERE memory_id = old.id;"
    " DELETE FROM memory_vector_int8 WHERE memory_id = old.id; END",
    "INSERT INTO meta (key, value) VALUES ('embedding_model', 'toy'), ('embedding_dim', '8'),"
    " ('embedding_prefixes', 'none')",
)


def test_a_pinned_file_keeps_its_vectors_as_plain_floats(tmp_path):
    path = copy_fixture(FIXTURES / "memory-0005.db", tmp_path)
    conn = sqlean.connect(str(path))
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    for ddl in PINNED_0005:
        conn.execute(ddl)
    vectors = {i: struct.pack("<8f", *[float(i == j) for j in range(8)]) for i in (1, 2, 3)}
    for memory_id, blob in vectors.items():
        conn.execute("INSERT INTO memory_vectors VALUES (?, ?)", (memory_id, blob))
        conn.execute(
            "INSERT INTO memory_vector_bits VALUES (?, vec_quantize_binary(?))", (memory_id, blob)
        )
        conn.execute("INSERT INTO memory_vector_int8 VALUES (?, ?)", (memory_id, b"\0" * 8))
    conn.commit()
    conn.close()
    store = open_store(path)
    try:
        assert store.pin() == models.Pin("toy", 8, "none")
        assert store.embedding_counts() == (4, 4)  # the fixture's rows were never embedded
    finally:
        store.close()
    assert dict(query(path, "SELECT memory_id, vector FROM memory_vector_floats")) == vectors
    tables = {name for (name,) in query(path, "SELECT name FROM sqlite_master")}
    assert {"memory_vectors", "memory_vector_int8"}.isdisjoint(tables)
    assert query(path, "SELECT count(*) FROM vector_changes") == [(0,)]
    conn = sqlean.connect(str(path))
    with conn:  # the new triggers take the vector out, logged
        conn.execute("DELETE FROM memories WHERE id = 2")
    conn.close()
    assert [i for (i,) in query(path, "SELECT memory_id FROM memory_vector_floats")] == [1, 3]
    assert query(path, "SELECT memory_id FROM vector_changes") == [(2,)]
