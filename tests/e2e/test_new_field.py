"""A new field is one row of agent_memory.contract.fields, plus the migration that adds its column.

A child process adds a throwaway field (``mood``: a nullable text, exported, patchable) to
the table before anything reads it; the parent has added its column to a fresh database
the way a migration would. The field then shows in the MCP tools' schemas, the OpenAPI
document, a JSONL import and export, memory_update, and the rows of each engine.
"""

from __future__ import annotations

import json
import subprocess
import sys

import psycopg
import sqlean

from agent_memory import storage

pytest_plugins = ["tests.support.pg_fixtures"]

CHILD = r"""
import io, json, sys
from agent_memory.contract import fields

MOOD = fields.Field(
    "mood",
    {"type": "string"},
    nullable=True,
    export=12,
    imported=True,
    argument=fields.Argument("mood", {"type": "string"}, update="How it felt; null clears."),
)
fields.FIELDS = (*fields.FIELDS, MOOD)

from agent_memory import storage
from agent_memory.http import openapi
from agent_memory.mcp.tools import TOOLS
from agent_memory.transfer.portable import jsonl_reader
from agent_memory.service.core import MemoryService

location, source = sys.argv[1:3]
tools = {tool.name: tool for tool in TOOLS}
components = openapi.document()["components"]["schemas"]
found = {
    "update_input": tools["memory_update"].input_schema["properties"].get("mood"),
    "list_output": tools["memory_list"].output_schema["properties"]["memories"]["items"][
        "properties"
    ].get("mood"),
    "openapi_memory": components["Memory"]["properties"].get("mood"),
    "openapi_patch": components["PatchRequest"]["properties"].get("mood"),
}
service = MemoryService(storage.open_store(location), clock=lambda: 1_800_000_000)
reader = jsonl_reader(source)
reader.check()
found["imported"] = service.import_jsonl(reader)
found["listed"] = service.list({"limit": 10})
first = found["listed"][-1]["id"]
found["updated"] = service.update({"id": first, "mood": "tense"})
written = io.StringIO()
service.export(written.write)
found["exported"] = [json.loads(line) for line in written.getvalue().splitlines()]
service.close()
print(json.dumps(found))
"""

HEADER = {
    "record": "header",
    "format": "agent-memory-export",
    "version": 1,
    "exported_at": 1_700_000_000,
    "embedding_model": "nomic-embed-text",
    "embedding_dim": 768,
    "schema_version": 1,
    "agent_memory_version": "0.1.0",
    "exported_rows": 2,
    "exported_links": 0,
}


def record(key: int, content: str, mood: str | None) -> dict:
    return {
        "record": "memory",
        "key": key,
        "type": "DECISION",
        "content": content,
        "tags": ["t"],
        "source": None,
        "scope": None,
        "created_at": 1_700_000_000 + key,
        "last_accessed": 1_700_000_000 + key,
        "access_count": 0,
        "expires_at": None,
        "mood": mood,
    }


def add_column(location: str) -> None:
    """What the field's migration would do: the column, nullable, after the others."""
    storage.open_store(location).close()  # created at head
    statement = "ALTER TABLE memories ADD COLUMN mood TEXT"
    if location.startswith("postgresql"):
        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute(statement)
        return
    conn = sqlean.connect(location)
    conn.execute(statement)
    conn.commit()
    conn.close()


def stored_moods(location: str) -> list:
    statement = "SELECT content, mood FROM memories ORDER BY id"
    if location.startswith("postgresql"):
        with psycopg.connect(location) as conn:
            return [list(row) for row in conn.execute(statement)]
    conn = sqlean.connect(location)
    try:
        return [list(row) for row in conn.execute(statement)]
    finally:
        conn.close()


def test_a_field_added_to_the_table_reaches_every_shape(location, tmp_path):
    add_column(location)
    source = tmp_path / "in.jsonl"
    lines = [HEADER, record(1, "calm one", "calm"), record(2, "no mood", None)]
    del lines[2]["mood"]  # a nullable field may be left out of a record
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))

    done = subprocess.run(
        [sys.executable, "-c", CHILD, location, str(source)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)

    assert found["update_input"] == {"type": "string", "description": "How it felt; null clears."}
    assert found["list_output"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert found["openapi_memory"] == {"type": ["string", "null"]}
    assert found["openapi_patch"]["type"] == ["string", "null"]
    assert found["imported"]["imported"] == 2
    assert {m["content"]: m["mood"] for m in found["listed"]} == {
        "calm one": "calm",
        "no mood": None,
    }
    assert found["updated"]["mood"] == "tense"
    memories = [r for r in found["exported"] if r["record"] == "memory"]
    assert [(r["content"], r["mood"]) for r in memories] == [
        ("calm one", "tense"),
        ("no mood", None),
    ]
    assert list(memories[0])[-1] == "mood"  # the record's order: the table's export position
    assert stored_moods(location) == [["calm one", "tense"], ["no mood", None]]
