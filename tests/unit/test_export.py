"""``agent-memory export``: the JSONL file, its order and fields, atomic --output, and the
outputs it refuses."""

from __future__ import annotations

import json
import os
import socket
import stat

import pytest
from click.testing import CliRunner

from agent_memory import __version__
from agent_memory.cli.main import cli
from agent_memory.storage.sqlite.database import head_revision
from tests.support.clock import START
from tests.support.export import char_device, fill


def export_lines(svc) -> list[str]:
    out: list[str] = []
    svc.export(out.append)
    return out


def records(svc) -> list[dict]:
    return [json.loads(line) for line in export_lines(svc)]


def test_an_empty_database_exports_its_header(service):
    assert records(service) == [
        {
            "record": "header",
            "format": "agent-memory-export",
            "version": 2,
            "exported_at": START,
            "embedding_model": "",
            "embedding_dim": 0,
            "schema_version": head_revision(),
            "agent_memory_version": __version__,
            "exported_rows": 0,
            "exported_links": 0,
            "exported_versions": 0,
        }
    ]


def test_every_row_and_edge_in_order_with_every_field_in_wire_order(service, clock):
    a, b, c = fill(service, clock)
    header, *rest = records(service)
    assert (header["exported_rows"], header["exported_links"]) == (3, 3)
    memories, links = rest[:3], rest[3:]
    assert [m["key"] for m in memories] == [a, b, c]
    assert list(memories[0]) == [
        "record", "key", "type", "content", "tags", "source", "scope",
        "created_at", "last_accessed", "access_count", "expires_at",
        "created_by", "updated_by",
    ]  # fmt: skip
    assert memories[0] == {
        "record": "memory", "key": a, "type": "DECISION", "content": "We chose SQLite.",
        "tags": ["db"], "source": None, "scope": "kore", "created_at": START,
        "last_accessed": START, "access_count": 0, "expires_at": None,
        "created_by": "local", "updated_by": "local",
    }  # fmt: skip
    assert memories[1]["content"] == "Naïve café — résumé" and memories[1]["source"] == "chat"
    assert memories[2]["expires_at"] == START + 5  # expired rows travel too
    assert links == [
        {"record": "link", "from": a, "to": b, "kind": "relates_to", "created_at": START},
        {"record": "link", "from": a, "to": b, "kind": "supersedes", "created_at": START},
        {"record": "link", "from": c, "to": a, "kind": "caused_by", "created_at": START},
    ]
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in export_lines(service))


def test_two_exports_under_the_same_clock_are_byte_identical(service, clock):
    fill(service, clock)
    assert "".join(export_lines(service)) == "".join(export_lines(service))


def invoke(db_path, *args, options=()):
    return CliRunner().invoke(cli, ["--db", str(db_path), *options, "export", *args])


def header_of(result) -> tuple[str, int]:
    header = json.loads(result.stdout.splitlines()[0])
    return header["embedding_model"], header["embedding_dim"]


@pytest.mark.parametrize("embedder", ["none", "local", "ollama"])
def test_the_header_carries_the_pin_whatever_embedder_is_configured(hybrid, db_path, embedder):
    hybrid.store({"content": "embedded", "type": "TODO"})
    options = ["--embedder", embedder, "--embed-model", "mxbai-embed-large"]
    result = invoke(db_path, options=options)
    assert result.exit_code == 0, result.output
    assert header_of(result) == ("nomic-embed-text", 768)


@pytest.mark.parametrize("embedder", ["none", "local", "ollama"])
def test_without_a_vector_the_header_names_no_model(service, db_path, embedder):
    service.store({"content": "not embedded", "type": "TODO"})
    options = ["--embedder", embedder, "--embed-model", "mxbai-embed-large"]
    result = invoke(db_path, options=options)
    assert result.exit_code == 0, result.output
    assert header_of(result) == ("", 0)
    assert json.loads(result.stdout.splitlines()[1])["content"] == "not embedded"


def test_cli_export_to_stdout_and_to_a_private_file(service, clock, db_path, tmp_path):
    fill(service, clock)
    result = invoke(db_path)
    assert result.exit_code == 0
    assert [json.loads(x)["record"] for x in result.stdout.splitlines()] == ["header"] + [
        "memory"
    ] * 3 + ["link"] * 3
    assert result.stderr == "exported 3 memories and 3 links\n"  # and no log line
    target = tmp_path / "out" / "memory.jsonl"
    target.parent.mkdir()
    result = invoke(db_path, "--output", str(target))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.read_text().splitlines()[1:] == result_lines_after_header(invoke(db_path))
    assert os.listdir(target.parent) == ["memory.jsonl"]  # no temp file left


def result_lines_after_header(result) -> list[str]:
    return result.stdout.splitlines()[1:]


def test_one_is_said_in_the_singular(service, db_path):
    first = service.store({"content": "one", "type": "TODO"})["id"]
    assert invoke(db_path).stderr == "exported 1 memory and 0 links\n"
    service.link({"from_id": service.store({"content": "two", "type": "TODO"})["id"],
                  "to_id": first, "kind": "relates_to"})  # fmt: skip
    assert invoke(db_path).stderr == "exported 2 memories and 1 link\n"


