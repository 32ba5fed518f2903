"""``agent-memory import --from jsonl``: the strict reader, dedup, remapped links, the report."""

from __future__ import annotations

import json
import re
import shutil

import pytest
import sqlean
from click.testing import CliRunner
from sqlalchemy import event
from sqlalchemy.engine import Engine

from agent_memory.cli.main import cli
from agent_memory.contract import models
from agent_memory.contract.errors import StorageError
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.storage.hygiene import duplicates
from agent_memory.storage.sqlite import connections
from agent_memory.storage.sqlite import portable as sqlite_portable
from agent_memory.storage.sqlite import store as sqlite_store
from agent_memory.transfer import portable
from agent_memory.transfer.portable import jsonl_reader
from tests.support.clock import START, Clock
from tests.support.files import check_consistent, dump

REPORT_ZERO = dict.fromkeys(
    [
        "imported",
        "skipped duplicates",
        "skipped expired",
        "links imported",
        "links skipped duplicates",
        "links dropped",
    ],
    0,
)


def exported(svc) -> list[dict]:
    lines: list[str] = []
    svc.export(lines.append)
    return [json.loads(line) for line in lines]


def write(path, records) -> None:
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )


def fill(svc) -> None:
    a = svc.store(
        {"content": "We chose SQLite.", "type": "DECISION", "tags": ["db"], "scope": "kore"}
    )["id"]
    b = svc.store({"content": "Naïve café — résumé", "type": "PATTERN", "source": "chat"})["id"]
    c = svc.store({"content": "fix the login crash", "type": "ERROR", "ttl_secs": 10**9})["id"]
    svc.forget({"id": svc.store({"content": "a gap in the ids", "type": "TODO"})["id"]})
    d = svc.store({"content": "after the gap", "type": "TODO", "tags": []})["id"]
    svc.link({"from_id": b, "to_id": a, "kind": "relates_to"})
    svc.link({"from_id": c, "to_id": a, "kind": "caused_by"})
    svc.link({"from_id": d, "to_id": c, "kind": "supersedes"})


def invoke(db_path, *args):
    return CliRunner().invoke(cli, ["--db", str(db_path), "import", *args])


def header_record(*, rows: int, links: int, schema_version: int) -> dict:
    """A hand-written file's header announcing ``rows`` memories and ``links`` links."""
    return {
        "record": "header", "format": "agent-memory-export", "version": 1, "exported_at": START,
        "embedding_model": "nomic-embed-text", "embedding_dim": 768,
        "schema_version": schema_version, "agent_memory_version": "0.1.0",
        "exported_rows": rows, "exported_links": links,
    }  # fmt: skip


def report_of(result) -> dict[str, int]:
    first = result.stdout.splitlines()[0]
    return {k: int(v) for k, v in (part.split(": ") for part in first.split(", "))}


@pytest.fixture
def export_file(tmp_path):
    source = MemoryService(open_store(tmp_path / "source.db"), clock=Clock())
    fill(source)
    records = exported(source)
    source.close()
    path = tmp_path / "memories.jsonl"
    write(path, records)
    return path, records


def normalized(records: list[dict]) -> list[dict]:
    """Keys renumbered by position, import-time fields left out."""
    keys = {r["key"]: i for i, r in enumerate(r for r in records if r["record"] == "memory")}
    out = []
    for r in records[1:]:
        r = dict(r)
        if r["record"] == "memory":
            r["key"] = keys[r["key"]]
            r.pop("last_accessed")
        else:
            r["from"], r["to"] = keys[r["from"]], keys[r["to"]]
        out.append(r)
    return out


def test_round_trip_into_an_empty_database(export_file, tmp_path):
    path, records = export_file
    target = tmp_path / "target.db"
    result = invoke(target, "--from", "jsonl", str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "imported: 4, skipped duplicates: 0, skipped expired: 0, links imported: 3, "
        "links skipped duplicates: 0, links dropped: 0",
        "4 memories waiting for a vector — the sweep backfills them on the next serve/serve-rest "
        "start (128 per tick), or run `agent-memory embed` now",
    ]
    svc = MemoryService(open_store(target), clock=Clock(START + 500))
    try:
        again = exported(svc)
        assert normalized(again) == normalized(records)
        assert {r["last_accessed"] for r in again if r["record"] == "memory"} != {START}
        assert svc.db.embedding_counts() == (4, 4)  # all pending, Ollama never asked
    finally:
        svc.close()


