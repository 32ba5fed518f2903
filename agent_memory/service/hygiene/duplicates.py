"""What a store answers when it duplicates a memory (decisions, "Content"): the existing
id, named again as ``duplicate_of`` so that an agent sees nothing new was made."""

from __future__ import annotations

from typing import Any


def stored(memory_id: int, duplicate: bool, redacted: list[str]) -> dict[str, Any]:
    """memory_store's answer: ``{"id": N}``, with ``duplicate_of`` when the content was
    already stored, and the kinds of secret ``redacted`` when any was."""
    answer: dict[str, Any] = {"id": memory_id}
    if duplicate:
        answer["duplicate_of"] = memory_id
    if redacted:
        answer["redacted"] = redacted
    return answer
