"""PostgreSQL locations (``postgresql://...`` URLs), read without importing a driver.

Why here and not in psycopg: ``serve`` and ``ui`` ask whether a location is a URL, what it
is called in a log and which database it names before anything is connected, and a SQLite
user must not pay for importing psycopg.
"""

from __future__ import annotations

import hashlib
import os
import re
from urllib.parse import parse_qsl, unquote, urlsplit

SCHEMES = ("postgresql://", "postgres://")
# Hex digits of a database's identity, as for a SQLite file (storage.sqlite.database).
IDENTITY_HEX_CHARS = 16
DEFAULT_PORT = "5432"
_PASSWORD_PARAMETER = re.compile(r"(^|&)password=[^&]*")


def is_url(location: object) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than a SQLite file."""
    return isinstance(location, str) and location.lower().startswith(SCHEMES)


def redacted(url: str) -> str:
    """``url`` without its password (in the user part or as a ``password`` parameter): what
    logs and error messages show."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        user, host = netloc.rsplit("@", 1)
        if ":" in user:
            user = user.split(":", 1)[0] + ":***"
        netloc = f"{user}@{host}"
    query = _PASSWORD_PARAMETER.sub(r"\1password=***", parts.query)
    # By hand: urlunsplit drops the // of a URL with no host (a Unix socket's).
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")


def identity(url: str) -> str:
    """An opaque name for the database ``url`` names: host, port and database name as libpq
    resolves them (URL, then PGHOST, PGPORT, PGDATABASE), never the user or password."""
    parts = urlsplit(url)
    params = dict(parse_qsl(parts.query, True))
    host = unquote(parts.hostname or "") or params.get("host") or os.environ.get("PGHOST", "")
    port = str(parts.port or params.get("port") or os.environ.get("PGPORT") or DEFAULT_PORT)
    user = unquote(parts.username or "") or params.get("user") or os.environ.get("PGUSER", "")
    name = unquote(parts.path.lstrip("/")) or params.get("dbname") or os.environ.get("PGDATABASE")
    key = "\0".join([host, port, name or user])
    return hashlib.sha256(key.encode()).hexdigest()[:IDENTITY_HEX_CHARS]