def test_a_batch_split_over_several_statements_keeps_keys_and_order(
    export_file, tmp_path, monkeypatch
):
    monkeypatch.setattr(sqlite_portable, "IMPORT_ROWS_PER_STATEMENT", 3)  # 4 rows: 3 + 1
    path, records = export_file
    target = tmp_path / "target.db"
    assert invoke(target, "--from", "jsonl", str(path)).exit_code == 0
    svc = MemoryService(open_store(target), clock=Clock(START + 500))
    try:
        assert normalized(exported(svc)) == normalized(records)
        assert svc.search({"query": "gap"})["results"][0]["content"] == "after the gap"
    finally:
        svc.close()


@pytest.mark.parametrize("merged", [True, False])
def test_an_import_leaves_the_index_merged(export_file, tmp_path, monkeypatch, merged):
    monkeypatch.setattr(portable, "IMPORT_BATCH_ROWS", 1)  # a segment per row
    path, _ = export_file
    svc = MemoryService(open_store(tmp_path / "target.db"), clock=Clock())
    try:
        if not merged:
            monkeypatch.setattr(svc.db, "after_import", lambda: 0)
        reader = jsonl_reader(path)
        reader.check()
        assert svc.import_jsonl(reader)["imported"] == 4
        monkeypatch.undo()
        steps = svc.db.after_import()  # one step that finds nothing to do, if merged
        assert (steps == 1) == merged
        assert svc.search({"query": "gap"})["results"][0]["content"] == "after the gap"
    finally:
        svc.close()


def test_an_import_runs_with_a_larger_writer_cache_and_gives_it_back(export_file, tmp_path, writes):
    path, _ = export_file
    svc = MemoryService(open_store(tmp_path / "target.db"), clock=Clock())
    try:
        reader = jsonl_reader(path)
        reader.check()
        seen = []
        writes.action = lambda driver: seen.append(
            -driver.execute("PRAGMA cache_size").fetchone()[0]
        )
        assert svc.import_jsonl(reader)["imported"] == 4
        svc.store({"content": "after the import", "type": "TODO"})
        # the import's writes (a batch of memories, one of links, the index merge's steps)
        assert set(seen[:-1]) == {connections.BULK_CACHE_KIB}
        assert seen[-1] == connections.DEFAULT_CACHE_KIB  # the store after it
    finally:
        svc.close()


def test_re_running_an_import_is_a_no_op(export_file, tmp_path):
    path, _ = export_file
    target = tmp_path / "target.db"
    invoke(target, "--from", "jsonl", str(path))
    result = invoke(target, "--from", "jsonl", str(path))
    assert result.exit_code == 0
    assert report_of(result) == {
        **REPORT_ZERO,
        "skipped duplicates": 4,
        "links skipped duplicates": 3,
    }
    assert len(result.stdout.splitlines()) == 1  # nothing imported: no pending line


def test_into_a_populated_database_keys_never_become_ids(export_file, tmp_path):
    path, _ = export_file
    target = tmp_path / "target.db"
    svc = MemoryService(open_store(target))
    for i in range(6):  # ids 1..6 exist, equal to every key in the file
        svc.store({"content": f"pre-existing {i}", "type": "TODO"})
    svc.store({"content": "We chose SQLite.", "type": "DECISION", "scope": "kore"})  # key 1's
    svc.close()
    result = invoke(target, "--from", "jsonl", str(path))
    assert report_of(result) == {
        **REPORT_ZERO,
        "imported": 3,
        "skipped duplicates": 1,
        "links imported": 3,
    }
    svc = MemoryService(open_store(target))
    try:
        related = {m["id"]: m["related"] for m in svc.list({"limit": 200, "expand_links": True})}
        assert all(related[i] == [] for i in range(1, 7))  # no pre-existing row gained an edge
        assert len(related[7]) == 2  # the duplicate collapsed onto row 7 and took its edges
    finally:
        svc.close()


