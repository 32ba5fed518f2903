"""What doctor's vector checks find and say, the same on every engine: each engine counts
(storage/sqlite/checks.py, storage/postgres/checks.py), this turns the counts into findings
and repair lines."""

from __future__ import annotations

from dataclasses import dataclass

from agent_memory.contract.models import Pin
from agent_memory.contract.vocabulary import count
from agent_memory.storage.base import Finding

PIN_AND_TABLES = "the pin and its vector tables"


@dataclass(frozen=True)
class Vectors:
    """The vectors' state: counts of memories in each kind of trouble."""

    pin: Pin | None
    paired: bool  # the pin and its vector tables exist together, or neither does
    orphans: int = 0  # vectors whose memory is gone
    misfits: int = 0  # vectors of another size than the pin's
    missing: int = 0  # memories marked embedded without their vector
    stale: int = 0  # vectors of memories waiting for a new one


def vector_findings(state: Vectors) -> list[Finding]:
    pin = state.pin
    if not state.paired:
        detail = (
            f"the pin names {pin.describe()} but its vector tables are missing"
            if pin is not None
            else "vector tables without a pin"
        )
        return [Finding(PIN_AND_TABLES, False, detail, True)]
    pinned = pin.describe() if pin is not None else "no vector yet"
    found = [Finding(PIN_AND_TABLES, True, pinned)]
    for name, number, trouble in (
        ("vectors belong to memories", state.orphans, "the vectors of {} that are gone"),
        ("vectors have the pinned size", state.misfits, "the vectors of {}: another size"),
        (
            "memories marked embedded have their vector",
            state.missing,
            "{} marked embedded without a vector",
        ),
        (
            "memories waiting for a vector hold none",
            state.stale,
            "{} waiting for a vector but holding an old one",
        ),
    ):
        detail = trouble.format(count(number, "memory")) if number else ""
        found.append(Finding(name, not number, detail, True))
    return found


def vector_repairs(
    *,
    unpaired: int | None = None,
    orphans: int = 0,
    misfits: int = 0,
    missing: int = 0,
    stale: int = 0,
) -> list[str]:
    """The lines of a vector repair: ``unpaired``, the memories made pending when the pin
    and its tables were dropped for not going together; the others, memories put right."""
    if unpaired is not None:
        return [
            "the pin and its vector tables did not go together: dropped both; "
            f"{count(unpaired, 'memory')} wait for a vector again"
        ]
    done = []
    if orphans:
        done.append(f"removed the vectors of {count(orphans, 'memory')} that are gone")
    if misfits:
        done.append(f"{count(misfits, 'memory')} had a vector of another size: pending again")
    if missing:
        done.append(f"{count(missing, 'memory')} marked embedded had no vector: pending again")
    if stale:
        done.append(f"removed the old vectors of {count(stale, 'memory')} waiting for a new one")
    return done
