"""Opening the SQLite file: the one function every way into a SQLite store uses.

Resolve the path, connect through sqlean with sqlite-vec loaded, set the pragmas, and make
sure the schema is at this build's head. When the file is already at head (the usual case)
Alembic is never imported; the check is one read-only SELECT. SQLAlchemy is imported only
to build the engine: ``serve`` checks the file (``check`` and ``probe``) before its first
answer and builds the engine after it.

Commands that change what is there, or only read, open an existing file only (modes
EXISTING and READ): a missing one is DatabaseMissing and nothing is created. To read, a file
this user cannot write (a read-only file or directory) is opened read-only (read_only_uri).
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlean

from agent_memory import DISTRIBUTION
from agent_memory.contract.errors import (
    BackupFailed,
    DatabaseMissing,
    DatabaseOpenError,
    SchemaTooNew,
)
from agent_memory.settings import DB_ENV
from agent_memory.storage.base import CREATE, IDENTITY_KEY, READ
from agent_memory.storage.revisions import head_of, migrations_dir
from agent_memory.storage.sqlite import BUSY_TIMEOUT_MS, backups

if TYPE_CHECKING:
    import sqlalchemy
    from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

APP_NAME = "agent-memory"
DB_FILENAME = "memory.db"
# The inline checkpoint on commit is a backstop; the repository checkpoints in the background.
WAL_AUTOCHECKPOINT_PAGES = 4_000

WAL_SWITCH_RETRY_SECS = 0.005
# SQLite's primary result codes (an extended code's low byte: SQLITE_BUSY_SNAPSHOT is BUSY).
SQLITE_BUSY = 5
SQLITE_CORRUPT = 11


def resolve_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``--db`` wins, then ``$AGENT_MEMORY_DB``, then the platform's user data dir."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(DB_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / DB_FILENAME


def identity_key(path: Path, stored_id: str | None) -> bytes | None:
    """The key of the file at ``path`` holding ``stored_id`` (agent_memory.contract.identity): its
    place is the file's real path, the same by every path that leads to it (symbolic links
    and relative paths resolved), so a copy elsewhere has a key of its own."""
    if stored_id is None:
        return None
    from agent_memory.contract import identity  # hashlib and hmac: not for a brief or a plain open

    return identity.key(stored_id, os.path.realpath(path))


_READ_IDENTITY = f"SELECT value FROM meta WHERE key = '{IDENTITY_KEY}'"


def head_revision() -> int:
    """This build's schema version, read from the revision file names (no Alembic import)."""
    return head_of(migrations_dir() / "versions")