def test_expired_rows_are_skipped_and_their_links_dropped(tmp_path):
    header = header_record(rows=4, links=3, schema_version=4)
    memory = {
        "record": "memory",
        "type": "TODO",
        "tags": [],
        "created_at": START,
        "last_accessed": START,
        "access_count": 2,
    }
    records = [
        header,
        {**memory, "key": 10, "content": "kept"},
        {**memory, "key": 11, "content": "gone", "expires_at": 1},  # long expired
        {**memory, "key": 12, "content": "twin"},  # optional fields omitted: null
        {**memory, "key": 13, "content": "twin", "source": None, "scope": None},
        {"record": "link", "from": 10, "to": 11, "kind": "relates_to", "created_at": START},
        {"record": "link", "from": 12, "to": 13, "kind": "relates_to", "created_at": START},
        {"record": "link", "from": 13, "to": 10, "kind": "caused_by", "created_at": START + 1},
    ]
    path = tmp_path / "in.jsonl"
    write(path, records)
    result = invoke(tmp_path / "t.db", "--from", "jsonl", str(path))
    assert result.exit_code == 0, result.output
    assert report_of(result) == {
        **REPORT_ZERO, "imported": 2, "skipped duplicates": 1, "skipped expired": 1,
        "links imported": 1, "links dropped": 2,
    }  # fmt: skip
    svc = MemoryService(open_store(tmp_path / "t.db"))
    try:
        rows = {m["content"]: m for m in svc.list({})}
        assert set(rows) == {"kept", "twin"}
        memories = [r for r in exported(svc) if r["record"] == "memory"]
        assert {m["access_count"] for m in memories} == {2}
        assert {m["created_at"] for m in memories} == {START}
    finally:
        svc.close()


@pytest.mark.parametrize("hashing", ["real", "every content colliding"])
def test_the_duplicate_key_is_type_normalised_content_and_scope(tmp_path, monkeypatch, hashing):
    """Rows are looked up by a hash of their content; a duplicate is what a store would
    call one (issue 36): same type and scope, same content once whitespace is normalised;
    the source does not count."""
    if hashing != "real":
        for module in (sqlite_store, sqlite_portable, duplicates):
            monkeypatch.setattr(module, "content_hash", lambda content: 7)
    svc = MemoryService(open_store(tmp_path / "t.db"), clock=Clock())
    svc.store({"content": "same text", "type": "DECISION"})
    svc.store({"content": "same text", "type": "DECISION", "scope": "web"})
    svc.close()
    header = header_record(rows=7, links=0, schema_version=5)
    memory = {
        "record": "memory", "tags": [], "created_at": START, "last_accessed": START,
        "access_count": 0,
    }  # fmt: skip
    records = [
        header,
        {**memory, "key": 1, "type": "DECISION", "content": "same text"},  # dup
        {**memory, "key": 2, "type": "DECISION", "content": "same text", "source": "chat"},  # dup
        {**memory, "key": 3, "type": "PATTERN", "content": "same text"},  # another type
        {**memory, "key": 4, "type": "DECISION", "content": "same text", "scope": "api"},  # new
        {**memory, "key": 5, "type": "DECISION", "content": " same\ttext "},  # whitespace: dup
        {**memory, "key": 6, "type": "DECISION", "content": "Same text"},  # case counts
        {**memory, "key": 7, "type": "DECISION", "content": "same  text", "scope": "web"},  # dup
    ]
    path = tmp_path / "in.jsonl"
    write(path, records)
    result = invoke(tmp_path / "t.db", "--from", "jsonl", str(path))
    assert result.exit_code == 0, result.output
    assert report_of(result) == {**REPORT_ZERO, "imported": 3, "skipped duplicates": 4}
    again = invoke(tmp_path / "t.db", "--from", "jsonl", str(path))
    assert report_of(again) == {**REPORT_ZERO, "skipped duplicates": 7}


def test_rows_written_by_code_older_than_the_hash_are_still_duplicates(tmp_path):
    """A server that opened the file before revision 0005 keeps running: its rows carry no
    hash, and its content edits leave the old one behind (the trigger resets it)."""
    path = tmp_path / "t.db"
    svc = MemoryService(open_store(path), clock=Clock())
    edited = svc.store({"content": "before the edit", "type": "TODO"})["id"]
    svc.close()
    old = sqlean.connect(str(path))  # plain SQL, as that code wrote it: no content_hash
    old.execute(
        "INSERT INTO memories (type, content, tags, source, scope, base_weight, decay_score,"
        " access_count, created_at, last_accessed, expires_at, embedding_status)"
        " VALUES ('TODO', 'stored by old code', '[]', NULL, NULL, 1.0, 1.0, 0, ?, ?, NULL, 0)",
        (START, START),
    )
    old.execute("UPDATE memories SET content = 'after the edit' WHERE id = ?", (edited,))
    old.commit()
    assert old.execute("SELECT content_hash FROM memories").fetchall() == [(0,), (0,)]
    old.close()
    header = header_record(rows=3, links=0, schema_version=5)
    memory = {
        "record": "memory", "type": "TODO", "tags": [], "created_at": START,
        "last_accessed": START, "access_count": 0,
    }  # fmt: skip
    file = tmp_path / "in.jsonl"
    write(
        file,
        [
            header,
            {**memory, "key": 1, "content": "stored by old code"},
            {**memory, "key": 2, "content": "after the edit"},
            {**memory, "key": 3, "content": "before the edit"},  # no longer in the database
        ],
    )
    result = invoke(path, "--from", "jsonl", str(file))
    assert report_of(result) == {**REPORT_ZERO, "imported": 1, "skipped duplicates": 2}
    conn = sqlean.connect(str(path))
    try:  # the rows the import compared were hashed on the way
        rows = conn.execute("SELECT content, content_hash FROM memories").fetchall()
    finally:
        conn.close()
    assert [h for _, h in rows] == [models.content_hash(c) for c, _ in rows]


