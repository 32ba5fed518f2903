"""The committed fixtures of every released revision, and how the upgrade tests copy and read
them."""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path

import sqlean

from agent_memory.storage.sqlite import database as db
from tests.support.paths import FIXTURES

HEAD = db.head_revision()
OLD_FIXTURES = sorted(p for p in FIXTURES.glob("memory-*.db") if int(p.stem[-4:]) < HEAD)
ALL_FIXTURES = sorted(FIXTURES.glob("memory-*.db"))


def today() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y%m%d")


def copy_fixture(fixture: Path, tmp_path: Path) -> Path:
    target = tmp_path / "memory.db"
    shutil.copyfile(fixture, target)
    return target


def query(path: Path, sql: str) -> list[tuple]:
    conn = sqlean.connect(str(path))
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


ROWS = "SELECT id, type, content, tags, source, scope, created_at, expires_at FROM memories ORDER BY id"
