"""Argument checks: one function per kind of value, one message format, used by the service
for every transport (and by the import's reader for every record).

Each check takes the arguments as they arrived on the wire (a mapping of JSON values) and
returns the value as the service uses it, or raises InvalidArgument / InvalidType with the
field, the valid range and the value sent. Nothing here touches storage.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from agent_memory.contract import identity, wire
from agent_memory.contract.errors import InvalidArgument, InvalidType, UnknownField
from agent_memory.contract.models import Filters
from agent_memory.contract.vocabulary import (
    LINK_KINDS,
    MAX_LIMIT,
    MAX_MAX_CHARS,
    MAX_TTL_SECS,
    MEMORY_TYPES,
    MIN_MAX_CHARS,
    SQLITE_INT_MAX,
    SQLITE_INT_MIN,
)

# Limits that keep one client from filling the disk or the memory of every reader: the
# content's size in UTF-8 bytes (the service's max_content_bytes, set with
# --max-content-bytes), the number and length of tags, and source and scope lengths.
DEFAULT_MAX_CONTENT_BYTES = 1024 * 1024
MAX_TAGS = 64
MAX_TAG_CHARS = 256
MAX_LABEL_CHARS = 1024
# A value echoed in an error message is cut after this many characters (with …) and
# nesting; an integer of more than wire.MAX_INTEGER_DIGITS digits is only counted.
SHOWN_MAX_CHARS = 200
SHOWN_MAX_DEPTH = 8
_SHOWN_INT_BOUND = 10**wire.MAX_INTEGER_DIGITS
# An unknown argument's name is compared with the known ones (difflib's ratio, 0 to 1) when
# it is at most this long: at 0.7 `tag` finds `tags` (0.86), `scop` `scope`, `ttl_sec`
# `ttl_secs` and `ids` `id` (0.8), while `kind` does not find `id` (0.67) and `type`
# finds nothing among update's fields.
SUGGEST_CUTOFF = 0.7
SUGGEST_MAX_CHARS = 64


def shown(value: Any) -> str:
    """A value as the client sent it, for error messages: ``"5"``, ``true``, ``[1.5]``.

    Safe for anything, since it is sent back: cut after SHOWN_MAX_CHARS characters, lone
    surrogates escaped (``"\\ud800"``), an integer too long to print counted (``an integer
    of 5000 digits``), nesting cut after SHOWN_MAX_DEPTH levels. Only what is shown is walked.
    """
    text = ""
    for part in _parts(value, SHOWN_MAX_DEPTH):
        text += part
        if len(text) > SHOWN_MAX_CHARS:
            return text[:SHOWN_MAX_CHARS] + "…"
    return text


def _parts(value: Any, depth: int) -> Iterator[str]:
    """``value`` as JSON text, in pieces (see shown)."""
    if isinstance(value, str):
        yield wire.printable(json.dumps(value[: SHOWN_MAX_CHARS + 1], ensure_ascii=False))
    elif value is None or isinstance(value, bool | float):
        yield json.dumps(value)
    elif isinstance(value, int):
        yield str(value) if -_SHOWN_INT_BOUND < value < _SHOWN_INT_BOUND else _counted(value)
    elif isinstance(value, wire.LongInteger):
        yield f"an integer of {value.digits} digits"
    elif isinstance(value, Mapping | list | tuple):
        mapping = isinstance(value, Mapping)
        yield "{" if mapping else "["
        for position, item in enumerate(value.items() if mapping else value):
            if depth <= 1:
                yield "…"
                break
            yield ", " if position else ""
            if mapping:
                yield from _parts(item[0], depth - 1)
                yield ": "
                item = item[1]
            yield from _parts(item, depth - 1)
        yield "}" if mapping else "]"
    else:  # not from JSON: an in-process caller's object
        yield wire.printable(repr(value)[: SHOWN_MAX_CHARS + 1])


def _counted(value: int) -> str:
    """``an integer of N digits``, without printing it (str() refuses over 4,300 digits)."""
    magnitude = abs(value)
    estimate = int(magnitude.bit_length() * math.log10(2))  # the count is this or one more
    return f"an integer of {estimate + (magnitude >= 10**estimate)} digits"


def unicode(value: str, name: str, where: str = "") -> str:
    """``value``, if it is Unicode text: a lone surrogate (JSON's ``"\\ud800"``) can be
    neither stored nor sent back."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidArgument(
                f"{name} must be valid Unicode text "
                f"(got a lone surrogate at index {exc.start}{where})"
            ) from None
    return value


