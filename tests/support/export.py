"""What the export tests share in process and spawned: a store holding every kind of row, and a
character device to write into."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def fill(svc, clock):
    a = svc.store(
        {"content": "We chose SQLite.", "type": "DECISION", "tags": ["db"], "scope": "kore"}
    )["id"]
    b = svc.store({"content": "Naïve café — résumé", "type": "PATTERN", "source": "chat"})["id"]
    c = svc.store({"content": "expires soon", "type": "TODO", "ttl_secs": 5})["id"]
    svc.link({"from_id": b, "to_id": a, "kind": "relates_to"})
    svc.link({"from_id": c, "to_id": a, "kind": "caused_by"})
    svc.link({"from_id": a, "to_id": b, "kind": "supersedes"})
    clock.advance(10)  # c is expired now, and still exported
    return a, b, c


def char_device(tmp_path: Path, name: str) -> Path:
    """A private copy of /dev/NAME when we may make one (root): a bug then replaces only
    the copy, never the machine's device; else the real one (which a bug cannot replace)."""
    real = Path("/dev") / name
    if os.geteuid() != 0:
        return real
    node = tmp_path / name
    os.mknod(node, stat.S_IFCHR | 0o666, real.stat().st_rdev)
    return node
