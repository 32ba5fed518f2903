"""Limits that protect the machine: content size, tags, labels, request bodies, file modes.

Each refusal is an invalid argument naming the field, the bound and the value, and writes
nothing.
"""

from __future__ import annotations

import json
import stat

import pytest
from click.testing import CliRunner

from agent_memory.app import open_service
from agent_memory.cli.main import cli
from agent_memory.contract.errors import InvalidArgument
from agent_memory.http.rest import MAX_BODY_BYTES, create_app
from agent_memory.service.core import MemoryService
from agent_memory.service.validate import (
    DEFAULT_MAX_CONTENT_BYTES,
    MAX_LABEL_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
)
from agent_memory.settings import Settings
from agent_memory.storage import open_store
from tests.support.files import dump

MIB = 1024 * 1024


def test_the_default_content_limit_is_one_mib():
    assert DEFAULT_MAX_CONTENT_BYTES == MIB


@pytest.mark.parametrize(
    ("content", "accepted"),
    [
        ("x" * MIB, True),
        ("x" * (MIB + 1), False),
        ("é" * (MIB // 2), True),  # two bytes each: exactly 1 MiB
        ("é" * (MIB // 2) + "x", False),
        ("🧠" * (MIB // 4), True),
        ("🧠" * (MIB // 4) + "x", False),
    ],
    ids=["ascii-at", "ascii-over", "2-byte-at", "2-byte-over", "4-byte-at", "4-byte-over"],
)
def test_content_is_measured_in_utf8_bytes(service, db_path, content, accepted):
    before = dump(db_path)
    if accepted:
        assert service.store({"content": content, "type": "TODO"}) == {"id": 1}
        return
    size = len(content.encode())
    with pytest.raises(InvalidArgument) as caught:
        service.store({"content": content, "type": "TODO"})
    assert str(caught.value) == (
        f"invalid argument: content must be at most {MIB} bytes of UTF-8 (got {size}); "
        "the limit is set with --max-content-bytes"
    )
    assert dump(db_path) == before


def test_the_limit_is_configurable_and_applies_to_updates(db_path, clock):
    small = MemoryService(open_store(db_path), clock=clock, max_content_bytes=10)
    try:
        small.store({"content": "0123456789", "type": "TODO"})
        before = dump(db_path)
        with pytest.raises(InvalidArgument, match=r"at most 10 bytes of UTF-8 \(got 11\)"):
            small.update({"id": 1, "content": "0123456789a"})
        with pytest.raises(InvalidArgument, match=r"at most 10 bytes"):
            small.store({"content": "ü" * 6, "type": "TODO"})
        assert dump(db_path) == before
    finally:
        small.close()


def test_the_cli_option_and_its_variable_reach_the_service(db_path, monkeypatch):
    settings = Settings(
        db=db_path,
        ollama_url="http://127.0.0.1:9",
        embed_model="nomic-embed-text",
        sweep_interval=3600,
        max_content_bytes=123,
    )
    svc = open_service(settings)
    try:
        assert svc.max_content_bytes == 123
    finally:
        svc.close()
    monkeypatch.setenv("AGENT_MEMORY_MAX_CONTENT_BYTES", "77")
    with cli.make_context("agent-memory", ["reembed"]) as ctx:
        ctx.invoke(cli.callback, **ctx.params)
        assert ctx.obj.max_content_bytes == 77
    result = CliRunner().invoke(cli, ["--max-content-bytes", "0", "reembed"])
    assert result.exit_code == 2 and "0 is not in the range x>=1" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"tags": [f"t{i}" for i in range(MAX_TAGS + 1)]},
            f"tags must hold at most {MAX_TAGS} tags (got {MAX_TAGS + 1})",
        ),
        (
            {"tags": ["ok", "y" * (MAX_TAG_CHARS + 1)]},
            f"each tag must be at most {MAX_TAG_CHARS} characters "
            f"(got {MAX_TAG_CHARS + 1} in tag 1)",
        ),
        (
            {"source": "s" * (MAX_LABEL_CHARS + 1)},
            f"source must be at most {MAX_LABEL_CHARS} characters (got {MAX_LABEL_CHARS + 1})",
        ),
        (
            {"scope": "s" * (MAX_LABEL_CHARS + 1)},
            f"scope must be at most {MAX_LABEL_CHARS} characters (got {MAX_LABEL_CHARS + 1})",
        ),
    ],
    ids=["tag-count", "tag-length", "source-length", "scope-length"],
)
def test_tags_and_labels_are_bounded_on_store_and_update(service, db_path, args, message):
    service.store({"content": "seed", "type": "TODO"})
    before = dump(db_path)
    with pytest.raises(InvalidArgument) as caught:
        service.store({"content": "x", "type": "TODO", **args})
    assert str(caught.value) == f"invalid argument: {message}"
    if "source" not in args:  # source cannot be changed by an update
        with pytest.raises(InvalidArgument) as caught:
            service.update({"id": 1, **args})
        assert str(caught.value) == f"invalid argument: {message}"
    assert dump(db_path) == before


def test_tags_and_labels_at_their_bounds_are_accepted(service):
    tags = [f"{i:03d}" + "t" * (MAX_TAG_CHARS - 3) for i in range(MAX_TAGS)]
    label = "l" * MAX_LABEL_CHARS
    memory_id = service.store(
        {"content": "x", "type": "TODO", "tags": tags, "source": label, "scope": label}
    )["id"]
    assert service.list({})[0]["tags"] == tags and memory_id == 1


def test_rest_bodies_are_bounded_with_room_for_the_largest_escaped_content(service, db_path):
    # 1 MiB of control characters is 6 MiB of JSON (\u0001 each), plus 1 MiB for the rest.
    assert create_app(service).config["MAX_CONTENT_LENGTH"] == 7 * MIB
    service.max_content_bytes = 8 * MIB
    assert create_app(service).config["MAX_CONTENT_LENGTH"] == 49 * MIB
    service.max_content_bytes = 100
    assert create_app(service).config["MAX_CONTENT_LENGTH"] == MAX_BODY_BYTES


def test_a_full_mib_of_control_characters_fits_through_rest(service):
    app = create_app(service)
    body = json.dumps({"content": "\x01" * MIB, "type": "TODO"})
    response = app.test_client().post(
        "/api/memories",
        data=body,
        content_type="application/json",
        base_url="http://127.0.0.1:7437",
    )
    assert response.status_code == 201


def test_a_new_database_file_is_private(tmp_path):
    path = tmp_path / "new.db"
    svc = MemoryService(open_store(path))
    svc.store({"content": "x", "type": "TODO"})  # makes the -wal and -shm
    try:
        for suffix in ("", "-wal", "-shm"):
            assert stat.S_IMODE((tmp_path / f"new.db{suffix}").stat().st_mode) == 0o600
        assert stat.S_IMODE(tmp_path.stat().st_mode) != 0o600  # an existing dir is left alone
    finally:
        svc.close()


def test_an_existing_file_keeps_its_mode(tmp_path):
    path = tmp_path / "shared.db"
    open_store(path).close()
    path.chmod(0o640)
    open_store(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
