"""A database of known memories, for the fault tests to check that a fault leaves them readable."""

from __future__ import annotations

from pathlib import Path

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store


def seeded(db_path: Path, clock) -> list[str]:
    service = MemoryService(open_store(db_path), clock=clock)
    contents = [f"kept memory {i} about the fault" for i in range(20)]
    for content in contents:
        service.store({"content": content, "type": "DECISION"})
    service.close()
    return contents