def test_an_interrupted_export_leaves_the_old_file_and_no_temp(
    service, clock, db_path, tmp_path, monkeypatch
):
    fill(service, clock)
    target = tmp_path / "memory.jsonl"
    target.write_text("the previous export\n")
    from agent_memory.service.core import MemoryService

    real = MemoryService.export
    seen = []

    def interrupted(self, write):
        def half(text):
            write(text)
            seen.append(stat.S_IMODE(os.stat(f"{target}.export-tmp-{os.getpid()}").st_mode))
            raise KeyboardInterrupt  # Ctrl-C after the first line

        return real(self, half)

    monkeypatch.setattr(MemoryService, "export", interrupted)
    result = invoke(db_path, "--output", str(target))
    assert result.exit_code != 0
    assert target.read_text() == "the previous export\n"
    assert not [p for p in os.listdir(tmp_path) if "export-tmp" in p]
    assert seen == [0o600]  # the temp file was private from its first byte


def test_an_output_in_a_missing_directory_is_one_line_and_exit_1(service, db_path, tmp_path):
    target = tmp_path / "missing-dir" / "out.jsonl"
    result = invoke(db_path, "--output", str(target))
    assert result.exit_code == 1
    assert (
        result.stderr.strip().splitlines()[-1]
        == f"cannot write {target}: No such file or directory"
    )


def test_a_directory_as_output_is_a_usage_error(service, db_path, tmp_path):
    result = invoke(db_path, "--output", str(tmp_path))
    assert result.exit_code == 2
    assert "is a directory" in result.stderr


def test_export_and_import_refuse_a_newer_schema(service, db_path, tmp_path):
    import sqlean

    service.close()
    conn = sqlean.connect(str(db_path))
    conn.execute("UPDATE alembic_version SET version_num = '0099'")
    conn.commit()
    conn.close()
    for args in (["export"], ["import", "--from", "gsd-state", str(tmp_path / "STATE.md")]):
        (tmp_path / "STATE.md").write_text("### Decisions\n- x\n")
        result = CliRunner().invoke(cli, ["--db", str(db_path), *args])
        assert result.exit_code == 1
        assert result.stderr.strip().startswith("database schema is version 99 but this binary")


def test_a_full_device_is_one_line_and_stays_a_device(service, clock, db_path, tmp_path):
    fill(service, clock)
    full = char_device(tmp_path, "full")
    result = invoke(db_path, "--output", str(full))
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == f"cannot write {full}: No space left on device"
    assert stat.S_ISCHR(full.lstat().st_mode)


def test_a_socket_as_output_is_refused_untouched(service, db_path, tmp_path):
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        result = invoke(db_path, "--output", str(path))
    assert result.exit_code == 1
    assert result.stderr == f"refusing to replace {path}: it is a socket\n"
    assert stat.S_ISSOCK(path.lstat().st_mode)


LARGEST = 2**63 - 1


def access_count(raw, memory_id: int) -> tuple[str, object]:
    return raw.execute(
        "SELECT typeof(access_count), access_count FROM memories WHERE id = ?", (memory_id,)
    ).fetchone()


def test_an_access_count_at_the_largest_integer_survives_a_search_export_and_import(
    service, clock, db_path, raw, tmp_path
):
    """access_count + 1 overflowed to the REAL 9.223372036854776e+18, which export wrote and
    import refused: a use now saturates."""
    header, memory = records(service)[0], {
        "record": "memory", "key": 7, "type": "TODO", "content": "used a great deal",
        "tags": [], "source": None, "scope": None, "created_at": START,
        "last_accessed": START, "access_count": LARGEST, "expires_at": None,
    }  # fmt: skip
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({**header, "exported_rows": 1}) + "\n" + json.dumps(memory) + "\n")
    imported = CliRunner().invoke(
        cli, ["--db", str(db_path), "import", "--from", "jsonl", str(path)]
    )
    assert imported.exit_code == 0, imported.output
    [found] = service.search({"query": "used"})["results"]
    service.update({"id": found["id"], "tags": ["again"]})  # an update counts as a use too
    assert access_count(raw, found["id"]) == ("integer", LARGEST)
    out = tmp_path / "out.jsonl"
    assert invoke(db_path, "--output", str(out)).exit_code == 0
    fresh = tmp_path / "fresh.db"
    result = CliRunner().invoke(cli, ["--db", str(fresh), "import", "--from", "jsonl", str(out)])
    assert result.exit_code == 0, result.output
    again = invoke(fresh)
    assert json.loads(again.stdout.splitlines()[1])["access_count"] == LARGEST


def test_a_real_left_in_an_integer_column_exports_as_the_clamped_integer(service, raw):
    """An older version left 9.223372036854776e+18 (a REAL) in access_count: it exports as
    the largest integer, and the next use stores that integer back."""
    memory_id = service.store({"content": "overflowed before the fix", "type": "TODO"})["id"]
    raw.execute(
        "UPDATE memories SET access_count = 9223372036854775807.0 + 1 WHERE id = ?", (memory_id,)
    )
    raw.commit()
    assert access_count(raw, memory_id)[0] == "real"
    line = export_lines(service)[1]
    assert '"access_count":9223372036854775807,' in line
    assert json.loads(line)["access_count"] == LARGEST
    service.search({"query": "overflowed"})
    assert access_count(raw, memory_id) == ("integer", LARGEST)
