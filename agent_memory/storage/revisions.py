"""Where the schema migrations are, and this build's schema version for each engine.

One Alembic env.py serves every engine; an engine's revision chain is a folder under it
(SQLite's ``versions``, PostgreSQL's ``postgres``). Read from the file names, without
importing Alembic.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# agent_memory/, where the wheel carries the migrations (see migrations_dir).
PACKAGE_DIR = Path(__file__).resolve().parents[1]
_REVISION_FILE = re.compile(r"^(\d{4})_\w+\.py$")


def migrations_dir() -> Path:
    """The Alembic scripts: inside the installed wheel, or at the top of a source checkout."""
    packaged = PACKAGE_DIR / "migrations"
    return packaged if packaged.is_dir() else PACKAGE_DIR.parent / "migrations"


def head_of(chain: Path) -> int:
    """The highest revision number among the scripts in ``chain`` (a folder)."""
    return max(int(m.group(1)) for name in os.listdir(chain) if (m := _REVISION_FILE.match(name)))
