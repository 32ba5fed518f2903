"""Tags in the keyword index of a SQLite file: an upgraded file finds the tags it held, a
retag by an older process leaves no old tags, doctor --repair rebuilds the index with them."""

from __future__ import annotations

import json
import shutil

import sqlean
from click.testing import CliRunner

from agent_memory.cli.main import cli
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.paths import FIXTURES
from tests.support.tags import found, new


def test_an_upgraded_file_finds_the_tags_it_held(tmp_path):
    """Revision 0009 indexes the tags of the memories already there: the fixture's first
    memory is tagged ``release``, a word its content does not hold."""
    path = tmp_path / "memory.db"
    shutil.copyfile(FIXTURES / "memory-0008.db", path)
    service = MemoryService(open_store(path))
    try:
        assert [r["id"] for r in service.search({"query": "release"})["results"]] == [1]
        assert [r["id"] for r in service.search({"query": "tags:sqlite"})["results"]] == [2]
        service.update({"id": 1, "tags": ["published"]})
        assert service.search({"query": "release"})["results"] == []
    finally:
        service.close()
    conn = sqlean.connect(str(path))
    conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()


def test_a_retag_by_a_process_older_than_0009_leaves_no_old_tags(tmp_path):
    """Such a process writes the tags without their keyword text: the stale text is dropped
    and the index reads the new tags."""
    path = tmp_path / "memory.db"
    store = open_store(path)
    memory_id = store.insert(new("We picked PostgreSQL.", ["数据库"]), None)
    conn = sqlean.connect(str(path))
    conn.execute("UPDATE memories SET tags = '[\"caching\"]' WHERE id = ?", (memory_id,))
    conn.commit()
    assert conn.execute("SELECT keyword_tags FROM memories").fetchall() == [(None,)]
    conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()
    assert found(store, "数据") == []
    assert found(store, "caching") == [memory_id]
    store.close()


def test_doctor_repair_rebuilds_the_index_with_the_tags(tmp_path):
    path = tmp_path / "memory.db"
    store = open_store(path)
    memory_id = store.insert(new("We picked PostgreSQL.", ["database"]), None)
    store.close()
    conn = sqlean.connect(str(path))
    conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('delete-all')")
    conn.commit()
    conn.close()
    doctor = ["--db", str(path), "--embedder", "none", "doctor"]
    assert CliRunner().invoke(cli, doctor).exit_code == 1
    repaired = CliRunner().invoke(cli, [*doctor, "--repair"])
    assert repaired.exit_code == 0, repaired.output
    assert CliRunner().invoke(cli, doctor).exit_code == 0
    search = ["--db", str(path), "--embedder", "none", "search", "database", "--json"]
    answer = json.loads(CliRunner().invoke(cli, search).stdout)
    assert [r["id"] for r in answer["results"]] == [memory_id]
