"""``agent-memory import --from`` a peer, on wrong, cut and hostile input: one line naming
the source, the file and the defect, exit 1, and nothing written; a failure while writing
takes out what the import had written."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from agent_memory.cli.main import cli
from agent_memory.contract.errors import StorageError
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.transfer import importers as sources
from agent_memory.transfer import portable
from agent_memory.transfer.importers import basic_memory
from agent_memory.transfer.importers.common import Found, NotASource, Records
from tests.support.clock import Clock
from tests.support.files import dump
from tests.support.peers import NOT_REGULAR, PEERS

SERVER_MEMORY = PEERS / "server-memory" / "memory.jsonl"
MCP_MEMORY_SERVICE = PEERS / "mcp-memory-service" / "sqlite_vec.db"
MAX_BYTES = 1024 * 1024


def run(db, source: str, path: Path):
    return CliRunner().invoke(cli, ["--db", str(db), "import", "--from", source, str(path)])


def refused(tmp_path, source: str, path: Path, what: str) -> None:
    db = tmp_path / "data" / "memory.db"
    result = run(db, source, path)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr == f"not a {source} file: {path}: {what}\n"
    assert not db.parent.exists()  # the database was not even opened


def test_a_server_memory_file_cut_anywhere_is_refused_or_read_whole_lines(tmp_path):
    """Every truncation: mid-line is one clear refusal; at a line's end, what is there."""
    data = SERVER_MEMORY.read_bytes()
    whole = {item.content for item in sources.read("server-memory", SERVER_MEMORY, MAX_BYTES).items}
    # an entity's own memory names the relations read so far: before them, its name and type
    whole |= {m[1] for w in whole if (m := re.fullmatch(r"(.+ \([^()]*\)): .*\.", w))}
    cut = tmp_path / "memory.jsonl"
    refusals = 0
    for size in range(len(data)):
        cut.write_bytes(data[:size])
        try:
            found = sources.read("server-memory", cut, MAX_BYTES)
        except NotASource as exc:
            assert str(exc).startswith(f"not a server-memory file: {cut}: line ")
            assert "\n" not in str(exc)
            refusals += 1
            continue
        assert {item.content for item in found.items} <= whole  # never a part of an item
    assert refusals > len(data) * 0.9


def test_a_cut_line_is_named(tmp_path):
    path = tmp_path / "memory.jsonl"
    lines = SERVER_MEMORY.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([*lines[:2], lines[2][:30]]) + "\n", encoding="utf-8")
    refused(tmp_path, "server-memory", path, "line 3 is not valid JSON")


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("[1, 2]", "line 1 is not a JSON object"),
        ('{"name": "x"}', 'line 1 has no "type" of "entity" or "relation"'),
        (
            '{"type": "entity", "name": 7, "entityType": "t", "observations": []}',
            'line 1: "name" must be a string (got 7)',
        ),
        (
            '{"type": "entity", "name": "a", "entityType": "t", "observations": "x"}',
            'line 1: "observations" must be an array of strings (got "x")',
        ),
        (
            '{"type": "entity", "name": "a", "entityType": "t", "observations": [1]}',
            'line 1: "observations" must be an array of strings',
        ),
        (
            '{"type": "relation", "from": "a", "to": null}',
            'line 1: "to" must be a string (got null)',
        ),
        (
            '{"type": "entity", "name": "a", "entityType": "t", "observations": ["a\\u0000b"]}',
            "line 1: content must not contain NUL characters (got one at character 1)",
        ),
    ],
)
def test_wrong_types_in_server_memory_are_one_line(tmp_path, line, what):
    path = tmp_path / "memory.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    refused(tmp_path, "server-memory", path, what)


def test_a_file_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "CLAUDE.md"
    path.write_bytes(b"# Notes\n- caf\xe9\n")
    refused(tmp_path, "claude-md", path, "not UTF-8 text (byte 13)")


