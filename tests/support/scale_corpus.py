"""Stores of a few hundred to a few thousand rows for the search-at-scale tests on both
engines: every row says "the", each has topic words, a type, an age and often tags."""

from __future__ import annotations

import random

DAY = 86_400
WORDS = ["sqlite", "kafka", "retry", "cache", "schema", "docker", "oauth", "billing"]
TYPES = ["DECISION", "PATTERN", "ERROR", "TODO", "ARCHITECTURE", "CONSTRAINT"]


def fill(
    service, clock, rows: int, seed: int = 5, repeats: bool = False, tagged: bool = True
) -> None:
    """Every row says "the"; each has one to three topic words, a type and an age; with
    ``tagged``, two rows in three have tags: topic words, and "the" now and then."""
    rng = random.Random(seed)
    for i in range(rows):
        topic = " ".join(rng.sample(WORDS, rng.randint(1, 3)))
        text = f"the {topic} note" if repeats else f"the {topic} note {i} " + "x " * (i % 7)
        tags = rng.sample([*WORDS, "the"], i % 3 if tagged else 0)
        service.store({"content": text, "type": rng.choice(TYPES), "tags": tags})
        clock.advance(rng.randint(0, 5 * DAY))


def keyword_page(service, question: str, limit: int) -> list[int]:
    """The keyword engine's page of ``question`` (the store's own ``_keyword_page``, as of
    the service's clock): what the shortcuts must make equal to the full query's. A search
    then puts words typed together first and ends the page where relevance drops."""
    from agent_memory.contract.models import Filters
    from agent_memory.query import read

    with service.db._read() as conn:
        rows, _ = service.db._keyword_page(conn, read(question), service.now(), limit, Filters())
    return [memory["id"] for memory, _ in rows]


def ids(found: list[dict]) -> list[int]:
    return [memory["id"] for memory in found]


def the_in_443_of_1000(service) -> None:
    """1,000 rows, "the" in 443: IDF about 0.23, so "the" is left out of the retry."""
    for i in range(443):
        service.store({"content": f"the x{i}", "type": "TODO"})
    for i in range(557):
        service.store({"content": f"other y{i}", "type": "TODO"})
