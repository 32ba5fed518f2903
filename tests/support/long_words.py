"""Words around the longest a PostgreSQL lexeme may be, and whether an engine can find one."""

from __future__ import annotations

from agent_memory import query

# Words around the limit, in bytes of UTF-8; multi-byte letters straddling it (ж is 2
# bytes, ა (Georgian) 3: neither is folded by remove_diacritics, so the lexeme keeps their bytes).
WORDS = {
    "2045": "x" * 2045,
    "2046": "x" * 2046,
    "2047": "x" * 2047,
    "2048": "x" * 2048,
    "2046-cyrillic": "ж" * 1023,
    "2047-cyrillic-then-x": "ж" * 1023 + "x",
    "2047-x-then-cyrillic": "x" * 2045 + "ж",
    "2046-3byte": "ა" * 682,
    "2049-3byte": "ა" * 683,
}


def indexed(location: str, word: str) -> bool:
    """Whether the engine at ``location`` can find ``word`` itself."""
    return "postgresql" not in location or len(query.lexeme(word).encode()) <= 2046