def test_an_updated_memory_is_found_by_its_new_content(tmp_path):
    svc = MemoryService(open_store(tmp_path / "t.db"), clock=Clock())
    memory_id = svc.store({"content": "first words", "type": "TODO"})["id"]
    svc.update({"id": memory_id, "content": "second words"})
    records = exported(svc)
    svc.close()
    records[1]["content"] = "first words"  # the old text is new again; the current one is not
    records[0]["exported_rows"] = 2
    path = tmp_path / "in.jsonl"
    write(path, [*records, {**records[1], "key": 99, "content": "second words"}])
    result = invoke(tmp_path / "t.db", "--from", "jsonl", str(path))
    assert report_of(result) == {
        **REPORT_ZERO,
        **{"imported": 1, "skipped duplicates": 1},
        **{"versions imported": 1, "versions dropped": 0},  # the version the file holds
    }


def test_a_header_from_the_future_warns_and_imports(export_file, tmp_path):
    path, records = export_file
    records[0]["exported_at"] = 4_102_444_800  # 2100
    write(path, records)
    result = invoke(tmp_path / "t.db", "--from", "jsonl", str(path))
    assert result.exit_code == 0
    assert "ahead of this machine's clock" in result.stderr


# -- the strict reader: any defect rejects the whole file, the database is not opened ------


def mutate(records, line, change):
    records = [dict(r) for r in records]
    if change is None:
        del records[line - 1]
    else:
        change(records[line - 1]) if callable(change) else records.insert(line - 1, change)
    return records


DEFECTS = [
    ("not JSON", lambda recs: recs, "line 3: not valid JSON"),
    ("array", lambda recs: recs, "line 3: expected a JSON object"),
    ("no header", lambda recs: recs[1:], "line 1: the first line must be the header record"),
    (
        "format",
        lambda recs: [{**recs[0], "format": "other"}, *recs[1:]],
        "line 1: format must be agent-memory-export",
    ),
    (
        "version 0",
        lambda recs: [{**recs[0], "version": 0}, *recs[1:]],
        "line 1: version must be a positive integer (got 0)",
    ),
    (
        "version string",
        lambda recs: [{**recs[0], "version": "1"}, *recs[1:]],
        'line 1: `version` must be an integer (got "1")',
    ),
    (
        "second header",
        lambda recs: [*recs[:2], recs[0], *recs[2:]],
        "line 3: a second header record",
    ),
    (
        "unknown tag",
        lambda recs: [*recs[:2], {**recs[2], "record": "memo"}, *recs[3:]],
        "line 3: unknown variant `memo`, expected one of `header`, `memory`, `link`",
    ),
    (
        "unknown field",
        lambda recs: [*recs[:2], {**recs[2], "colour": "red"}, *recs[3:]],
        "line 3: unknown field `colour`",
    ),
    (
        "wrong type",
        lambda recs: [*recs[:2], {**recs[2], "key": "1"}, *recs[3:]],
        'line 3: `key` must be an integer (got "1")',
    ),
    (
        "bool int",
        lambda recs: [*recs[:2], {**recs[2], "access_count": True}, *recs[3:]],
        "line 3: `access_count` must be an integer (got true)",
    ),
    (
        "bad type",
        lambda recs: [*recs[:2], {**recs[2], "type": "NOTE"}, *recs[3:]],
        "line 3: invalid memory type 'NOTE'",
    ),
    (
        "empty content",
        lambda recs: [*recs[:2], {**recs[2], "content": "  "}, *recs[3:]],
        "line 3: content must be a non-empty string",
    ),
    (
        "tags",
        lambda recs: [*recs[:2], {**recs[2], "tags": [1]}, *recs[3:]],
        "line 3: `tags` must be an array of strings (got [1])",
    ),
    (
        "negative count",
        lambda recs: [*recs[:2], {**recs[2], "access_count": -1}, *recs[3:]],
        "line 3: access_count must not be negative (got -1)",
    ),
    (
        "duplicate key",
        lambda recs: [*recs[:2], {**recs[2], "key": recs[1]["key"]}, *recs[3:]],
        "line 3: duplicate key",
    ),
    (
        "missing field",
        lambda recs: [*recs[:2], {k: v for k, v in recs[2].items() if k != "content"}, *recs[3:]],
        "line 3: missing field `content`",
    ),
    (
        "bad kind",
        lambda recs: [*recs[:-1], {**recs[-1], "kind": "blocks"}],
        "line 8: kind must be one of relates_to, supersedes, caused_by (got 'blocks')",
    ),
    (
        "self link",
        lambda recs: [*recs[:-1], {**recs[-1], "to": recs[-1]["from"]}],
        "line 8: a link from key",
    ),
    (
        "dangling link",
        lambda recs: [*recs[:-1], {**recs[-1], "to": 999}],
        "line 8: link `to` key 999 is not a memory in the file",
    ),
    (
        "count",
        lambda recs: recs[:-1],
        "line 1: the header announces 4 memories and 3 links, the file holds 4 and 2",
    ),
    ("duplicate field", lambda recs: recs, "line 3: duplicate field `content`"),
    (
        "blank line",
        lambda recs: recs,
        "line 3: an empty line (blank lines are accepted only at the end of the file)",
    ),
]