def _switch_to_wal(dbapi_conn: sqlean.Connection) -> None:
    """Set WAL mode, waiting out a concurrent switch.

    A file still in rollback-journal mode (an old file, a restored backup) is converted by
    the first connection that sets WAL. Two processes converting it at the same instant
    get SQLITE_BUSY at once, without the busy handler (SQLite's deadlock avoidance), so
    wait for the other one here, up to the busy timeout.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            dbapi_conn.execute("PRAGMA journal_mode = WAL").fetchall()
            return
        except sqlean.OperationalError as exc:
            if primary_code(exc) != SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(WAL_SWITCH_RETRY_SECS)


def primary_code(exc: BaseException) -> int | None:
    """SQLite's primary result code of an error sqlean raised, or SQLAlchemy wrapped (its
    extended code's low byte); None for any other error."""
    code = getattr(getattr(exc, "orig", None) or exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


@functools.cache
def vec0_path() -> str:
    """sqlite-vec's loadable extension, found without importing the package: its __init__
    imports numpy, which serve's first answer does not need."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or spec.origin is None:
        raise sqlean.OperationalError("the sqlite-vec package is not installed")
    return os.path.join(os.path.dirname(spec.origin), "vec0")


def _on_connect(dbapi_conn: sqlean.Connection, _record: object, read_only: bool = False) -> None:
    # We issue BEGIN ourselves (see _on_begin), so the driver must not.
    dbapi_conn.isolation_level = None
    dbapi_conn.enable_load_extension(True)
    try:
        dbapi_conn.load_extension(vec0_path())
    except sqlean.OperationalError as exc:  # a broken install: say what is missing
        raise sqlean.OperationalError(
            f"cannot load sqlite-vec ({exc}); reinstall {DISTRIBUTION}"
        ) from exc
    finally:
        dbapi_conn.enable_load_extension(False)
    # busy_timeout first: switching to WAL takes a lock a concurrent opener must wait for.
    dbapi_conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if read_only:  # the file stays as it is: no journal mode switch, nothing written
        dbapi_conn.execute("PRAGMA query_only = 1")
        return
    _switch_to_wal(dbapi_conn)
    dbapi_conn.execute("PRAGMA synchronous = NORMAL")
    dbapi_conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
    dbapi_conn.execute("PRAGMA foreign_keys = ON")
    # Statement journals in memory: a multi-row INSERT with triggers otherwise spills the
    # pages it changes to a temp file past a small size, which an import would pay per batch.
    dbapi_conn.execute("PRAGMA temp_store = MEMORY")


def _on_begin(conn: sqlalchemy.Connection) -> None:
    # Writers take the write lock up front: a deferred transaction that later upgrades
    # to a write fails at once with SQLITE_BUSY_SNAPSHOT instead of waiting.
    if conn.get_execution_options().get("sqlite_write", False):
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    else:  # a read's BEGIN takes no lock and cannot fail busy: on the driver, without
        # SQLAlchemy's execution layer, which a search's reads need not pay
        conn.connection.driver_connection.execute("BEGIN")


def create_engine(path: Path, read_only: bool = False) -> Engine:
    """An engine whose connections carry sqlite-vec, the pragmas and explicit BEGINs;
    ``read_only``: connections opened with read_only_uri, that never write."""
    import sqlalchemy
    from sqlalchemy import event

    if read_only:
        uri = read_only_uri(path)
        engine = sqlalchemy.create_engine(
            "sqlite://",
            module=sqlean,
            creator=lambda: sqlean.connect(uri, uri=True, check_same_thread=False),
        )
        event.listen(engine, "connect", lambda conn, record: _on_connect(conn, record, True))
    else:
        engine = sqlalchemy.create_engine(f"sqlite:///{path}", module=sqlean)
        event.listen(engine, "connect", _on_connect)
    event.listen(engine, "begin", _on_begin)
    return engine


def read_only_uri(path: Path) -> str:
    """A URI that reads ``path`` without writing anything beside it.

    A file with no -wal beside it is read as immutable, so SQLite creates no -wal or -shm
    and takes no lock (it could not in a read-only directory); one with a -wal (another
    process has it open) is read normally, read-only, so the newest committed data is seen.
    """
    real = path.resolve()  # SQLite keeps the -wal beside the file a symbolic link leads to
    live = Path(f"{real}-wal").exists()
    return f"{real.as_uri()}?mode=ro" + ("" if live else "&immutable=1")


def writable(path: Path) -> bool:
    """Whether this process can open ``path`` to write: the file, and its directory (where
    SQLite creates the -wal and -shm files) unless both are already there and writable."""
    if not os.access(path, os.W_OK):
        return False
    beside = [Path(f"{path}-wal"), Path(f"{path}-shm")]
    if all(p.exists() and os.access(p, os.W_OK) for p in beside):
        return True
    return os.access(path.parent, os.W_OK)


def cause(path: Path, detail: str) -> str:
    """SQLite's reason, preceded by what about the file explains it when something does."""
    if path.exists() and not os.access(path, os.R_OK):
        return f"the file is not readable ({detail})"
    if not os.access(path.parent, os.W_OK):
        return f"read-only directory {path.parent} ({detail})"
    if path.exists() and not os.access(path, os.W_OK):
        return f"read-only file ({detail})"
    return detail


def read_revision(path: Path) -> int | None:
    """The schema version stored in the file, None for a new file; changes nothing on disk."""
    rows = _peek(path, "SELECT version_num FROM alembic_version")
    if not rows:
        return None
    try:
        return int(rows[0][0])
    except (TypeError, ValueError) as exc:
        raise DatabaseOpenError(path, f"unrecognised schema version {rows[0][0]!r}") from exc


def read_meta(path: Path) -> dict[str, str]:
    """The file's ``meta`` table (the embedding pin among it), read as read_revision reads."""
    return dict(_peek(path, "SELECT key, value FROM meta"))


def _peek(path: Path, sql: str) -> list[Any]:
    """``sql``'s rows, read without SQLAlchemy and changing nothing on disk (read_only_uri);
    [] for a new file or a missing table."""
    if not path.exists() or path.stat().st_size == 0:
        return []
    try:
        conn = sqlean.connect(read_only_uri(path), uri=True)
    except sqlean.Error as exc:
        raise DatabaseOpenError(path, str(exc)) from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return conn.execute(sql).fetchall()
    except sqlean.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise DatabaseOpenError(path, cause(path, str(exc))) from exc
    except sqlean.DatabaseError as exc:
        raise DatabaseOpenError(path, cause(path, str(exc))) from exc
    finally:
        conn.close()


def _upgrade(engine: Engine, path: Path, head: int) -> None:
    from agent_memory.storage.sqlite import migrate  # imports Alembic: only when there is work

    migrate.upgrade(engine, path, head, migrations_dir())


def _create_private(path: Path) -> None:
    """A new database file is readable by its owner only (SQLite gives its -wal and -shm
    files the same mode). An existing file keeps the mode its owner chose."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass  # another process made it first
    except OSError as exc:
        raise DatabaseOpenError(path, exc.strerror or str(exc)) from exc


@dataclass
class Database:
    path: Path
    engine: Engine
    schema_version: int
    read_only: bool = False  # opened with read_only_uri: every write fails
    stored_id: str | None = None  # the meta row IDENTITY_KEY

    @property
    def identity_key(self) -> bytes | None:
        return identity_key(self.path, self.stored_id)

    def close(self) -> None:
        self.engine.dispose()


def check(path: str | os.PathLike[str] | None = None) -> tuple[Path, int | None]:
    """The file's path (its directories made) and its schema version, None for a new file.

    Raises DatabaseOpenError for a path that cannot hold the database and SchemaTooNew for
    a file written by a newer agent-memory.
    """
    resolved = resolve_path(path)
    if resolved.is_dir():
        raise DatabaseOpenError(resolved, "is a directory")
    try:
        missing = [d for d in (resolved.parent, *resolved.parent.parents) if not d.exists()]
        for directory in reversed(missing):  # each one private, not only the last
            directory.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise DatabaseOpenError(resolved, exc.strerror or str(exc)) from exc

    head = head_revision()
    current = read_revision(resolved)
    if current is not None and current > head:
        raise SchemaTooNew(current, head)
    return resolved, current


def probe(path: Path) -> None:
    """Connect as the engine will (read-write, WAL, every pragma): DatabaseOpenError if not."""
    try:
        conn = sqlean.connect(str(path))
    except sqlean.Error as exc:
        raise DatabaseOpenError(path, str(exc)) from exc
    try:
        _on_connect(conn, None)
        conn.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlean.Error as exc:
        raise DatabaseOpenError(path, str(exc)) from exc
    finally:
        conn.close()


def existing_path(path: str | os.PathLike[str] | None = None) -> Path:
    """The database's path, if a database is there (an empty file is none); DatabaseMissing
    otherwise, having created nothing."""
    resolved = resolve_path(path)
    if (resolved.is_file() and resolved.stat().st_size > 0) or resolved.is_dir():
        return resolved  # a directory: check() names it
    raise DatabaseMissing(resolved)


def open_database(path: str | os.PathLike[str] | None = None, *, mode: str = CREATE) -> Database:
    """Open (creating or migrating as needed) the memory database; ``mode`` as
    storage.open_store has it.

    Raises DatabaseOpenError for a file that cannot be used and SchemaTooNew for a file
    written by a newer agent-memory, which is then left untouched; DatabaseMissing when
    there is no database and ``mode`` is not CREATE (nothing is created).
    """
    import sqlalchemy

    if mode != CREATE:
        found = existing_path(path)
        if mode == READ and found.is_file() and not writable(found):
            return _open_read_only(found)
    resolved, current = check(path)
    head = head_revision()
    if current is None:
        _create_private(resolved)
    engine = create_engine(resolved)
    try:
        backups.remove_stray_temps(resolved)  # left by a killed migration: whole copies
        if current != head:
            _upgrade(engine, resolved, head)
        with engine.connect() as conn:  # the first real connection: re-check, it is cheap
            stored = int(conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar())
            stored_id = conn.exec_driver_sql(_READ_IDENTITY).scalar()
        if stored > head:  # a newer agent-memory migrated it since our first look
            raise SchemaTooNew(stored, head)
    except (SchemaTooNew, DatabaseOpenError, BackupFailed):
        engine.dispose()
        raise
    except (sqlalchemy.exc.SQLAlchemyError, sqlean.Error, OSError, ValueError, TypeError) as exc:
        engine.dispose()
        detail = str(getattr(exc, "orig", None) or exc)
        raise DatabaseOpenError(resolved, cause(resolved, detail)) from exc
    return Database(path=resolved, engine=engine, schema_version=head, stored_id=stored_id)


def _open_read_only(path: Path) -> Database:
    """An existing file at this build's schema, for reading only (see read_only_uri)."""
    import sqlalchemy

    head = head_revision()
    current = read_revision(path)
    if current is not None and current > head:
        raise SchemaTooNew(current, head)
    if current != head:
        raise DatabaseOpenError(
            path,
            f"read-only, and its schema (version {current or 0}) must be upgraded to version "
            f"{head} first: run agent-memory once with write access to it",
        )
    engine = create_engine(path, read_only=True)
    try:
        with engine.connect() as conn:
            stored_id = conn.exec_driver_sql(_READ_IDENTITY).scalar()
    except (sqlalchemy.exc.SQLAlchemyError, sqlean.Error) as exc:
        engine.dispose()
        raise DatabaseOpenError(path, cause(path, str(getattr(exc, "orig", exc)))) from exc
    log.debug("opened %s read-only: this process cannot write it", path)
    return Database(
        path=path, engine=engine, schema_version=head, read_only=True, stored_id=stored_id
    )