@pytest.mark.parametrize("size", [0, 100, 4096, 8192, "half", "all but one page"])
def test_an_mcp_memory_service_database_cut_short_writes_nothing_or_everything(tmp_path, size):
    data = MCP_MEMORY_SERVICE.read_bytes()
    size = {"half": len(data) // 2, "all but one page": len(data) - 4096}.get(size, size)
    path = tmp_path / "sqlite_vec.db"
    path.write_bytes(data[:size])
    db = tmp_path / "memory.db"
    result = run(db, "mcp-memory-service", path)
    if result.exit_code == 1:
        assert result.stderr.startswith(f"not a mcp-memory-service file: {path}: ")
        assert result.stderr.count("\n") == 1
        assert not db.exists()
    else:  # the cut missed every page it reads: then all of it
        assert result.stdout.startswith("imported: 4,"), result.output


def test_an_mcp_memory_service_database_with_wrong_types_is_refused(tmp_path):
    path = tmp_path / "sqlite_vec.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "CREATE TABLE memories (id INTEGER PRIMARY KEY, content_hash TEXT, content TEXT,"
            " tags TEXT, memory_type TEXT, created_at REAL)"
        )
        conn.execute("INSERT INTO memories VALUES (1, 'h1', 'fine', 'a,b', 'note', 1.5)")
        conn.execute("INSERT INTO memories VALUES (2, 'h2', x'00ff', NULL, 'note', 2.0)")
        conn.commit()
    refused(tmp_path, "mcp-memory-service", path, "memory id 2: content has the wrong type (bytes)")


YEAR_9999 = 253402300799  # 9999-12-31 23:59:59 UTC


def refused_time(tmp_path, source: str, path: Path, where: str, shown: str, *args: str) -> None:
    """Refused as a value the rest of the product would not take, naming the record."""
    db = tmp_path / "data" / "memory.db"
    result = CliRunner().invoke(
        cli, ["--db", str(db), "import", "--from", source, *args, str(path)]
    )
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    before = f"not a {source} file: {path}: {where}: created_at must be a moment between 0 and now"
    after = f" in Unix seconds (got {shown})\n"
    pattern = re.escape(before) + r" \([0-9]+\)" + re.escape(after)
    assert re.fullmatch(pattern, result.stderr), result.stderr
    assert not db.parent.exists()


@pytest.mark.parametrize("dry_run", [(), ("--dry-run",)], ids=["import", "dry run"])
@pytest.mark.parametrize(
    "created_at", [float("inf"), float("-inf"), float(YEAR_9999), 10**13, -1.5]
)
def test_an_mcp_memory_service_time_no_one_would_take_refuses_the_file(
    tmp_path, created_at, dry_run
):
    path = tmp_path / "sqlite_vec.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "CREATE TABLE memories (id INTEGER PRIMARY KEY, content_hash TEXT, content TEXT,"
            " tags TEXT, memory_type TEXT, created_at REAL)"
        )
        conn.execute("INSERT INTO memories VALUES (1, 'h1', 'fine', 'a', 'note', 1.5)")
        conn.execute("INSERT INTO memories VALUES (3, 'h3', 'odd', 'a', 'note', ?)", (created_at,))
        conn.commit()
    stored = float(created_at)  # the column's affinity makes every number a REAL
    refused_time(tmp_path, "mcp-memory-service", path, "memory id 3", repr(stored), *dry_run)


def test_a_replaced_mcp_memory_service_memory_is_superseded_and_deleted_ones_stay_out(tmp_path):
    path = tmp_path / "sqlite_vec.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "CREATE TABLE memories (id INTEGER PRIMARY KEY, content_hash TEXT, content TEXT,"
            " tags TEXT, memory_type TEXT, created_at REAL, deleted_at REAL,"
            " superseded_by TEXT)"
        )
        conn.executemany(
            "INSERT INTO memories VALUES (?, ?, ?, 'a', 'note', 1.5, ?, ?)",
            [
                (1, "old", "the old way", None, "new"),
                (2, "new", "the new way", None, None),
                (3, "gone", "deleted softly", 9.0, None),
                (4, "orphan", "replaced by nothing here", None, "missing"),
            ],
        )
        conn.commit()
    found = sources.read("mcp-memory-service", path, MAX_BYTES)
    assert [item.content for item in found.items] == [
        "the old way",
        "the new way",
        "replaced by nothing here",
    ]
    assert found.links == [(2, 1, "supersedes")]
    assert found.skipped == {
        "memories deleted in mcp-memory-service": 1,
        "replacements of a memory not imported": 1,
    }


def test_another_sqlite_database_is_refused(tmp_path):
    path = tmp_path / "other.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE notes (x)")
    refused(tmp_path, "mcp-memory-service", path, "it has no memories table")


def test_a_50_mb_note_becomes_one_memory_cut_at_the_size_limit(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "huge.md").write_text("---\ntitle: Huge\n---\n" + "lorem ipsum " * 4_400_000)
    db = tmp_path / "memory.db"
    result = run(db, "basic-memory", folder)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("imported: 1,")
    (memory,) = MemoryService(open_store(db)).list({})
    assert MAX_BYTES - 4 < len(memory["content"].encode()) <= MAX_BYTES


def test_a_basic_memory_folder_never_leaves_itself(tmp_path):
    """A symlink loop, a symlinked folder, a note linked from outside: none is read."""
    outside = tmp_path / "secret.md"
    outside.write_text("- [fact] the outside secret\n", encoding="utf-8")
    folder = tmp_path / "project"
    (folder / "sub").mkdir(parents=True)
    (folder / "note.md").write_text("- [fact] the inside note\n", encoding="utf-8")
    (folder / "sub" / "loop").symlink_to(folder, target_is_directory=True)
    (folder / "a.md").symlink_to(folder / "b.md")
    (folder / "b.md").symlink_to(folder / "a.md")
    (folder / "leak.md").symlink_to(outside)
    (folder / "..md").symlink_to(Path("..") / "secret.md")
    found = sources.read("basic-memory", folder, MAX_BYTES)
    assert [item.content for item in found.items] == ["note: the inside note"]
    assert found.skipped == {
        "symlinked folders not entered": 1,
        "broken or looping symlinks": 2,
        "notes outside the folder": 2,
    }