@pytest.mark.parametrize(("name", "change", "message"), DEFECTS, ids=[d[0] for d in DEFECTS])
def test_every_defect_rejects_the_file_naming_its_line(
    export_file, tmp_path, name, change, message
):
    path, records = export_file
    write(path, change(records))
    if name == "not JSON":
        lines = path.read_text().splitlines(keepends=True)
        lines[2] = lines[2][:-5] + "\n"
        path.write_text("".join(lines))
    if name == "array":
        lines = path.read_text().splitlines(keepends=True)
        lines[2] = "[1, 2]\n"
        path.write_text("".join(lines))
    if name == "duplicate field":  # the last value would win: the first is hidden
        lines = path.read_text().splitlines(keepends=True)
        lines[2] = lines[2].rstrip("}\n") + ', "content": "again"}\n'
        path.write_text("".join(lines))
    if name == "blank line":
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join([*lines[:2], "\n", *lines[2:]]))
    target = tmp_path / "never.db"
    result = invoke(target, "--from", "jsonl", str(path))
    assert result.exit_code == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("invalid argument: " + message), last
    assert not target.exists()  # not even opened


@pytest.mark.parametrize("tail", ["\n", "\n\n", "  \r\n\t\n"], ids=["one", "two", "spaces"])
def test_blank_lines_at_the_end_of_the_file_are_accepted(export_file, tmp_path, tail):
    path, records = export_file
    path.write_text(path.read_text() + tail)
    target = tmp_path / "target.db"
    result = invoke(target, "--from", "jsonl", str(path))
    assert result.exit_code == 0, result.output
    assert report_of(result)["imported"] == 4
    imported = MemoryService(open_store(target), clock=Clock())
    try:
        assert normalized(exported(imported)) == normalized(records)
    finally:
        imported.close()


def test_a_newer_format_version_is_refused_before_anything_else(export_file, tmp_path):
    path, _ = export_file
    write(path, [{"record": "header", "version": 3, "whatever": True}])
    result = invoke(tmp_path / "never.db", "--from", "jsonl", str(path))
    assert result.exit_code == 1
    assert (
        result.stderr.strip()
        == "file is format version 3 but this binary reads up to version 2 — upgrade agent-memory"
    )


@pytest.mark.parametrize("what", ["missing", "directory", "not utf-8", "empty"])
def test_an_unreadable_file_is_one_line_and_exit_1(tmp_path, what):
    path = tmp_path / "in.jsonl"
    if what == "directory":
        path.mkdir()
    elif what == "not utf-8":
        path.write_bytes(b'{"record": "header", "x": "\xff"}\n')
    elif what == "empty":
        path.write_text("")
    result = invoke(tmp_path / "never.db", "--from", "jsonl", str(path))
    assert result.exit_code == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output
    assert not (tmp_path / "never.db").exists()


def test_an_import_logs_nothing_at_the_default_level(export_file, tmp_path):
    """Its report is on stdout; a new database, a migration, the service opening are logged
    at the info level, which only --log-level info shows."""
    result = invoke(tmp_path / "target.db", "--from", "jsonl", str(export_file[0]))
    assert (result.exit_code, result.stderr) == (0, "")
    verbose = invoke(tmp_path / "other.db", "--log-level", "info", str(export_file[0]))
    assert "INFO" in verbose.stderr


