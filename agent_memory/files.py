"""Private temp files beside a target: exclusive, never through a link, synced.

Shared by export's ``--output`` (cli.py) and the pre-migration backup (migrate.py); only
the standard library, so the CLI can import it without paying for anything.
"""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_MODE = 0o600
_EXCLUSIVE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def create_temp(path: str | os.PathLike[str]) -> int:
    """A new empty file at ``path``, mode 0600 whatever the umask; its descriptor.

    Whatever sits at the name first (a leftover of a crashed run with our pid, or a planted
    symlink) is unlinked: that removes the link itself, never what it points at. The file
    is then created exclusively, so if anything reappears there we fail instead of
    following it.
    """
    Path(path).unlink(missing_ok=True)
    fd = os.open(path, _EXCLUSIVE, PRIVATE_MODE)
    os.fchmod(fd, PRIVATE_MODE)  # exactly 0600 even under an odd umask such as 0277
    return fd


def same_file(fd: int, path: str | os.PathLike[str]) -> bool:
    """Whether the name ``path`` (not followed) is still the file open as ``fd``."""
    try:
        named = os.lstat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def fsync_directory(path: str | os.PathLike[str]) -> None:
    """Make a rename in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
