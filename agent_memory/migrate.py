"""Schema upgrades with Alembic, run programmatically under the write lock.

Imported only when a file is not at head, so the usual start-up never pays for Alembic.
Several processes may open an old or new file at once: each takes ``BEGIN IMMEDIATE``,
re-reads the version under the lock, and only the first finds work to do. DDL runs inside
that one transaction (the engine issues its own BEGIN), so a failed upgrade leaves nothing.
"""

from __future__ import annotations

import logging
from pathlib import Path

import sqlalchemy
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Engine

from agent_memory import db
from agent_memory.errors import SchemaTooNew

log = logging.getLogger(__name__)


def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(db.migrations_dir()))
    return cfg


def current_revision(conn: sqlalchemy.Connection) -> int | None:
    rev = MigrationContext.configure(conn).get_current_revision()
    return None if rev is None else int(rev)


def upgrade(engine: Engine, path: Path, head: int) -> None:
    """Bring the file at ``path`` to ``head`` (or leave it, if another process just did)."""
    with engine.connect().execution_options(sqlite_write=True) as conn, conn.begin():
        current = current_revision(conn)
        if current == head:
            return
        if current is not None and current > head:
            raise SchemaTooNew(current, head)
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, f"{head:04d}")
        if current is None:
            log.info("created database %s at schema version %d", path, head)
        else:
            log.info("migrated database %s from schema version %d to %d", path, current, head)