def test_the_format_is_told_by_the_file_name(export_file, tmp_path):
    path, _ = export_file
    result = invoke(tmp_path / "target.db", str(path))
    assert result.exit_code == 0, result.output
    assert report_of(result)["imported"] == 4
    shouted = tmp_path / "MEMORIES.JSONL"
    shutil.copyfile(path, shouted)
    assert report_of(invoke(tmp_path / "target.db", str(shouted)))["skipped duplicates"] == 4
    for name in ("memories.json", "memories"):
        other = tmp_path / name
        shutil.copyfile(path, other)
        result = invoke(tmp_path / "never.db", str(other))
        assert (result.exit_code, result.stdout) == (2, "")
        assert (
            f"cannot tell the format of {other} from its name (*.jsonl is jsonl, STATE.md is "
            "gsd-state): pass --from jsonl or --from gsd-state"
        ) in result.stderr
    assert not (tmp_path / "never.db").exists()


def test_scope_is_refused_with_jsonl(export_file, tmp_path):
    result = invoke(tmp_path / "never.db", "--from", "jsonl", "--scope", "x", str(export_file[0]))
    assert result.exit_code == 2
    assert "--scope is not accepted with --from jsonl" in result.stderr


# -- what the database cannot store, and the stores' limits, are refused in the check too ---

GOOD_ROWS = 2_500
BAD_LINE = GOOD_ROWS + 2  # after the header and the good records
INT_RANGE = "must be between -9223372036854775808 and 9223372036854775807"
NO_SURROGATES = "must be valid Unicode, without lone surrogates"


def good_memory(key: int) -> dict:
    return {
        "record": "memory", "key": key, "type": "TODO", "content": f"good row {key}",
        "tags": ["t"], "source": None, "scope": None, "created_at": START,
        "last_accessed": START, "access_count": 1, "expires_at": None,
    }  # fmt: skip


def good_link() -> dict:
    return {"record": "link", "from": 1, "to": 2, "kind": "relates_to", "created_at": START}


def unstorable_file(path, bad: dict, *, header: dict | None = None) -> None:
    """GOOD_ROWS good memories then ``bad`` (a memory or a link), escaped as ASCII JSON: a
    lone surrogate travels as the escape "\\ud800", as another program may well write it."""
    is_link = bad["record"] == "link"
    records = [
        {**header_record(rows=GOOD_ROWS + (not is_link), links=int(is_link), schema_version=5),
         **(header or {})},
        *(good_memory(key) for key in range(1, GOOD_ROWS + 1)),
        bad,
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="ascii")


BIG = 2**63  # one past SQLite's largest integer
UNSTORABLE = [
    *(
        (f"int {field}", {**good_memory(9_999), field: BIG}, {}, f"{field} {INT_RANGE} (got {BIG})")
        for field in ("key", "created_at", "last_accessed", "access_count", "expires_at")
    ),
    (
        "int below",
        {**good_memory(9_999), "created_at": -BIG - 1},
        {},
        f"created_at {INT_RANGE} (got {-BIG - 1})",
    ),
    *(
        (f"int link {field}", {**good_link(), field: BIG}, {}, f"{field} {INT_RANGE} (got {BIG})")
        for field in ("from", "to", "created_at")
    ),
    (
        "int header",
        good_memory(9_999),
        {"exported_at": BIG},
        f"exported_at {INT_RANGE} (got {BIG})",
    ),
    (
        "surrogate content",
        {**good_memory(9_999), "content": "abc\ud800"},
        {},
        f"content {NO_SURROGATES} (got \\ud800 at character 3)",
    ),
    (
        "surrogate tag",
        {**good_memory(9_999), "tags": ["fine", "\udc00x"]},
        {},
        f"tags {NO_SURROGATES} (got \\udc00 at character 0 in tag 1)",
    ),
    *(
        (
            f"surrogate {field}",
            {**good_memory(9_999), field: "a\ud83d"},
            {},
            f"{field} {NO_SURROGATES} (got \\ud83d at character 1)",
        )
        for field in ("source", "scope", "type")
    ),
    (
        "surrogate kind",
        {**good_link(), "kind": "\ud800"},
        {},
        f"kind {NO_SURROGATES} (got \\ud800 at character 0)",
    ),
    (
        "surrogate header",
        good_memory(9_999),
        {"embedding_model": "m\udfff"},
        f"embedding_model {NO_SURROGATES} (got \\udfff at character 1)",
    ),
    (
        "oversize content",
        {**good_memory(9_999), "content": "x" * (1024 * 1024 + 1)},
        {},
        "content must be at most 1048576 bytes of UTF-8 (got 1048577); "
        "the limit is set with --max-content-bytes",
    ),
    (
        "65 tags",
        {**good_memory(9_999), "tags": [f"t{i}" for i in range(65)]},
        {},
        "tags must hold at most 64 tags (got 65)",
    ),
    (
        "257-char tag",
        {**good_memory(9_999), "tags": ["ok", "t" * 257]},
        {},
        "each tag must be at most 256 characters (got 257 in tag 1)",
    ),
    *(
        (
            f"1025-char {field}",
            {**good_memory(9_999), field: "s" * 1025},
            {},
            f"{field} must be at most 1024 characters (got 1025)",
        )
        for field in ("source", "scope")
    ),
]