def test_a_note_that_became_a_fifo_after_the_walk_is_skipped(tmp_path):
    """Checked again on the descriptor it is read from: opened without waiting."""
    fifo = tmp_path / "late.md"
    os.mkfifo(fifo)
    found = Found("basic-memory", tmp_path)
    answers: list[object] = []
    reading = threading.Thread(
        target=lambda: answers.append(basic_memory._note(found, tmp_path, fifo)), daemon=True
    )
    reading.start()
    reading.join(timeout=30)
    assert answers == [None]
    assert found.skipped == {NOT_REGULAR.removeprefix("skipped "): 1}


@pytest.mark.parametrize(
    ("text", "what"),
    [
        (
            "---\ntitle: x\n- [a] b\n",
            "notes/bad.md: its front matter (opened by ---) is never closed",
        ),
        ("- [a] b\x00c\n", "notes/bad.md: holds a NUL character"),
    ],
)
def test_a_bad_note_refuses_the_whole_folder(tmp_path, text, what):
    folder = tmp_path / "project"
    (folder / "notes").mkdir(parents=True)
    (folder / "good.md").write_text("- [fact] a good note\n", encoding="utf-8")
    (folder / "notes" / "bad.md").write_text(text, encoding="utf-8")
    refused(tmp_path, "basic-memory", folder, what)


def test_a_failure_while_writing_takes_out_what_was_written(tmp_path, writes):
    """The first batch commits, the disk is full at the second: the database is as before."""
    path = tmp_path / "memory.jsonl"
    observations = [f"observation number {n}" for n in range(2 * portable.IMPORT_BATCH_ROWS)]
    entity = {"type": "entity", "name": "big", "entityType": "t", "observations": observations}
    path.write_text(json.dumps(entity) + "\n", encoding="utf-8")
    db = tmp_path / "memory.db"
    svc = MemoryService(open_store(db), clock=Clock())
    svc.store({"content": "there before", "type": "TODO"})
    before = dump(db)
    records = Records(sources.read("server-memory", path, MAX_BYTES), None, MAX_BYTES)
    records.check()

    def full(driver) -> None:
        pages = driver.execute("PRAGMA page_count").fetchone()[0]
        driver.execute(f"PRAGMA max_page_count = {pages}")

    def progress(done: int, total: int) -> None:
        if done == portable.IMPORT_BATCH_ROWS:
            writes.action = full

    try:
        with pytest.raises(StorageError):
            svc.import_jsonl(records, progress=progress)  # type: ignore[arg-type]
    finally:
        svc.close()
    assert dump(db) == before
    assert os.path.exists(db)


def engram_db(path: Path, created_at: object, title: object = "a title") -> Path:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "CREATE TABLE observations (id INTEGER PRIMARY KEY, type TEXT, title, content TEXT,"
            " project TEXT, scope TEXT, topic_key TEXT, created_at, deleted_at TEXT)"
        )
        conn.execute(
            "INSERT INTO observations VALUES (7, 'decision', ?, 'body', 'p', 'project', NULL,"
            " ?, NULL)",
            (title, created_at),
        )
        conn.commit()
    return path


@pytest.mark.parametrize(
    ("created_at", "seconds"),
    [("2026-11-02 09:15:00", 1793610900), ("2026-11-02T10:15:00+01:00", 1793610900)],
)
def test_engram_times_are_utc_and_kept(tmp_path, created_at, seconds):
    path = engram_db(tmp_path / "engram.db", created_at)
    (item,) = sources.read("engram", path, MAX_BYTES).items
    assert (item.created_at, item.content, item.scope) == (seconds, "a title\n\nbody", "p")


@pytest.mark.parametrize(
    ("created_at", "title", "what"),
    [
        ("yesterday", "t", "observation id 7: created_at is not a time ('yesterday')"),
        ("2026-11-02 09:15:00", 12, "observation id 7: title is not text (int)"),
    ],
)
def test_a_wrong_engram_row_is_named(tmp_path, created_at, title, what):
    path = engram_db(tmp_path / "engram.db", created_at, title)
    refused(tmp_path, "engram", path, what)


def test_an_engram_time_in_year_9999_refuses_the_file(tmp_path):
    path = engram_db(tmp_path / "engram.db", "9999-12-31 23:59:59")
    refused_time(tmp_path, "engram", path, "observation id 7", repr(float(YEAR_9999)))


def test_an_engram_import_of_another_database_is_refused(tmp_path):
    refused(tmp_path, "engram", MCP_MEMORY_SERVICE, "it has no observations table")
