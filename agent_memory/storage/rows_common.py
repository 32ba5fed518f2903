"""The columns of the fields table a new row is written with, as every engine writes them:
each engine encodes what its column types need (tags) and adds the columns of its own
(base weight, content hash, the keyword index's, the embedding status)."""

from __future__ import annotations

from typing import Any

from agent_memory.contract import fields
from agent_memory.storage.base import NewMemory


def inserted(memory: NewMemory) -> dict[str, Any]:
    """The field columns of the row a store adds, in the table's order; a field the
    write does not give takes its initial value."""
    given = {
        "type": memory.memory_type,
        "content": memory.content,
        "tags": list(memory.tags),
        "source": memory.source,
        "scope": memory.scope,
        "expires_at": memory.expires_at,
        "created_by": memory.actor,
        "updated_by": memory.actor,
    }
    return fields.new_row(given, memory.now)


def imported(record: dict[str, Any], now: int) -> dict[str, Any]:
    """The field columns of the row an import adds for an export record (its ``imported``
    fields; the others as a new row's)."""
    return fields.new_row(record, now, imported=True)
