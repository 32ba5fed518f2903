"""Every text field of a memory (content, source, each tag, scope) is redacted, on every
path that writes one; filters written as the memory was sent still find it."""

from __future__ import annotations

import json

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from agent_memory.cli.main import cli
from agent_memory.http.rest import create_app
from agent_memory.mcp import server as mcp_server
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.transfer import jsonl

GITHUB = "ghp_" + "k3Jx9QmZ2vT8wLp4Rn6Yb1Hc7Fd5Gs0AeUoI"
REMOTE = f"https://x-access-token:{GITHUB}@github.com/acme/app.git"
SEALED = "https://x-access-token:[redacted:github-token]@github.com/acme/app.git"
MEMORY = {
    "content": f"deploy with {GITHUB}",
    "type": "PATTERN",
    "tags": ["ci", f"token={GITHUB}"],
    "source": REMOTE,
    "scope": REMOTE,
}


def stored_bytes(db_path) -> bytes:
    """The database file and its write-ahead log, as they are on disk."""
    found = b""
    for suffix in ("", "-wal"):
        path = db_path.with_name(db_path.name + suffix)
        if path.exists():
            found += path.read_bytes()
    return found


def assert_no_secret_on_disk(db_path) -> None:
    on_disk = stored_bytes(db_path)
    assert on_disk  # something was written
    assert GITHUB.encode() not in on_disk
    assert GITHUB.lower().encode() not in on_disk  # nor the keyword index's token


def test_store_redacts_every_text_field_and_says_so(service, db_path):
    answer = service.store(MEMORY)
    assert answer["redacted"] == ["github-token"] * 4  # content, source, a tag, scope
    (memory,) = service.list({})
    assert memory["content"] == "deploy with [redacted:github-token]"
    assert memory["source"] == SEALED
    assert memory["tags"] == ["ci", "token=[redacted:github-token]"]
    assert memory["scope"] == SEALED
    service.close()
    assert_no_secret_on_disk(db_path)


@pytest.mark.parametrize(
    ("source", "stored"),
    [
        (
            f"https://{GITHUB}@github.com/o/r.git",
            "https://[redacted:github-token]@github.com/o/r.git",
        ),
        (
            f"https://{GITHUB}:x-oauth-basic@github.com/o/r.git",
            "https://[redacted:github-token]:x-oauth-basic@github.com/o/r.git",
        ),
    ],
)
def test_a_token_as_the_user_of_a_source_url_is_one_secret(service, source, stored):
    answer = service.store({"content": "the app's remote", "type": "PATTERN", "source": source})
    assert answer["redacted"] == ["github-token"]
    (memory,) = service.list({})
    assert memory["source"] == stored


def test_filters_written_as_the_memory_was_sent_still_find_it(service):
    memory_id = service.store(MEMORY)["id"]
    assert [m["id"] for m in service.list({"scope": REMOTE})] == [memory_id]
    assert [m["id"] for m in service.list({"tag": f"token={GITHUB}"})] == [memory_id]
    found = service.search({"query": "deploy", "scope": REMOTE, "tag": f"token={GITHUB}"})
    assert [r["id"] for r in found["results"]] == [memory_id]


def test_update_redacts_tags_and_scope(service):
    memory_id = service.store({"content": "plain", "type": "PATTERN"})["id"]
    answer = service.update({"id": memory_id, "tags": [GITHUB], "scope": REMOTE})
    assert answer["tags"] == ["[redacted:github-token]"]
    assert answer["scope"] == SEALED
    assert answer["redacted"] == ["github-token", "github-token"]


def test_redact_off_keeps_every_field_as_sent(db_path):
    svc = MemoryService(open_store(db_path), redact=False)
    try:
        svc.store(MEMORY)
        (memory,) = svc.list({"scope": REMOTE})
        assert (memory["source"], memory["tags"][1]) == (REMOTE, f"token={GITHUB}")
    finally:
        svc.close()


# -- every path that writes a memory --------------------------------------------------------


