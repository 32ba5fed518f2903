"""Opening a PostgreSQL database: the engine, and the schema brought to this build's head.

Several servers may start together on one database: the first one that finds work takes a
transaction-level advisory lock (MIGRATION_LOCK), re-reads the version under it and
migrates; the others wait on the lock and then find nothing to do. PostgreSQL's DDL is
transactional, so a failed migration leaves nothing. A database of a newer schema is
refused and left untouched, as on SQLite. There is no pre-migration copy: backing up a
PostgreSQL database is its operator's job (README).

Connections are made by psycopg from the URL as given (libpq's rules: PGPASSWORD, .pgpass,
sslmode and host parameters work as for psql); SQLAlchemy only pools them. Only the URL
without its password (url.redacted) reaches a log or an error message.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import sqlalchemy
from sqlalchemy.engine import Engine

from agent_memory.contract import identity
from agent_memory.contract.errors import DatabaseMissing, DatabaseOpenError, SchemaTooNew
from agent_memory.storage.base import CREATE, EXISTING, IDENTITY_KEY, READ
from agent_memory.storage.postgres import url as urls
from agent_memory.storage.revisions import head_of, migrations_dir

log = logging.getLogger(__name__)

# pg_advisory_xact_lock key of schema migrations ("agent-mm" in ASCII, an arbitrary constant
# that other applications on the same server are unlikely to use).
MIGRATION_LOCK = 0x6167656E742D6D6D
POOL_SIZE = 5
POOL_OVERFLOW = 10
# libpq's connect_timeout when the URL gives none: a server that does not answer is an
# error within seconds, not a hang.
CONNECT_TIMEOUT_SECS = 10
_VERSION = "SELECT version_num FROM alembic_version"
_HAS_VERSION = "SELECT to_regclass('alembic_version') IS NOT NULL"
# SQLSTATEs of CREATE EXTENSION on a server without the extension's files: feature_not_supported
# on recent servers, undefined_file on older ones.
_NO_EXTENSION = ("0A000", "58P01")


def versions_dir() -> Path:
    """PostgreSQL's revision chain, beside SQLite's (one env.py for both)."""
    return migrations_dir() / "postgres"


def head_revision() -> int:
    return head_of(versions_dir())


def connect(url: str) -> psycopg.Connection[Any]:
    """A libpq connection for ``url`` (connect_timeout added when the URL has none)."""
    extra = {} if "connect_timeout" in url else {"connect_timeout": CONNECT_TIMEOUT_SECS}
    return psycopg.connect(url, **extra)


def identity_key(conn: psycopg.Connection[Any]) -> bytes | None:
    """The key of the database ``conn`` is connected to (agent_memory.contract.identity): its stored
    id, in the ``meta`` table its search_path leads to, with its name as its place (a copy
    made with CREATE DATABASE ... TEMPLATE holds the same id); None before it has one."""
    name, has_meta = conn.execute(
        "SELECT current_database(), to_regclass('meta') IS NOT NULL"
    ).fetchone()
    if not has_meta:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = %s", (IDENTITY_KEY,)).fetchone()
    return None if row is None else identity.key(row[0], name)


@dataclass
class Database:
    url: str
    engine: Engine
    schema_version: int
    identity_key: bytes | None = None

    @property
    def location(self) -> str:
        return urls.redacted(self.url)

    def close(self) -> None:
        self.engine.dispose()


def create_engine(url: str) -> Engine:
    return sqlalchemy.create_engine(
        "postgresql+psycopg://",
        creator=lambda: connect(url),
        pool_size=POOL_SIZE,
        max_overflow=POOL_OVERFLOW,
        # No ping per checkout: it would add a round trip to every store.
        # A connection the server
        # dropped fails one operation (a StorageFault, nothing half-written), and SQLAlchemy
        # then replaces the pool's connections.
        pool_pre_ping=False,
    )


def stored_version(conn: sqlalchemy.Connection) -> int | None:
    if not conn.exec_driver_sql(_HAS_VERSION).scalar():
        return None
    value = conn.exec_driver_sql(_VERSION).scalar()
    return None if value is None else int(value)


def _upgrade(conn: sqlalchemy.Connection, head: int) -> int | None:
    """Under the advisory lock, in the caller's transaction: the version found, migrated."""
    from alembic import command
    from alembic.config import Config

    conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
    current = stored_version(conn)
    if current is not None and current >= head:
        return current
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("path_separator", "os")
    cfg.set_main_option("version_locations", str(versions_dir()))
    cfg.attributes["connection"] = conn
    command.upgrade(cfg, f"{head:04d}")
    return current


def open_database(url: str, *, mode: str = CREATE) -> Database:
    """The database ``url`` names, at this build's schema; ``mode`` as storage.open_store.

    DatabaseOpenError when it cannot be reached (the cause without the password),
    SchemaTooNew for a newer schema, DatabaseMissing when it has no agent-memory schema and
    ``mode`` is not CREATE (nothing is created then).
    """
    location = urls.redacted(url)
    head = head_revision()
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            current = stored_version(conn)
            conn.rollback()
            if current is not None and current > head:
                raise SchemaTooNew(current, head)
            if current is None and mode in (READ, EXISTING):
                raise DatabaseMissing(location)
            if current != head:
                with conn.begin():
                    found = _upgrade(conn, head)
                if found is not None and found > head:
                    raise SchemaTooNew(found, head)
                if found != head:
                    log.info(
                        "%s database %s at schema version %d",
                        "created" if found is None else f"migrated from {found} the",
                        location,
                        head,
                    )
            driver = conn.connection.driver_connection
            key = identity_key(driver)
            driver.rollback()
    except (SchemaTooNew, DatabaseMissing):
        engine.dispose()
        raise
    except (sqlalchemy.exc.SQLAlchemyError, psycopg.Error, OSError, ValueError) as exc:
        engine.dispose()
        detail = str(getattr(exc, "orig", None) or exc).strip().replace(url, location)
        cause = detail.splitlines()[0] if detail else ""
        if _pgvector_missing(getattr(exc, "orig", None) or exc):
            cause = f"{cause}: {pgvector_hint(engine.dialect.server_version_info)}"
        raise DatabaseOpenError(location, cause) from exc
    return Database(url=url, engine=engine, schema_version=head, identity_key=key)


def _pgvector_missing(exc: BaseException) -> bool:
    """Whether ``exc`` is the server saying it has no pgvector to create the extension
    from: ``extension "vector" is not available``, or on older servers ``could not open
    extension control file ".../vector.control"``."""
    if not isinstance(exc, psycopg.Error) or exc.sqlstate not in _NO_EXTENSION:
        return False
    primary = exc.diag.message_primary or ""
    return '"vector"' in primary or "/vector.control" in primary


def pgvector_hint(server_version: tuple[int, ...] | None) -> str:
    """Where pgvector comes from: the OS package for the server's major version (NN when
    it is not known), or the embedded server whose steps are in docs/postgresql.md."""
    major = server_version[0] if server_version else "NN"
    return (
        f"install pgvector where PostgreSQL runs (Debian/Ubuntu: postgresql-{major}-pgvector; "
        "Homebrew: pgvector), or run the embedded PostgreSQL with pgvector as "
        "docs/postgresql.md in agent-memory's repository describes"
    )