@pytest.fixture(scope="module")
def empty_database(tmp_path_factory):
    """A database at head with no memories, copied by each test (creating one costs more)."""
    path = tmp_path_factory.mktemp("empty") / "empty.db"
    MemoryService(open_store(path)).close()
    return path


def memory_count(path) -> int:
    conn = sqlean.connect(str(path))
    try:
        return conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("name", "bad", "header", "message"), UNSTORABLE, ids=[case[0] for case in UNSTORABLE]
)
def test_a_file_with_one_unstorable_record_is_refused_whole(
    tmp_path, empty_database, name, bad, header, message
):
    """2,500 good records and one the database cannot hold or a store would refuse: the
    check names it, and not one row is written (the insert used to die at row 2,001)."""
    target = tmp_path / "t.db"
    shutil.copyfile(empty_database, target)
    path = tmp_path / "in.jsonl"
    unstorable_file(path, bad, header=header)
    result = invoke(target, "--from", "jsonl", str(path))
    assert result.exit_code == 1, result.output
    line = 1 if header else BAD_LINE
    assert result.stderr.splitlines() == [f"invalid argument: line {line}: {message}"]
    assert memory_count(target) == 0


def test_the_content_limit_of_an_import_is_the_configured_one(tmp_path, empty_database):
    target = tmp_path / "t.db"
    shutil.copyfile(empty_database, target)
    path = tmp_path / "in.jsonl"
    unstorable_file(path, {**good_memory(9_999), "content": "é" * 51})  # 102 bytes
    arguments = ["--db", str(target), "--max-content-bytes", "101", "import", "--from", "jsonl"]
    result = CliRunner().invoke(cli, [*arguments, str(path)])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"invalid argument: line {BAD_LINE}: content must be at most 101 bytes of UTF-8 "
        "(got 102); the limit is set with --max-content-bytes"
    ]
    assert memory_count(target) == 0
    assert invoke(target, "--from", "jsonl", str(path)).exit_code == 0  # the default: 1 MiB
    assert memory_count(target) == GOOD_ROWS + 1


# -- a fault during the write takes out what the import had committed -----------------------

LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ ")
IMPORT_FAILED = "import failed due to a storage error (details are in the server log)"


@pytest.fixture
def page_limit():
    """Every connection opened meanwhile gets ``max_page_count`` = limit["pages"], once set:
    SQLite then refuses a write that needs more pages with SQLITE_FULL, as on a full disk."""
    limit: dict[str, int] = {}

    def on_connect(dbapi_conn, _record):
        if "pages" in limit:
            dbapi_conn.execute(f"PRAGMA max_page_count = {limit['pages']}")

    event.listen(Engine, "connect", on_connect)
    yield limit
    event.remove(Engine, "connect", on_connect)


def page_count(path) -> int:
    conn = sqlean.connect(str(path))
    try:
        return conn.execute("PRAGMA page_count").fetchone()[0]
    finally:
        conn.close()


def good_file(path, rows: int) -> None:
    header = header_record(rows=rows, links=0, schema_version=5)
    write(path, [header, *(good_memory(key) for key in range(1, rows + 1))])


def test_a_disk_full_during_the_write_leaves_no_row_and_one_line(
    tmp_path, empty_database, page_limit
):
    """The first batch commits, the second finds the disk full: the first is taken out
    again, and the command says one line (the SQLite detail is in the log), no traceback."""
    scratch, target = tmp_path / "scratch.db", tmp_path / "t.db"
    shutil.copyfile(empty_database, scratch)
    shutil.copyfile(empty_database, target)
    good_file(tmp_path / "batch.jsonl", portable.IMPORT_BATCH_ROWS)
    assert invoke(scratch, "--from", "jsonl", str(tmp_path / "batch.jsonl")).exit_code == 0
    empty, one_batch = page_count(empty_database), page_count(scratch)
    path = tmp_path / "in.jsonl"
    good_file(path, GOOD_ROWS)
    page_limit["pages"] = one_batch + (one_batch - empty) // 2  # room for one batch only
    result = invoke(target, "--from", "jsonl", str(path))
    page_limit.clear()
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert [line for line in result.stderr.splitlines() if not LOG_LINE.match(line)] == [
        IMPORT_FAILED
    ]
    assert "database or disk is full" in result.stderr  # the detail, in the log only
    assert "took out the 1000 memories it had written" in result.stderr
    conn = check_consistent(target)
    try:
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
    finally:
        conn.close()
    assert report_of(invoke(target, "--from", "jsonl", str(path)))["imported"] == GOOD_ROWS


