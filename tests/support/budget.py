"""Memories of known length and relevance for the token-budget tests, and which of them a search
used."""

from __future__ import annotations

DAY = 86_400
# For "budget", best first: LONG (the word is nearly all it says), SHORT, SMALL, LAST.
LONG = " ".join(["budget"] * 150) + " and a long explanation"
SHORT = "budget budget budget, in short"
SMALL = "budget budget once more"
LAST = "budget and other things too"


def fill(service, clock) -> dict[str, int]:
    """Four memories matching "budget", one not; then a day passes, so that a use shows in
    last_accessed."""
    ids = {
        name: service.store({"content": text, "type": "TODO"})["id"]
        for name, text in (("long", LONG), ("short", SHORT), ("small", SMALL), ("last", LAST))
    }
    service.store({"content": "nothing to do with it", "type": "TODO"})
    clock.advance(DAY)
    return ids


def used(service, clock) -> set[int]:
    return {m["id"] for m in service.list({}) if m["last_accessed"] == clock.now}
