"""``agent-memory doctor`` on SQLite: a real database damaged behind the store's back (with a
plain sqlite3 connection), found by doctor, and put right by ``--repair``."""

from __future__ import annotations

import json

import pytest
import sqlean
from click.testing import CliRunner

from agent_memory.cli.main import cli
from tests.support.doctor import counts, doctor, failing, fill


@pytest.fixture
def filled(db_path, ollama):
    return fill(db_path, ollama, "sqlite")


def behind_the_back(db_path, *statements):
    conn = sqlean.connect(str(db_path))  # foreign keys off, as in the sqlite3 shell
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


def test_a_sound_database_passes_and_says_how_searches_run(filled, ollama):
    result = doctor(filled, ollama)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert failing(result) == []
    assert "ok    SQLite integrity (PRAGMA integrity_check)" in lines
    assert "ok    keyword index matches the memories (FTS5 integrity-check)" in lines
    assert (
        "ok    the pin and its vector tables: nomic-embed-text (ollama, 768 dimensions, "
        "nomic prefixes)"
    ) in lines
    assert "memories: 3, waiting for a vector: 0" in lines
    assert f"embedder: nomic-embed-text at {ollama.url} (ready); searches are hybrid" in lines
    assert lines[-1] == "doctor: all checks pass"


def test_a_vector_deleted_behind_the_store_is_found_and_its_memory_made_pending(filled, ollama):
    behind_the_back(filled, "DELETE FROM memory_vector_floats WHERE memory_id = 2")
    result = doctor(filled, ollama)
    assert result.exit_code == 1
    assert failing(result) == [
        "FAIL  memories marked embedded have their vector: 1 memory marked embedded without "
        "a vector (doctor --repair rebuilds it)"
    ]
    assert result.stdout.splitlines()[-1] == "doctor: 1 check fails"
    repaired = doctor(filled, ollama, "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "repaired: 1 memory marked embedded had no vector: pending again" in repaired.stdout
    assert "repaired: removed the old vectors of 1 memory waiting for a new one" in (
        repaired.stdout
    )  # its sign bits, left behind
    assert counts(filled) == (3, 1)
    assert doctor(filled, ollama).exit_code == 0
    embedded = CliRunner().invoke(cli, ["--db", str(filled), "--ollama-url", ollama.url, "embed"])
    assert embedded.exit_code == 0 and counts(filled) == (3, 0)


def test_an_orphan_vector_is_found_and_removed(filled, ollama):
    behind_the_back(
        filled,
        "INSERT INTO memory_vector_floats (memory_id, vector) VALUES (99, zeroblob(3072))",
        "INSERT INTO memory_vector_bits (memory_id, bits) VALUES (99, zeroblob(96))",
    )
    result = doctor(filled, ollama)
    assert result.exit_code == 1
    assert failing(result) == [
        "FAIL  vectors belong to memories: the vectors of 1 memory that are gone "
        "(doctor --repair rebuilds it)"
    ]
    repaired = doctor(filled, ollama, "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "repaired: removed the vectors of 1 memory that are gone" in repaired.stdout
    assert counts(filled) == (3, 0)


def test_a_vector_of_the_wrong_size_is_found_and_its_memory_made_pending(filled, ollama):
    behind_the_back(
        filled, "UPDATE memory_vector_floats SET vector = zeroblob(8) WHERE memory_id = 1"
    )
    result = doctor(filled, ollama)
    assert result.exit_code == 1
    assert failing(result)[0].startswith("FAIL  vectors have the pinned size: the vectors of 1")
    assert doctor(filled, ollama, "--repair").exit_code == 0
    assert counts(filled) == (3, 1)


def test_a_keyword_index_out_of_step_is_rebuilt(filled, ollama):
    behind_the_back(
        filled,
        "INSERT INTO memories_fts (memories_fts, rowid, content)"
        " VALUES ('delete', 1, 'the datastore is sqlite')",
    )
    search = ["--db", str(filled), "--embedder", "none", "search", "datastore", "--json"]
    assert json.loads(CliRunner().invoke(cli, search).stdout)["results"] == []
    result = doctor(filled, ollama)
    assert result.exit_code == 1
    assert failing(result) == [
        "FAIL  keyword index matches the memories (FTS5 integrity-check): the index does not "
        "match the memories' content (doctor --repair rebuilds it)"
    ]
    repaired = doctor(filled, ollama, "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "repaired: rebuilt the keyword index from the memories" in repaired.stdout
    assert [r["id"] for r in json.loads(CliRunner().invoke(cli, search).stdout)["results"]] == [1]


def test_a_relation_left_by_a_delete_in_the_sqlite3_shell_is_removed(filled, ollama):
    behind_the_back(filled, "DELETE FROM memories WHERE id = 2")  # foreign keys off
    result = doctor(filled, ollama)
    assert result.exit_code == 1
    assert failing(result) == [
        "FAIL  relations join existing memories: 1 relation to memories that are gone "
        "(doctor --repair rebuilds it)"
    ]
    repaired = doctor(filled, ollama, "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "repaired: removed 1 relation to memories that are gone" in repaired.stdout
    assert counts(filled) == (2, 0)  # no memory removed


def test_an_index_out_of_step_with_its_table_is_reindexed(filled, ollama):
    # The index memories_type now claims to hold (scope, ...) while its pages hold (type, ...).
    behind_the_back(
        filled,
        "PRAGMA writable_schema = ON",
        "UPDATE sqlite_schema SET sql = 'CREATE INDEX memories_type ON memories"
        " (scope, created_at DESC, id DESC)' WHERE name = 'memories_type'",
    )
    result = doctor(filled, ollama)
    assert result.exit_code == 1
    assert failing(result)[0].startswith("FAIL  SQLite integrity (PRAGMA integrity_check): ")
    assert "missing from index memories_type" in failing(result)[0]
    repaired = doctor(filled, ollama, "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "repaired: rebuilt the indexes (REINDEX)" in repaired.stdout


def test_copies_left_by_an_interrupted_backup_are_gone_after_doctor(filled, ollama, tmp_path):
    dead = tmp_path / f"{filled.name}.backup-pre-0006-20260101.tmp-{2**22 + 1}"
    dead.write_bytes(b"x" * 10)
    kept = tmp_path / f"{filled.name}.backup-pre-0005-20251201"
    kept.write_bytes(b"")
    result = doctor(filled, ollama)
    assert result.exit_code == 0, result.output
    assert "ok    no interrupted pre-migration backup" in result.stdout
    assert f"ok    pre-migration backups: {kept.name} (0 bytes)" in result.stdout
    assert not dead.exists() and kept.exists()


def test_json_and_embedding_off(filled, ollama):
    behind_the_back(filled, "DELETE FROM memory_vector_floats WHERE memory_id = 2")
    asked = len(ollama.requests)
    result = doctor(filled, ollama, "--json", embedder="none")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["repaired"] == []
    assert report["embedder"] is None and report["search_mode"] == "keyword"
    assert "--embedder none" in report["search_hint"]
    assert len(ollama.requests) == asked
    assert [c["check"] for c in report["checks"] if not c["ok"]] == [
        "memories marked embedded have their vector"
    ]


def test_doctor_needs_a_database(tmp_path, ollama):
    result = doctor(tmp_path / "nothing.db", ollama)
    assert result.exit_code == 1 and "no database at" in result.stderr
    assert not (tmp_path / "nothing.db").exists()


def test_doctor_json_is_written_as_every_json_answer(filled, ollama):
    """Through display.json_text: a control character a report may hold (here in the model
    name it names) is escaped, and the value is the same."""
    model = "odd\u2028model\x85"
    result = doctor(filled, ollama, "--json", "--embed-model", model, embedder="ollama")
    assert "\u2028" not in result.stdout and "\x85" not in result.stdout
    assert model in json.loads(result.stdout)["embedder"]


def test_doctor_logs_nothing_at_the_default_level(filled, ollama):
    result = doctor(filled, ollama)
    assert (result.exit_code, result.stderr) == (0, "")
    assert "INFO" in doctor(filled, ollama, "--log-level", "info").stderr
