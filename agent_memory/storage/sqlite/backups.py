"""The names of the pre-migration backups beside a SQLite file, and the temporary copies an
interrupted backup leaves behind.

``<db>.backup-pre-NNNN-YYYYMMDD`` is the copy made before migrating to schema NNNN that day
(UTC). It is written as ``<that name>.tmp-PID`` (PID: the writer's), with SQLite's
``-journal`` beside it while it is written, then synced and renamed (migrate.backup). A
process killed meanwhile (SIGKILL; SIGTERM, which a migrating process does not catch) leaves
the temporary copy: the whole database, forgotten memories included. It is created 0600.

A temporary copy is written only while its writer holds the database's write lock (the
migration's ``BEGIN IMMEDIATE``). So a process holding that lock knows that every temporary
copy beside the file is a leftover, whatever its PID says: a PID may have been reused, and
means nothing to a process in another PID namespace (two containers sharing the volume).
``remove_stray_temps`` takes the lock without waiting and removes them all; when the lock is
busy it leaves them to the next open. Standard library and the driver only: the doctor
command lists strays with ``stray_backup_temps`` without opening the database.
"""

from __future__ import annotations

import datetime
import logging
import os
import re
from pathlib import Path

log = logging.getLogger(__name__)

BACKUP_INFIX = ".backup-pre-"
TEMP_INFIX = ".tmp-"
# What SQLite may keep beside a database it writes (the temporary copy is one).
SIDE_SUFFIXES = ("-journal", "-wal", "-shm")


def backup_path(path: Path, target: int, day: datetime.date) -> Path:
    """The backup of ``path`` made on ``day`` before migrating it to schema ``target``."""
    return path.with_name(f"{path.name}{BACKUP_INFIX}{target:04d}-{day:%Y%m%d}")


def temp_path(final: Path, pid: int | None = None) -> Path:
    """The temporary name ``final`` is written under by the process ``pid`` (this one)."""
    return final.with_name(f"{final.name}{TEMP_INFIX}{os.getpid() if pid is None else pid}")


def _names(path: Path) -> re.Pattern[str]:
    """Backups of ``path``: group 1 the target, 2 the day, 3 the temporary copy's PID (none
    for a finished backup), 4 a SQLite side file's suffix."""
    sides = "|".join(re.escape(s) for s in SIDE_SUFFIXES)
    return re.compile(
        re.escape(path.name + BACKUP_INFIX)
        + r"(\d{4})-(\d{8})(?:"
        + re.escape(TEMP_INFIX)
        + rf"(\d+)({sides})?)?"
    )


def _matching(path: Path) -> list[tuple[Path, re.Match[str]]]:
    prefix = path.name + BACKUP_INFIX
    names = _names(path)
    found = []
    try:
        entries = os.scandir(path.parent)
    except OSError:
        return []
    with entries:
        for entry in entries:
            if entry.name.startswith(prefix):
                match = names.fullmatch(entry.name)
                if match is not None:
                    found.append((Path(entry.path), match))
    return sorted(found)


def backups(path: str | os.PathLike[str], target: int | None = None) -> list[Path]:
    """The finished backups beside the database at ``path`` (for ``target`` only, if given)."""
    return [
        found
        for found, match in _matching(Path(path))
        if match.group(3) is None and (target is None or int(match.group(1)) == target)
    ]


def stray_backup_temps(db_path: str | os.PathLike[str]) -> list[Path]:
    """The temporary backup copies beside the database at ``db_path`` and their SQLite side
    files: a leftover of an interrupted backup, or one being written right now by a process
    holding the write lock (see the module doc)."""
    return [found for found, match in _matching(Path(db_path)) if match.group(3) is not None]


def remove_stray_temps(db_path: str | os.PathLike[str]) -> list[Path]:
    """Remove every temporary backup copy beside ``db_path``, holding its write lock (not
    waited for: when another process holds it, nothing is removed now). Returns what was
    removed. Any failure is logged and leaves the files for the next open."""
    path = Path(db_path)
    if not stray_backup_temps(path):  # the usual case: no lock taken
        return []
    import sqlean

    removed: list[Path] = []
    try:
        conn = sqlean.connect(str(path), timeout=0, isolation_level=None)
    except sqlean.Error as exc:
        log.warning("left the stray backup copies beside %s: %s", path, exc)
        return []
    try:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlean.OperationalError:  # busy: perhaps a migration writing one right now
            return []
        try:
            for stray in stray_backup_temps(path):
                stray.unlink(missing_ok=True)
                removed.append(stray)
        finally:
            conn.execute("ROLLBACK")
    except (OSError, sqlean.Error) as exc:
        log.warning("could not remove every stray backup copy beside %s: %s", path, exc)
    finally:
        conn.close()
    if removed:
        log.info(
            "removed %d copies left by an interrupted backup: %s",
            len(removed),
            ", ".join(p.name for p in removed),
        )
    return removed
