"""The portable export format, v2: JSON Lines, a header, then memories, then links, then
the memories' earlier versions (v2's addition: ``version`` records, counted by the
header's ``exported_versions``). A v1 file (no versions) still reads; a reader of v1 refuses
a v2 file by its header's version before reading anything else (FormatTooNew).

Fields are written in the wire order of the format (dicts keep insertion order), optional
fields explicitly as null, so two exports of an unchanged database under the same clock are
byte-identical. Vectors, decay_score and embedding_status are derived data and do not travel.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from agent_memory.contract import fields
from agent_memory.contract.errors import FormatTooNew, InvalidArgument
from agent_memory.contract.vocabulary import count

FORMAT = "agent-memory-export"
VERSION = 2
# The first version whose files carry the memories' earlier versions.
HISTORY_VERSION = 2


def line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def header(
    *,
    exported_at: int,
    embedding_model: str,
    embedding_dim: int,
    schema_version: int,
    agent_memory_version: str,
    exported_rows: int,
    exported_links: int,
    exported_versions: int = 0,
) -> dict[str, Any]:
    return {
        "record": "header",
        "format": FORMAT,
        "version": VERSION,
        "exported_at": exported_at,
        "embedding_model": embedding_model,
        "embedding_dim": embedding_dim,
        "schema_version": schema_version,
        "agent_memory_version": agent_memory_version,
        "exported_rows": exported_rows,
        "exported_links": exported_links,
        "exported_versions": exported_versions,
    }


def memory(row: dict[str, Any]) -> dict[str, Any]:
    """A memory record from a row of the repository's export snapshot (the fields table
    gives the keys and their order)."""
    out: dict[str, Any] = {"record": "memory"}
    for f in fields.exported():
        out[fields.export_key(f)] = row[f.name]
    return out


def link(from_key: int, to_key: int, kind: str, created_at: int) -> dict[str, Any]:
    return {
        "record": "link",
        "from": from_key,
        "to": to_key,
        "kind": kind,
        "created_at": created_at,
    }


def version(key: int, row: dict[str, Any]) -> dict[str, Any]:
    """A version record: the memory's key, then an earlier version as storage.history keeps
    it (the record's fields, in their order)."""
    return {"record": "version", "key": key, **{n: row[n] for n in _VERSION_FIELDS}}


# -- the strict reader ----------------------------------------------------------------------

# field -> (accepted Python types, may be omitted (reads as null))
_INT = (int,)
_STR = (str,)
_FIELDS: dict[str, dict[str, tuple[tuple[type, ...], bool]]] = {
    "header": {
        "record": (_STR, False),
        "format": (_STR, False),
        "version": (_INT, False),
        "exported_at": (_INT, False),
        "embedding_model": (_STR, False),
        "embedding_dim": (_INT, False),
        "schema_version": (_INT, False),
        "agent_memory_version": (_STR, False),
        "exported_rows": (_INT, False),
        "exported_links": (_INT, False),
    },
    "memory": {"record": (_STR, False), **fields.record_types()},
    "link": {
        "record": (_STR, False),
        "from": (_INT, False),
        "to": (_INT, False),
        "kind": (_STR, False),
        "created_at": (_INT, False),
    },
}
_NULLABLE_STR = (str, type(None))
_NULLABLE_INT = (int, type(None))
_VERSION_TYPES: dict[str, tuple[tuple[type, ...], bool]] = {
    "content": (_STR, False),
    "tags": ((list,), False),
    "scope": (_NULLABLE_STR, True),
    "expires_at": (_NULLABLE_INT, True),
    "written_by": (_STR, False),
    "written_at": (_INT, False),
    "replaced_at": (_INT, False),
    "replaced_by": (_STR, False),
    "change": (_STR, False),
    "change_source": (_NULLABLE_STR, True),
}
_VERSION_FIELDS = tuple(_VERSION_TYPES)
_FIELDS["header"]["exported_versions"] = (_INT, True)
_FIELDS["version"] = {"record": (_STR, False), "key": (_INT, False), **_VERSION_TYPES}
_TYPE_NAMES = {int: "an integer", str: "a string", list: "an array", type(None): "null"}


def _names(items: Any) -> str:
    return ", ".join(f"`{name}`" for name in items)


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class _DuplicateField(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _unique_fields(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's fields, each given once: JSON lets a name repeat (the last value would
    win), which hides a field's first value from whoever reads the file."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise _DuplicateField(name)
            seen.add(name)
    return found


def _blank(text: str) -> bool:
    return not text.strip(" \t\r\n")


class Reader:
    """Validate a whole export file before anything is written; then stream its records.

    Every defect raises InvalidArgument naming the 1-based line; a file of a newer format
    version raises FormatTooNew. Blank lines at the end of the file (an editor's extra
    newline) are accepted; one followed by a record is a defect, as is a field given twice.
    ``check()`` is the first pass (it keeps only the keys seen, so memory stays small);
    ``records()`` the second, over a file known to be valid.

    The reader checks the format (fields, JSON types, keys, counts); ``check_record`` (the
    service's, see service.jsonl_reader) is called with each record whose fields are of the
    right types, and refuses by InvalidArgument what the database cannot or may not store.
    """

    def __init__(self, path: Any, check_record: Callable[[dict[str, Any]], None]):
        self.path = path
        self.check_record = check_record
        self.header: dict[str, Any] | None = None

    def _lines(self) -> Iterator[tuple[int, str]]:
        with open(self.path, encoding="utf-8", newline="\n") as handle:
            yield from enumerate(handle, start=1)

    def _object(self, number: int, text: str) -> dict[str, Any]:
        try:
            value = json.loads(text, object_pairs_hook=_unique_fields)
        except _DuplicateField as exc:
            raise _defect(number, f"duplicate field `{exc.name}`") from None
        except ValueError as exc:
            raise _defect(number, f"not valid JSON ({exc})") from None
        except RecursionError:
            raise _defect(number, "not valid JSON (nested too deeply)") from None
        if not isinstance(value, dict):
            raise _defect(number, f"expected a JSON object, got {_shown(value)[:40]}")
        return value

    def _fields(self, number: int, record: dict[str, Any], tag: str) -> None:
        fields = _FIELDS[tag]
        for name in record:
            if name not in fields:
                raise _defect(number, f"unknown field `{name}`, expected one of {_names(fields)}")
        for name, (types, optional) in fields.items():
            if name not in record:
                if optional:
                    record[name] = None
                    continue
                raise _defect(number, f"missing field `{name}`")
            value = record[name]
            if isinstance(value, bool) or not isinstance(value, types):
                expected = " or ".join(_TYPE_NAMES[t] for t in types)
                raise _defect(number, f"`{name}` must be {expected} (got {_shown(value)})")
        tags = record.get("tags")  # a memory's or a version's; no other record has an array
        if tags is not None and not all(isinstance(item, str) for item in tags):
            raise _defect(number, f"`tags` must be an array of strings (got {_shown(tags)})")

    def _storable(self, number: int, record: dict[str, Any]) -> None:
        try:
            self.check_record(record)
        except InvalidArgument as exc:
            raise _defect(number, exc.detail) from None

    def check(self) -> dict[str, Any]:
        """The validated header; raises on the first defect anywhere in the file."""
        keys: set[int] = set()
        rows = links = versions = 0
        header: dict[str, Any] | None = None
        blank = 0  # the first of the blank lines just read
        for number, text in self._lines():
            if _blank(text):
                blank = blank or number
                continue
            if blank:
                raise _defect(
                    blank, "an empty line (blank lines are accepted only at the end of the file)"
                )
            record = self._object(number, text)
            tag = record.get("record")
            if number == 1:
                if tag != "header":
                    raise _defect(1, "the first line must be the header record")
                version = record.get("version")
                if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
                    raise FormatTooNew(version, VERSION)
                self._fields(1, record, "header")
                self._storable(1, record)
                if record["format"] != FORMAT:
                    raise _defect(1, f"format must be {FORMAT} (got {_shown(record['format'])})")
                if version < 1:
                    raise _defect(1, f"version must be a positive integer (got {version})")
                header = record
                continue
            if tag == "header":
                raise _defect(number, "a second header record")
            if tag not in _FIELDS:
                raise _defect(number, f"unknown variant `{tag}`, expected one of {_names(_FIELDS)}")
            self._fields(number, record, tag)
            self._storable(number, record)
            if tag == "memory":
                self._memory(number, record, keys)
                rows += 1
            elif tag == "version":
                self._version(number, record, keys, header)
                versions += 1
            else:
                self._link(number, record, keys)
                links += 1
        if header is None:
            raise _defect(1, "the file is empty: expected the header record")
        if (rows, links) != (header["exported_rows"], header["exported_links"]):
            raise _defect(
                1,
                f"the header announces {count(header['exported_rows'], 'memory')} and "
                f"{count(header['exported_links'], 'link')}, the file holds {rows} and {links}",
            )
        if versions != (header["exported_versions"] or 0):
            announced = count(header["exported_versions"] or 0, "version")
            raise _defect(1, f"the header announces {announced}, the file holds {versions}")
        self.header = header
        return header

    def _memory(self, number: int, record: dict[str, Any], keys: set[int]) -> None:
        if record["access_count"] < 0:
            raise _defect(
                number, f"access_count must not be negative (got {record['access_count']})"
            )
        if record["key"] in keys:
            raise _defect(number, f"duplicate key {record['key']}")
        keys.add(record["key"])

    def _version(
        self, number: int, record: dict[str, Any], keys: set[int], header: dict[str, Any] | None
    ) -> None:
        assert header is not None
        if header["version"] < HISTORY_VERSION:
            raise _defect(number, f"a version record in a version {header['version']} file")
        if record["key"] not in keys:
            raise _defect(number, f"version `key` {record['key']} is not a memory in the file")

    def _link(self, number: int, record: dict[str, Any], keys: set[int]) -> None:
        if record["from"] == record["to"]:
            raise _defect(number, f"a link from key {record['from']} to itself")
        for end in ("from", "to"):
            if record[end] not in keys:
                raise _defect(number, f"link `{end}` key {record[end]} is not a memory in the file")

    def records(self) -> Iterator[dict[str, Any]]:
        """Every memory and link record, optional fields filled in (after ``check``)."""
        for number, text in self._lines():
            if number == 1 or _blank(text):
                continue
            record = json.loads(text)
            for name, (_types, optional) in _FIELDS[record["record"]].items():
                if optional:
                    record.setdefault(name, None)
            yield record


def _defect(number: int, detail: str) -> InvalidArgument:
    return InvalidArgument(f"line {number}: {detail}")
