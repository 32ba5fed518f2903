"""The PostgreSQL backend's URLs without a server: what is a URL, and what is shown and
logged of one (never its password), and the missing extra in one line."""

from __future__ import annotations

import sys

import pytest

from agent_memory import storage
from agent_memory.contract.errors import (
    DatabaseOpenError,
)
from agent_memory.storage.engines import engine_for
from agent_memory.storage.postgres import url as urls


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://amy:s3cret@db.example/team", "postgresql://amy:***@db.example/team"),
        ("postgresql://amy@db.example/team?sslmode=require", None),
        (
            "postgres://db/team?user=amy&password=s3cret&sslmode=verify-full",
            "postgres://db/team?user=amy&password=***&sslmode=verify-full",
        ),
        ("postgresql:///team?host=/run/postgresql", None),
    ],
)
def test_a_url_is_shown_without_its_password(url, shown):
    assert urls.redacted(url) == (shown or url)
    assert "s3cret" not in urls.redacted(url)


def test_only_postgresql_urls_are_urls():
    assert engine_for("postgresql://x/y").name == engine_for("postgres://x/y").name == "postgresql"
    assert engine_for("memory.db").name == engine_for(None).name == "sqlite"


def test_without_the_extra_a_url_is_one_clear_line(monkeypatch):
    for name in [m for m in sys.modules if m.startswith(("psycopg", "agent_memory.storage.pg"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delitem(sys.modules, "agent_memory.storage.postgres.database", raising=False)
    monkeypatch.delitem(sys.modules, "agent_memory.storage.postgres.store", raising=False)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    for call in (storage.open_store, storage.open_reader, storage.quick_pin):
        with pytest.raises(
            DatabaseOpenError, match=r"pip install 'typed-agent-memory\[postgres\]'"
        ):
            call("postgresql://amy:s3cret@db.example/team")
