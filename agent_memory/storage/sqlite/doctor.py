"""The SQLite store's doctor: what ``doctor`` checks in a file and what it repairs (the SQL
is in checks.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy
import sqlean

from agent_memory.contract.vocabulary import count
from agent_memory.storage.base import Finding
from agent_memory.storage.checks import vector_findings
from agent_memory.storage.sqlite import checks
from agent_memory.storage.sqlite.connections import Connections


def _size(path: Any) -> str:
    """A file's size for a person (MB, or bytes), or why it cannot be told."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        return exc.strerror or "gone"
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size} bytes"


class Doctor:
    """The checks and repairs of one store's file, on that store's connections."""

    def __init__(self, connections: Connections, path: Path, read_only: bool) -> None:
        self._connections = connections
        self.path = path
        self.read_only = read_only

    def check(self) -> list[Finding]:
        with self._connections.read() as conn:
            problems = checks.integrity(conn)
        shown = "; ".join(problems[: checks.SHOWN_PROBLEMS])
        if len(problems) > checks.SHOWN_PROBLEMS:
            shown += f" (and {len(problems) - checks.SHOWN_PROBLEMS} more)"
        found = [
            Finding(
                "SQLite integrity (PRAGMA integrity_check)",
                not problems,
                shown,
                repairable=checks.only_indexes(problems),
            )
        ]
        for name, look in (
            ("relations join existing memories", self._check_links),
            ("keyword index matches the memories (FTS5 integrity-check)", self._check_keywords),
            ("vectors", self._check_vectors),
        ):
            try:
                found += look()
            except (sqlalchemy.exc.SQLAlchemyError, sqlean.Error) as exc:
                if not problems:
                    raise
                detail = f"not checked: {getattr(exc, 'orig', None) or exc}"
                found.append(Finding(name, False, detail))  # the file is damaged
        return found + self._check_backups()

    def _check_links(self) -> list[Finding]:
        with self._connections.read() as conn:
            dangling = checks.dangling_links(conn)
        detail = f"{count(dangling, 'relation')} to memories that are gone" if dangling else ""
        return [Finding("relations join existing memories", not dangling, detail, True)]

    def _check_keywords(self) -> list[Finding]:
        name = "keyword index matches the memories (FTS5 integrity-check)"
        if self.read_only:  # FTS5 takes its check as an INSERT, which this file refuses
            return [Finding(name, True, "not checked: this user cannot write the file")]
        with self._connections.write() as conn:
            matches = checks.keyword_index_matches(conn)
        detail = "" if matches else "the index does not match the memories' content"
        return [Finding(name, matches, detail, True)]

    def _check_vectors(self) -> list[Finding]:
        with self._connections.read() as conn:
            return vector_findings(checks.vector_state(conn))

    def _check_backups(self) -> list[Finding]:
        """Backups beside the file (backups.py names them). The copies an interrupted backup
        left are removed when the file is opened for writing; one still here is being
        written now, or could not be removed (the log says why)."""
        from agent_memory.storage.sqlite import backups

        done, stray = (
            backups.backups(self.path),
            backups.stray_backup_temps(self.path),
        )
        found = [
            Finding(
                "no interrupted pre-migration backup",
                not stray,
                "; ".join(f"{path} ({_size(path)})" for path in stray)
                + (
                    ": copies of every memory, forgotten ones too; the next open removes them "
                    "once no migration is writing one"
                    if stray
                    else ""
                ),
            )
        ]
        if done:
            names = ", ".join(f"{path.name} ({_size(path)})" for path in done)
            found.append(Finding("pre-migration backups", True, names))
        return found

    def repair(self) -> list[str]:
        done: list[str] = []
        with self._connections.read() as conn:
            problems = checks.integrity(conn)
        if checks.only_indexes(problems):
            with self._connections.write() as conn:
                conn.exec_driver_sql(checks.REINDEX)
            done.append("rebuilt the indexes (REINDEX)")
        with self._connections.write() as conn:
            matches = checks.keyword_index_matches(conn)
        with self._connections.write() as conn:
            if not matches:
                conn.exec_driver_sql(checks.KEYWORD_REBUILD)
                done.append("rebuilt the keyword index from the memories")
            dangling = checks.repair_links(conn)
            if dangling:
                done.append(f"removed {count(dangling, 'relation')} to memories that are gone")
            done += checks.repair_vectors(conn)
        return done