def mapping(args: Any) -> Mapping[str, Any]:
    """The arguments object; null (no arguments at all) reads as empty."""
    if args is None:
        return {}
    if not isinstance(args, Mapping):
        raise InvalidType(f"arguments must be an object (got {shown(args)})")
    return args


def known_fields(args: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    """Refuse an argument the operation does not read, naming the closest one it does: an
    agent that misspells ``tags`` must learn it, not get a memory without tags."""
    for name in args:
        if name not in allowed:
            shown_name = wire.printable(str(name))[:SHOWN_MAX_CHARS]
            raise UnknownField(shown_name, allowed, closest(shown_name, allowed))


def closest(name: str, known: tuple[str, ...]) -> str | None:
    """The known name ``name`` most likely stands for, if one is close enough: the same
    name in other case, the one name sharing a whole word with it (``memory_id`` -> ``id``,
    ``expand`` -> ``expand_links``), else the most similar spelling (``tag`` -> ``tags``)."""
    if len(name) > SUGGEST_MAX_CHARS:
        return None
    lowered = name.lower()
    if lowered in known:
        return lowered
    sharing = [k for k in known if _shares_a_word(lowered, k)]
    if len(sharing) == 1:
        return sharing[0]
    import difflib  # here, not at the top: serve answers before any argument is misspelt

    found = difflib.get_close_matches(lowered, known, n=1, cutoff=SUGGEST_CUTOFF)
    return found[0] if found else None


def _shares_a_word(a: str, b: str) -> bool:
    """One name is the other with words added before or after: ``to`` and ``to_id``."""
    short, long = sorted((a, b), key=len)
    return long.startswith(short + "_") or long.endswith("_" + short)


def integer(
    args: Mapping[str, Any], name: str, low: int, high: int, *, required: bool = False
) -> int | None:
    """An integer within [low, high]; None when absent or null. Never coerced."""
    value = args.get(name)
    if value is None:
        if required:
            raise InvalidType(f"{name} is required")
        return None
    if isinstance(value, wire.LongInteger):  # an integer, too long for any range
        raise InvalidArgument(f"{name} must be between {low} and {high} (got {shown(value)})")
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidType(f"{name} must be an integer (got {shown(value)})")
    if not low <= value <= high:
        raise InvalidArgument(f"{name} must be between {low} and {high} (got {shown(value)})")
    return value


def memory_id(args: Mapping[str, Any], name: str = "id") -> int:
    value = integer(args, name, SQLITE_INT_MIN, SQLITE_INT_MAX, required=True)
    assert value is not None
    return value


def limit(args: Mapping[str, Any], default: int | None) -> int | None:
    value = integer(args, "limit", 1, MAX_LIMIT)
    return default if value is None else value


def max_chars(args: Mapping[str, Any]) -> int | None:
    """A search's budget in characters; None: no budget."""
    return integer(args, "max_chars", MIN_MAX_CHARS, MAX_MAX_CHARS)


def ttl(args: Mapping[str, Any]) -> int | None:
    return integer(args, "ttl_secs", 1, MAX_TTL_SECS)


def optional_string(args: Mapping[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidType(f"{name} must be a string (got {shown(value)})")
    return unicode(value, name)


def required_string(args: Mapping[str, Any], name: str) -> str:
    if args.get(name) is None:
        raise InvalidType(f"{name} is required")
    value = optional_string(args, name)
    assert value is not None
    return value


def challenge(value: Any) -> str:
    """A daemon's identity challenge (contract.identity): fresh random hex, as ui sends."""
    if not isinstance(value, str) or not identity.CHALLENGE.fullmatch(value):
        raise InvalidArgument(
            f"challenge must be 32 lowercase hexadecimal digits (got {shown(value)})"
        )
    return value


def content(value: Any, max_bytes: int) -> str:
    if value is not None and not isinstance(value, str):
        raise InvalidType(f"content must be a non-empty string (got {shown(value)})")
    if value is None or not value.strip():  # null: "never null or empty", one message for both
        raise InvalidArgument("content must be a non-empty string")
    unicode(value, "content")
    if len(value) > max_bytes // 4:  # a char is at most 4 bytes: count only when it may matter
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise InvalidArgument(
                f"content must be at most {max_bytes} bytes of UTF-8 (got {size}); "
                "the limit is set with --max-content-bytes"
            )
    return value


def label(args: Mapping[str, Any], name: str) -> str | None:
    """source and scope: optional strings of at most MAX_LABEL_CHARS characters."""
    value = optional_string(args, name)
    if value is not None and len(value) > MAX_LABEL_CHARS:
        raise InvalidArgument(
            f"{name} must be at most {MAX_LABEL_CHARS} characters (got {len(value)})"
        )
    return value


def memory_type(args: Mapping[str, Any], *, required: bool) -> str | None:
    value = required_string(args, "type") if required else optional_string(args, "type")
    if value is not None and value not in MEMORY_TYPES:
        raise InvalidArgument(
            f"invalid memory type '{value}' (expected one of {', '.join(MEMORY_TYPES)})",
            prefixed=False,
        )
    return value


def tags(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise InvalidType(f"tags must be a list of strings (got {shown(value)})")
    if len(value) > MAX_TAGS:
        raise InvalidArgument(f"tags must hold at most {MAX_TAGS} tags (got {len(value)})")
    for position, tag in enumerate(value):
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidArgument(
                f"each tag must be at most {MAX_TAG_CHARS} characters "
                f"(got {len(tag)} in tag {position})"
            )
        unicode(tag, "each tag", f" in tag {position}")
    return value


def filters(args: Mapping[str, Any]) -> Filters:
    """The type, tag, scope and writer filters of a search or a list."""
    return Filters(
        memory_type(args, required=False),
        optional_string(args, "tag"),
        optional_string(args, "scope"),
        optional_string(args, "by"),
    )


_CURSOR = re.compile(r"(-?[0-9]{1,19}):(-?[0-9]{1,19})")


def cursor(args: Mapping[str, Any], name: str = "before") -> tuple[int, int] | None:
    """A list's keyset cursor ``"CREATED_AT:ID"``: the created_at and id of the last memory
    of the page before (None when absent or null). Made by the client from that memory, so
    it stays valid when that memory is forgotten meanwhile."""
    text = optional_string(args, name)
    if text is None:
        return None
    match = _CURSOR.fullmatch(text)
    point = (int(match.group(1)), int(match.group(2))) if match else None
    if point is None or not all(SQLITE_INT_MIN <= n <= SQLITE_INT_MAX for n in point):
        raise InvalidArgument(
            f'{name} must be "CREATED_AT:ID", the created_at and id of the last memory of '
            f'the previous page, e.g. "1767225600:42" (got {shown(text)})'
        )
    return point


def kind(args: Mapping[str, Any]) -> str:
    value = args.get("kind")
    if value is None:
        raise InvalidType("kind is required")
    if not isinstance(value, str):
        raise InvalidType(f"kind must be a string (got {shown(value)})")
    if value not in LINK_KINDS:
        unicode(value, "kind")
        raise InvalidArgument(f"kind must be one of {', '.join(LINK_KINDS)} (got '{value}')")
    return value


def flag(args: Mapping[str, Any], name: str, *, default: bool = False) -> bool:
    """A boolean argument; ``default`` when absent or null."""
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidType(f"{name} must be a boolean (got {shown(value)})")
    return value


def edge(args: Mapping[str, Any]) -> tuple[int, int, str, int, int]:
    """The request's ids and kind, and the edge as stored: relates_to smaller id first."""
    from_id = memory_id(args, "from_id")
    to_id = memory_id(args, "to_id")
    link_kind = kind(args)
    a, b = (
        (min(from_id, to_id), max(from_id, to_id))
        if link_kind == "relates_to"
        else (from_id, to_id)
    )
    return from_id, to_id, link_kind, a, b


def _encodable(name: str, value: str, tag: int | None = None) -> str:
    """Text UTF-8 can carry, as a store keeps it: a lone surrogate (JSON can spell one,
    ``"\\ud800"``) has no encoding, and the driver would refuse it at the write. ``tag``:
    the value's position in the list ``name``."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        where = "" if tag is None else f" in tag {tag}"
        raise InvalidArgument(
            f"{name} must be valid Unicode, without lone surrogates "
            f"(got \\u{ord(value[exc.start]):04x} at character {exc.start}{where})"
        ) from None
    return value


def _without_nul(name: str, value: str, tag: int | None = None) -> None:
    at = value.find("\x00")
    if at >= 0:
        where = "" if tag is None else f" in tag {tag}"
        raise InvalidArgument(
            f"{name} must not contain NUL characters (got one at character {at}{where})"
        )


def text_without_nul(args: Mapping[str, Any]) -> None:
    """Every text argument, and each text of a list argument (tags), without U+0000, on
    every engine: PostgreSQL's text cannot hold it, and both engines must keep the same
    memories (a SQLite file is exported into PostgreSQL)."""
    for name, value in args.items():
        if isinstance(value, str):
            _without_nul(name, value)
        elif isinstance(value, list):
            for position, item in enumerate(value):
                if isinstance(item, str):
                    _without_nul(name, item, position)


def without_nul_lines(text: str, what: str = "the file") -> None:
    """Refuse a file whose text holds U+0000 (an import that holds one is refused whole),
    naming the 1-based line."""
    at = text.find("\x00")
    if at >= 0:
        line = text.count("\n", 0, at) + 1
        column = at - (text.rfind("\n", 0, at) + 1)
        raise InvalidArgument(
            f"line {line}: {what} must not contain NUL characters (got one at character {column})"
        )


def import_record(record: Mapping[str, Any], max_content_bytes: int) -> None:
    """Refuse in a record of an export file what a store cannot keep (integers beyond 64
    bits, text UTF-8 cannot encode, NUL) and what a store call would refuse (the same
    limits).

    The reader calls this in its first pass, before the database is opened, once the
    record's fields have their JSON types; it names the line.
    """
    for name, value in record.items():  # by exact type: run on every field of an import
        kind_of = type(value)
        if kind_of is str:
            _encodable(name, value)
        elif kind_of is int:
            if not SQLITE_INT_MIN <= value <= SQLITE_INT_MAX:
                integer(record, name, SQLITE_INT_MIN, SQLITE_INT_MAX)  # its message
        elif kind_of is list:
            for position, tag in enumerate(value):
                _encodable(name, tag, position)
    text_without_nul(record)
    if record["record"] == "memory":
        memory_type(record, required=True)
        content(record["content"], max_content_bytes)
        tags(record["tags"])
        label(record, "source")
        label(record, "scope")
    elif record["record"] == "link":
        kind(record)
    elif record["record"] == "version":
        content(record["content"], max_content_bytes)
        tags(record["tags"])
        label(record, "scope")
        if record["change"] not in ("update", "duplicate"):
            raise InvalidArgument(
                f"change must be update or duplicate (got {shown(record['change'])})"
            )
