"""Files written safely: private temp files beside a target (exclusive, never through a
link, synced), and an export's output (atomically replaced, or streamed into a FIFO or a
device, cleaned up when a signal ends it).

Shared by export's ``--output`` (cli.py) and the pre-migration backup (migrate.py); only
the standard library, so the CLI can import it without paying for anything.
"""

from __future__ import annotations

import os
import signal
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


# -- an export's output ---------------------------------------------------------------------

EXPORT_BUFFER_BYTES = 1 << 20
# The signals that end an export early: its temp file is removed, then the process dies of
# the same signal (the status a shell shows as 128+N). One inherited as ignored (nohup's
# SIGHUP) stays ignored.
EXPORT_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# What --output may not be: these are refused rather than renamed over or written into.
REFUSED_OUTPUTS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


class OutputRefused(Exception):
    """An output path that must be neither replaced nor written into; the message says why."""


class Interrupted(BaseException):
    """A signal from EXPORT_SIGNALS arrived: unwind (cleanup runs), then die of it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def dying_of_signals() -> Iterator[None]:
    """Turn EXPORT_SIGNALS into Interrupted inside the block, then re-raise the signal."""
    installed = [s for s in EXPORT_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]

    def interrupted(signum: int, _frame: object) -> None:
        for each in installed:  # a second signal must not cut the cleanup short
            signal.signal(each, signal.SIG_IGN)
        raise Interrupted(signum)

    previous = {s: signal.signal(s, interrupted) for s in installed}
    try:
        yield
    except Interrupted as exc:
        signal.signal(exc.signum, signal.SIG_DFL)
        os.kill(os.getpid(), exc.signum)
        raise  # not reached: the default action ends the process
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def is_stream(path: Path) -> bool:
    """Whether --output names (perhaps through a link) a FIFO or a character device
    (/dev/null, a terminal, /dev/stdout's pipe): written into, never replaced.

    Raises OSError when the path cannot be looked at (a loop of links, no permission), and
    OutputRefused for an existing target that must be neither replaced nor written into: a
    symbolic link to a file (replacing it would swap the link for a file, or the file
    behind it, which may not be the user's), a block device, a socket.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        return True
    if path.is_symlink():
        raise OutputRefused(
            f"refusing to replace {path}: it is a symbolic link; give the path of the file itself"
        )
    if mode is not None and not stat.S_ISREG(mode):
        kind = REFUSED_OUTPUTS.get(stat.S_IFMT(mode), "not a regular file")
        raise OutputRefused(f"refusing to replace {path}: it is {kind}")
    return False


def write_chunks(fd: int, produce: Callable[[Callable[[str], object]], object]):
    """Run ``produce(write)`` into ``fd`` in chunks of EXPORT_BUFFER_BYTES.

    What is pending when something fails is dropped, not flushed: after a signal, an export
    blocked on a FIFO nobody reads must still be able to exit.
    """
    pending: list[bytes] = []
    size = 0

    def flush() -> None:
        nonlocal size
        view = memoryview(b"".join(pending))
        pending.clear()
        size = 0
        while view:
            view = view[os.write(fd, view) :]

    def write(text: str) -> None:
        nonlocal size
        data = text.encode()
        pending.append(data)
        size += len(data)
        if size >= EXPORT_BUFFER_BYTES:
            flush()

    result = produce(write)
    flush()
    return result


def write_through(path: Path, produce: Callable[[Callable[[str], object]], object]):
    """Run ``produce(write)`` straight into the FIFO or device at ``path`` (nothing renamed)."""
    fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)  # no O_CREAT, no O_TRUNC
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
            raise OSError(f"{path} was replaced by another kind of file while it was opened")
        return write_chunks(fd, produce)
    finally:
        os.close(fd)


def write_atomically(path: Path, produce: Callable[[Callable[[str], object]], object]):
    """Run ``produce(write)`` into a private temp file beside ``path``, then rename it over.

    The temp file, ``PATH.export-tmp-<pid>``, is created exclusively with mode 0600 (no
    readable instant, never through a link) in the target's directory (so the rename is
    atomic), synced before the rename, and removed if anything fails or a signal from
    EXPORT_SIGNALS arrives: ``path`` is either the old file or the complete new one.
    """
    directory = path.resolve().parent
    temp = f"{path}.export-tmp-{os.getpid()}"
    fd = create_temp(temp)
    try:
        try:
            result = write_chunks(fd, produce)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    fsync_directory(directory)
    return result
