"""Numbers and JSON text as clients send them, parsed so that the service can refuse them.

Only ASCII digits make a number: Python's int() and the regex class \\d also take "２"
(fullwidth) or "١" (Arabic-Indic), which must stay text. An integer of more than
MAX_INTEGER_DIGITS digits is never converted (int() refuses more than 4,300 digits and
is quadratic below that): it becomes a LongInteger that only counts them, which every
range check refuses. JSON text keeps lone surrogates ("\\ud800"), as Python's json does,
so that the service can name the field holding one. Free of heavy imports: the MCP
transport reads its stdin with it before the service is loaded.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Far above any value in range (ids and timestamps fit in 19 digits), far below int()'s cost.
MAX_INTEGER_DIGITS = 100
# A decimal integer as text; [0-9], never \d.
INTEGER = re.compile(r"-?[0-9]+")


class LongInteger:
    """An integer of more than MAX_INTEGER_DIGITS digits, kept as its count of digits."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"LongInteger(digits={self.digits})"


def integer(text: str) -> int | LongInteger:
    """The integer written ``text`` (which matches INTEGER): an int, or a LongInteger."""
    digits = text.lstrip("-").lstrip("0") or "0"
    if len(digits) > MAX_INTEGER_DIGITS:
        return LongInteger(len(digits))
    return -int(digits) if text.startswith("-") else int(digits)


def loads(text: str) -> Any:
    """JSON text as Python's json reads it, long integers as LongInteger.

    Raises ValueError (malformed) or RecursionError (nested too deeply)."""
    return json.loads(text, parse_int=integer)


def printable(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\ud800``): encodable."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
