"""Fresh SQLite databases for the tests that only need one to work in: a copy of a session's
template, already at this build's head, instead of a database created and migrated per test.

A copy holds the template's rows byte for byte, so each one is given an id of its own (the
``meta`` row a daemon proves it serves) before anything opens it. Tests about creating,
migrating or identifying a database keep opening a really new file.
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

import sqlean

from agent_memory.storage import open_store
from agent_memory.storage.base import IDENTITY_KEY


def make_template(path: Path) -> Path:
    """A new database at ``path``, made and closed by the store itself."""
    open_store(path).close()
    return path


def fresh_copy(template: Path, path: Path) -> Path:
    """``path`` made a new database: the template's bytes with a new random id."""
    shutil.copyfile(template, path)
    conn = sqlean.connect(str(path))
    try:
        with conn:
            conn.execute(
                "UPDATE meta SET value = ? WHERE key = ?", (secrets.token_hex(16), IDENTITY_KEY)
            )
    finally:
        conn.close()
    return path
