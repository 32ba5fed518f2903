"""A memory's fields: the one table every shape of a memory is derived from.

The MCP tools' schemas and the OpenAPI document (agent_memory.contract.schemas), the arguments of
memory_store and memory_update (vocabulary.ARGUMENTS), the columns every read selects and
an export writes (storage.base), the rows both engines insert (storage.common), the
JSONL record and its reader's checks (jsonl) all read this table. A new field is a row
here, plus the migration that adds its column.

Rules of the table:
- its order is the order a memory is answered in (reads, schemas); ``export`` orders the
  JSONL record, which is fixed by the format;
- ``schema`` is the value as a read answers it, one JSON type, never null; ``nullable``
  adds null to it where the shape allows null;
- ``initial`` is what a new row holds when the write does not give the field (NOW: the
  write's time); ``imported`` fields take the value of the export record instead.

Free of heavy imports on purpose: ``serve`` lists its tools from these before SQLAlchemy is
loaded (see cli.serve).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Schema = dict[str, Any]

MEMORY_TYPES = ("DECISION", "PATTERN", "ERROR", "TODO", "ARCHITECTURE", "CONSTRAINT")
MAX_TTL_SECS = 3_155_760_000  # about 100 years
# A new row's value for a field the write does not give: the write's time.
NOW = "now"
# How the service checks an argument's value (validate): the content (non-empty, within
# the size limit), a tag list, a label (a bounded string or null), a lifetime in seconds.
CONTENT, TAGS, LABEL, TTL = "content", "tags", "label", "ttl"
# Who stored or last changed a memory when no token says: stdio, the command line, and the
# daemon on loopback without tokens (service.actor). Rows older than the field hold it too.
LOCAL = "local"


@dataclass(frozen=True)
class Argument:
    """How memory_store and memory_update take a field: under ``name``, as ``schema`` (one
    JSON type: the MCP dialect), described per tool; a None description: the tool does
    not take it. ``nullable``: null is accepted (it clears, or is the same as omitting)."""

    name: str
    schema: Schema
    store: str | None = None
    update: str | None = None
    required: bool = False
    nullable: bool = True
    check: str = LABEL


@dataclass(frozen=True)
class Field:
    """One field of a memory (see the module's rules)."""

    name: str
    schema: Schema
    nullable: bool = False
    read: bool = True  # in every read's memory; else only in get's (with access_count)
    column: bool = True  # a column a new row is written with (id is the store's)
    export: int | None = None  # position in the JSONL record; None: derived, not exported
    export_key: str | None = None  # its key in the JSONL record, when not ``name``
    initial: Any = None
    imported: bool = False
    argument: Argument | None = None
    redacted: bool = False  # its text (each item of a list) has secrets replaced before a write
    # An export record may leave it out (a file older than the field): the importer fills it.
    omittable: bool = False


_INT = {"type": "integer"}
_TIME = {"type": "integer", "description": "Unix seconds."}
_TEXT = {"type": "string"}
_TAGS = {"type": "array", "items": {"type": "string"}}
_TYPE = {"type": "string", "enum": list(MEMORY_TYPES)}
_BY = {"type": "string", "description": f"A token's name, or `{LOCAL}`."}

FIELDS: tuple[Field, ...] = (
    Field("id", _INT, column=False, export=0, export_key="key"),
    Field(
        "content",
        _TEXT,
        redacted=True,
        export=2,
        imported=True,
        argument=Argument(
            "content",
            {**_TEXT, "minLength": 1},
            store="The memory text; non-empty.",
            update="New text; re-indexed.",
            required=True,
            nullable=False,
            check=CONTENT,
        ),
    ),
    Field(
        "type",
        _TYPE,
        export=1,
        imported=True,
        argument=Argument(
            "type",
            _TYPE,
            store="Memory category.",
            required=True,
            nullable=False,
        ),
    ),
    Field(
        "tags",
        _TAGS,
        redacted=True,
        export=3,
        imported=True,
        argument=Argument(
            "tags",
            _TAGS,
            store="Labels for exact-match filtering.",
            update="The new tags, replacing all; null clears.",
            check=TAGS,
        ),
    ),
    Field(
        "source",
        _TEXT,
        redacted=True,
        nullable=True,
        export=4,
        imported=True,
        argument=Argument(
            "source", _TEXT, store="Where it came from (a tool, a session); omit for none."
        ),
    ),
    Field(
        "scope",
        _TEXT,
        redacted=True,
        nullable=True,
        export=5,
        imported=True,
        argument=Argument(
            "scope",
            _TEXT,
            store="A project or area; omit for a global memory.",
            update="New scope; null makes it global.",
        ),
    ),
    Field("decay_score", {"type": "number"}, initial=1.0),
    Field("created_at", _TIME, export=6, initial=NOW, imported=True),
    Field("last_accessed", _TIME, export=7, initial=NOW),
    Field(
        "expires_at",
        _TIME,
        nullable=True,
        export=9,
        imported=True,
        argument=Argument(
            "ttl_secs",
            {"type": "integer", "minimum": 1, "maximum": MAX_TTL_SECS},
            store=f"Expire after this many seconds (1-{MAX_TTL_SECS}); omit for never.",
            update="New lifetime in seconds, counted from now; null removes the expiry.",
            check=TTL,
        ),
    ),
    Field(
        "access_count",
        {"type": "integer", "minimum": 0},
        read=False,
        export=8,
        initial=0,
        imported=True,
    ),
    # Who stored it and who last changed it (service.actor): set by the service, never
    # by an argument; an import keeps the file's, redacted as every text it writes.
    Field(
        "created_by", _BY, redacted=True, export=10, initial=LOCAL, imported=True, omittable=True
    ),
    Field(
        "updated_by", _BY, redacted=True, export=11, initial=LOCAL, imported=True, omittable=True
    ),
)

# An earlier version of a memory (memory_history; an export's ``version`` record): each of
# its text fields, and the field of a memory whose value it holds. A version's field is
# redacted where that field is, so every version that enters the database is redacted as a
# memory is.
VERSION_TEXT = {
    "content": "content",
    "tags": "tags",
    "scope": "scope",
    "written_by": "updated_by",
    "replaced_by": "updated_by",
    "change_source": "source",  # the source a duplicate store sent
}


def field(name: str) -> Field:
    """The row named ``name``."""
    return next(f for f in FIELDS if f.name == name)


def redacted_names(*, version: bool = False) -> tuple[str, ...]:
    """The text fields of a memory (``version``: of an earlier version) whose secrets are
    replaced before a write."""
    if version:
        return tuple(name for name, held in VERSION_TEXT.items() if field(held).redacted)
    return tuple(f.name for f in FIELDS if f.redacted)


def read_names() -> tuple[str, ...]:
    """A memory as every read answers it, in this order."""
    return tuple(f.name for f in FIELDS if f.read)


def exported() -> tuple[Field, ...]:
    """The fields an export writes, in the record's order."""
    return tuple(sorted((f for f in FIELDS if f.export is not None), key=lambda f: f.export))


def export_names() -> tuple[str, ...]:
    """The columns an export reads, in the record's order."""
    return tuple(f.name for f in exported())


def export_key(f: Field) -> str:
    return f.export_key or f.name


def column_names() -> tuple[str, ...]:
    """The fields a new row is written with, in this order (storage adds its own columns)."""
    return tuple(f.name for f in FIELDS if f.column)


def arguments(tool: str) -> tuple[Argument, ...]:
    """The arguments ``tool`` takes of a memory's fields (only store and update take any)."""
    return tuple(
        f.argument
        for f in FIELDS
        if f.argument is not None and getattr(f.argument, tool, None) is not None
    )


def argument_names(tool: str) -> tuple[str, ...]:
    return tuple(a.name for a in arguments(tool))


def input_schema(argument: Argument, tool: str) -> Schema:
    """An argument's schema in the MCP dialect: one type, with the tool's description."""
    return {**argument.schema, "description": getattr(argument, tool)}


def output_schema(f: Field) -> Schema:
    """A field's value as answered, nullable as ``anyOf`` a type and null."""
    return {"anyOf": [f.schema, {"type": "null"}]} if f.nullable else dict(f.schema)


def memory_properties(*, full: bool = False) -> Schema:
    """The properties of a memory as reads answer it; ``full``: as get answers it."""
    return {f.name: output_schema(f) for f in FIELDS if f.read or full}


def new_row(given: dict[str, Any], now: int, *, imported: bool = False) -> dict[str, Any]:
    """A new row's values of every column field, in the table's order: ``given``'s where
    it has one (an import gives only the ``imported`` fields; null is none for a field
    that cannot be null), else the field's initial."""
    row: dict[str, Any] = {}
    for f in FIELDS:
        if not f.column:
            continue
        value = given.get(f.name)
        if f.name in given and (f.imported or not imported) and (value is not None or f.nullable):
            row[f.name] = value
        else:
            row[f.name] = now if f.initial == NOW else f.initial
    return row


_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "string": (str,),
    "array": (list,),
    "number": (int, float),
}


def record_types() -> dict[str, tuple[tuple[type, ...], bool]]:
    """What the JSONL reader accepts of each exported field: key -> (Python types, may be
    omitted (reads as null)); a nullable or omittable field may be omitted."""
    out: dict[str, tuple[tuple[type, ...], bool]] = {}
    for f in exported():
        types = _PYTHON_TYPES[f.schema["type"]]
        out[export_key(f)] = ((*types, type(None)), True) if f.nullable else (types, f.omittable)
    return out
