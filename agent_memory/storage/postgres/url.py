"""PostgreSQL locations (``postgresql://...`` URLs), read without importing a driver.

Why here and not in psycopg: ``serve`` asks what a location is called in a log before
anything is connected (its scheme is storage.engines'), and a SQLite user must not pay for importing
psycopg. Which database a URL leads to is libpq's to say (services, ``hostaddr``,
``options``...): that is read from the database itself (agent_memory.contract.identity).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_PASSWORD_PARAMETER = re.compile(r"(^|&)password=[^&]*")


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