def test_a_failed_import_into_a_populated_database_leaves_it_as_it_was(tmp_path, writes):
    """Rows it inserted go, with their links; so do the links it added between rows that
    were there before; a link that was there before stays, and so do those rows."""
    db = tmp_path / "t.db"
    svc = MemoryService(open_store(db), clock=Clock())
    for key in range(1, 31):  # the file's first 30 records are these rows
        svc.store({"content": f"good row {key}", "type": "TODO", "tags": ["t"]})
    svc.link({"from_id": 1, "to_id": 2, "kind": "relates_to"})
    before = (dump(db), links_of(db))
    rows = 1_200
    pairs = [(k, k + 1) for k in range(1, 30, 2)]  # 15 links between rows there before
    pairs += [(k, k + 1) for k in range(31, rows)][: 2 * portable.IMPORT_BATCH_ROWS - 15]
    header = header_record(rows=rows, links=len(pairs), schema_version=5)
    links = [{**good_link(), "from": a, "to": b} for a, b in pairs]
    path = tmp_path / "in.jsonl"
    write(path, [header, *(good_memory(key) for key in range(1, rows + 1)), *links])
    reader = jsonl_reader(path)
    reader.check()

    def full(driver) -> None:
        pages = driver.execute("PRAGMA page_count").fetchone()[0]
        driver.execute(f"PRAGMA max_page_count = {pages}")

    def progress(done: int, total: int) -> None:
        if done == rows + portable.IMPORT_BATCH_ROWS:  # the first batch of links is in
            writes.action = full  # and the disk is full from the next write on

    try:
        with pytest.raises(StorageError):
            svc.import_jsonl(reader, progress=progress)
    finally:
        svc.close()
    assert (dump(db), links_of(db)) == before
    check_consistent(db).close()


def links_of(path) -> list[tuple]:
    conn = sqlean.connect(str(path))
    try:
        return conn.execute("SELECT * FROM memory_links ORDER BY 1, 2, 3").fetchall()
    finally:
        conn.close()


def test_an_interrupt_during_the_write_takes_the_import_out_and_goes_on(tmp_path):
    svc = MemoryService(open_store(tmp_path / "t.db"), clock=Clock())
    path = tmp_path / "in.jsonl"
    good_file(path, GOOD_ROWS)
    reader = jsonl_reader(path)
    reader.check()

    def progress(done: int, total: int) -> None:
        if done == 2 * portable.IMPORT_BATCH_ROWS:
            raise KeyboardInterrupt  # Ctrl-C, after two batches were committed

    try:
        with pytest.raises(KeyboardInterrupt):
            svc.import_jsonl(reader, progress=progress)
        assert svc.list({}) == []
    finally:
        svc.close()


def test_when_the_fault_outlasts_the_import_the_log_says_what_is_left(tmp_path, caplog, writes):
    """The file turned read-only after the first batch: nothing can be taken out either, and
    the log says so; a re-run, once the fault is gone, completes the import."""
    svc = MemoryService(open_store(tmp_path / "t.db"), clock=Clock())
    path = tmp_path / "in.jsonl"
    good_file(path, GOOD_ROWS)
    reader = jsonl_reader(path)
    reader.check()

    def progress(done: int, total: int) -> None:
        if done == portable.IMPORT_BATCH_ROWS:  # SQLITE_READONLY from the next write on
            writes.action = lambda driver: driver.execute("PRAGMA query_only = 1")

    try:
        with pytest.raises(StorageError):
            svc.import_jsonl(reader, progress=progress)
        assert "the 1000 memories and 0 links it had written could not be taken out" in (
            caplog.text
        )
        writes.action = lambda driver: driver.execute("PRAGMA query_only = 0")
        reader.check()
        report = svc.import_jsonl(reader)
        assert (report["imported"], report["skipped duplicates"]) == (GOOD_ROWS - 1000, 1000)
    finally:
        svc.close()
