"""Which project a directory belongs to: the scope a project's memories are kept under.

One rule for every place that picks a scope by itself (the session brief's ``--scope auto``
and the GSD import): the project directory is the top of the git work tree holding the
directory (a ``.git`` directory or file, as in a worktree or submodule, marks it), else
the directory itself; the scope is that directory's name. git itself is not run: looking
for ``.git`` upwards costs microseconds, and works where git is not installed.
"""

from __future__ import annotations

from pathlib import Path


def project_dir(start: Path) -> Path:
    """The top of the git work tree holding ``start`` (a directory), else ``start``."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return start


def scope_of(start: Path) -> str:
    """The scope of the project ``start`` (a directory) belongs to (see project_dir)."""
    found = project_dir(start)
    return found.name or str(found)  # the filesystem root has no name