def _export_file(tmp_path):
    """A JSONL export holding MEMORY, as `agent-memory export` writes it."""
    path = tmp_path / "in.jsonl"
    header = jsonl.header(
        exported_at=0,
        embedding_model="nomic-embed-text",
        embedding_dim=768,
        schema_version=1,
        agent_memory_version="0.1.0",
        exported_rows=1,
        exported_links=0,
    )
    record = {
        "record": "memory",
        "key": 1,
        **{k: MEMORY[k] for k in ("type", "content", "tags", "source", "scope")},
        "created_at": 1,
        "last_accessed": 1,
        "access_count": 0,
        "expires_at": None,
    }
    path.write_text(jsonl.line(header) + jsonl.line(record), encoding="utf-8")
    return path


def _in_process(db_path, write) -> None:
    svc = MemoryService(open_store(db_path))
    try:
        write(svc)
    finally:
        svc.close()


def _patch():
    return {k: MEMORY[k] for k in ("content", "tags", "scope")}


def _over_mcp(db_path, name, args) -> None:
    async def main(svc):
        async with Client(mcp_server.build_server(svc)) as client:
            result = await client.call_tool(name, args)
            assert result.is_error is False, result

    _in_process(db_path, lambda svc: anyio.run(main, svc))


def _over_rest(db_path, method, path, body) -> None:
    def send(svc):
        client = create_app(svc).test_client()
        response = client.open(
            path,
            method=method,
            data=json.dumps(body),
            content_type="application/json",
            base_url="http://127.0.0.1:7437",
        )
        assert response.status_code in (200, 201), response.get_json()

    _in_process(db_path, send)


def _cli(db_path, *args) -> None:
    result = CliRunner().invoke(cli, ["--db", str(db_path), *args])
    assert result.exit_code == 0, result.output


def _first(db_path) -> None:
    """A memory without a secret, for the paths that update one."""
    _in_process(db_path, lambda svc: svc.store({"content": "first", "type": "PATTERN"}))


def write_through(path: str, db_path, tmp_path) -> None:
    if path == "memory_store":
        _over_mcp(db_path, "memory_store", MEMORY)
    elif path == "memory_update":
        _first(db_path)
        _over_mcp(db_path, "memory_update", {"id": 1, **_patch()})
    elif path == "POST /api/memories":
        _over_rest(db_path, "POST", "/api/memories", MEMORY)
    elif path == "PATCH /api/memories/1":
        _first(db_path)
        _over_rest(db_path, "PATCH", "/api/memories/1", _patch())
    elif path == "store":
        tags = [option for tag in MEMORY["tags"] for option in ("--tag", tag)]
        options = ["--type", "PATTERN", *tags, "--source", REMOTE, "--scope", REMOTE]
        _cli(db_path, "store", MEMORY["content"], *options)
    elif path == "update":
        _first(db_path)
        tags = [option for tag in MEMORY["tags"] for option in ("--tag", tag)]
        _cli(db_path, "update", "1", "--content", MEMORY["content"], *tags, "--scope", REMOTE)
    elif path == "import --from jsonl":
        _cli(db_path, "import", "--from", "jsonl", str(_export_file(tmp_path)))
    elif path == "import --from gsd-state":
        state = tmp_path / "STATE.md"
        state.write_text(f"## Decisions\n- {MEMORY['content']}\n", encoding="utf-8")
        _cli(db_path, "import", "--from", "gsd-state", "--scope", REMOTE, str(state))
    else:
        raise AssertionError(path)


WRITE_PATHS = [
    "memory_store",
    "memory_update",
    "POST /api/memories",
    "PATCH /api/memories/1",
    "store",
    "update",
    "import --from jsonl",
    "import --from gsd-state",
]


@pytest.mark.parametrize("path", WRITE_PATHS)
def test_no_write_path_stores_a_secret(path, db_path, tmp_path):
    write_through(path, db_path, tmp_path)
    assert_no_secret_on_disk(db_path)
    svc = MemoryService(open_store(db_path))
    try:
        memories = svc.list({})
    finally:
        svc.close()
    assert any("[redacted:github-token]" in m["content"] for m in memories)
    assert all(m["scope"] in (None, SEALED) for m in memories)
