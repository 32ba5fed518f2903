"""Schema upgrades with Alembic, run programmatically under the write lock, backup first.

Imported only when a file is not at head, so the usual start-up never pays for Alembic.
Several processes may open an old or new file at once: each takes ``BEGIN IMMEDIATE``,
re-reads the version under the lock, and only the first finds work to do. DDL runs inside
that one transaction (the engine issues its own BEGIN), so a failed upgrade leaves nothing.

Before an existing file is migrated it is copied with SQLite's online backup to
``<db>.backup-pre-NNNN-YYYYMMDD`` (NNNN the target version, the date in UTC; the names are
backups.py's). The copy reads the last committed state, which is the pre-migration database
because we hold the write lock. It is written to a temporary file, synced and renamed into
place, and only then are older copies for the same target removed. No backup, no migration.
A temporary file left by a killed backup is removed at the next open (backups.py).

The copy holds every memory, so it is no more readable than the database: mode 0600, or
the database's own mode when that is stricter. The temporary name is created exclusively
(files.create_temp: a link planted there is removed, never followed); SQLite opens its own
-journal, -wal and -shm beside it with O_NOFOLLOW, so a link there is removed by SQLite or
fails the backup; and the rename replaces whatever entry holds the final name (a link
included) without writing through it.
"""

from __future__ import annotations

import datetime
import logging
import os
from pathlib import Path

import sqlalchemy
import sqlean
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Engine

from agent_memory.contract.errors import BackupFailed, SchemaTooNew
from agent_memory.storage import files
from agent_memory.storage.revisions import migrations_dir
from agent_memory.storage.sqlite import BUSY_TIMEOUT_MS, backups

log = logging.getLogger(__name__)


def alembic_config(scripts: Path | None = None) -> Config:
    """Alembic's configuration for ``scripts`` (default: this build's migrations)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(scripts or migrations_dir()))
    return cfg


def current_revision(conn: sqlalchemy.Connection) -> int | None:
    rev = MigrationContext.configure(conn).get_current_revision()
    return None if rev is None else int(rev)


def _copy(source: Path, destination: Path) -> None:
    """SQLite online backup into a self-contained file (journal mode DELETE, no -wal)."""
    src = sqlean.connect(str(source))
    try:
        src.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        dst = sqlean.connect(str(destination))
        try:
            src.backup(dst)
            dst.execute("PRAGMA journal_mode = DELETE")
        finally:
            dst.close()
    finally:
        src.close()


def backup(path: Path, target: int) -> Path:
    """Copy ``path`` next to itself before migrating it to ``target``; BackupFailed if not."""
    final = backups.backup_path(path, target, datetime.datetime.now(datetime.UTC).date())
    temporary = backups.temp_path(final)
    fd = None
    try:
        fd = files.create_temp(temporary)
        _copy(path, temporary)
        if not files.same_file(fd, temporary):
            raise OSError(f"{temporary} was replaced while the copy was written")
        os.fchmod(fd, files.PRIVATE_MODE & os.stat(path).st_mode)
        os.fsync(fd)
        os.replace(temporary, final)
        files.fsync_directory(final.parent)
    except (OSError, sqlean.Error) as exc:
        if fd is not None and files.same_file(fd, temporary):
            temporary.unlink()
        raise BackupFailed(final, getattr(exc, "strerror", None) or str(exc)) from exc
    finally:
        if fd is not None:
            os.close(fd)
    for older in backups.backups(path, target):
        if older != final:
            older.unlink()
    return final


def upgrade(engine: Engine, path: Path, head: int, scripts: Path) -> None:
    """Bring the file at ``path`` to ``head`` with the Alembic ``scripts`` (or leave it, if
    another process just did)."""
    with engine.connect().execution_options(sqlite_write=True) as conn, conn.begin():
        current = current_revision(conn)
        if current == head:
            return
        if current is not None and current > head:
            raise SchemaTooNew(current, head)
        saved = None if current is None else backup(path, head)
        cfg = alembic_config(scripts)
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, f"{head:04d}")
    if saved is None:
        log.info("created database %s at schema version %d", path, head)
    else:
        log.info(
            "migrated database %s from schema version %d to %d (backup: %s)",
            path,
            current,
            head,
            saved,
        )
