"""Every rejected input: the exact message, and nothing written."""

from __future__ import annotations

import pytest

from agent_memory.contract import wire
from agent_memory.contract.errors import InvalidArgument, UnknownField
from agent_memory.service.validate import shown as _shown

from conftest import dump

TYPES = "DECISION, PATTERN, ERROR, TODO, ARCHITECTURE, CONSTRAINT"
OK_STORE = {"content": "a valid memory", "type": "TODO"}
# JSON's "a\ud800b": a lone surrogate, which no UTF-8 text (the database, an answer) can hold
SURROGATE = "a\ud800b"
UNICODE = "must be valid Unicode text (got a lone surrogate at index 1)"
# 5000 digits: Python's str() and int() refuse more than 4,300
HUGE = 10**4999
LONG = wire.LongInteger(5000)  # the same integer as a transport parses it
COUNTED = "(got an integer of 5000 digits)"
ID_RANGE = f"between {-(2**63)} and {2**63 - 1}"
CURSOR = (
    'invalid argument: before must be "CREATED_AT:ID", the created_at and id of the last '
    'memory of the previous page, e.g. "1767225600:42"'
)

STORE_CASES = [
    ({"type": "TODO"}, "invalid argument: content is required"),
    ({"content": None, "type": "TODO"}, "invalid argument: content is required"),
    ({"content": "", "type": "TODO"}, "invalid argument: content must be a non-empty string"),
    ({"content": " \t\n", "type": "TODO"}, "invalid argument: content must be a non-empty string"),
    (
        {"content": 5, "type": "TODO"},
        "invalid argument: content must be a non-empty string (got 5)",
    ),
    ({"content": "x"}, "invalid argument: type is required"),
    ({"content": "x", "type": 3}, "invalid argument: type must be a string (got 3)"),
    ({"content": "x", "type": "todo"}, f"invalid memory type 'todo' (expected one of {TYPES})"),
    ({"content": "x", "type": "NOTE"}, f"invalid memory type 'NOTE' (expected one of {TYPES})"),
    ({**OK_STORE, "tags": "a"}, 'invalid argument: tags must be a list of strings (got "a")'),
    (
        {**OK_STORE, "tags": ["a", 1]},
        'invalid argument: tags must be a list of strings (got ["a", 1])',
    ),
    ({**OK_STORE, "source": 1}, "invalid argument: source must be a string (got 1)"),
    ({**OK_STORE, "scope": ["p"]}, 'invalid argument: scope must be a string (got ["p"])'),
    (
        {**OK_STORE, "ttl_secs": 0},
        "invalid argument: ttl_secs must be between 1 and 3155760000 (got 0)",
    ),
    (
        {**OK_STORE, "ttl_secs": -5},
        "invalid argument: ttl_secs must be between 1 and 3155760000 (got -5)",
    ),
    (
        {**OK_STORE, "ttl_secs": 3155760001},
        "invalid argument: ttl_secs must be between 1 and 3155760000 (got 3155760001)",
    ),
    ({**OK_STORE, "ttl_secs": "60"}, 'invalid argument: ttl_secs must be an integer (got "60")'),
    ({**OK_STORE, "ttl_secs": True}, "invalid argument: ttl_secs must be an integer (got true)"),
    ({**OK_STORE, "ttl_secs": 1.5}, "invalid argument: ttl_secs must be an integer (got 1.5)"),
    ({**OK_STORE, "ttl_secs": 60.0}, "invalid argument: ttl_secs must be an integer (got 60.0)"),
    # lone surrogates, in every string field
    ({"content": SURROGATE, "type": "TODO"}, f"invalid argument: content {UNICODE}"),
    ({"content": "x", "type": SURROGATE}, f"invalid argument: type {UNICODE}"),
    (
        {**OK_STORE, "tags": ["ok", SURROGATE]},
        "invalid argument: each tag must be valid Unicode text "
        "(got a lone surrogate at index 1 in tag 1)",
    ),
    ({**OK_STORE, "source": SURROGATE}, f"invalid argument: source {UNICODE}"),
    ({**OK_STORE, "scope": SURROGATE}, f"invalid argument: scope {UNICODE}"),
    (
        {**OK_STORE, "scope": [SURROGATE]},
        'invalid argument: scope must be a string (got ["a\\ud800b"])',
    ),
    # integers too long to print, as ints (in process) or as parsed by a transport
    (
        {**OK_STORE, "ttl_secs": HUGE},
        f"invalid argument: ttl_secs must be between 1 and 3155760000 {COUNTED}",
    ),
    (
        {**OK_STORE, "ttl_secs": -HUGE},
        f"invalid argument: ttl_secs must be between 1 and 3155760000 {COUNTED}",
    ),
    (
        {**OK_STORE, "ttl_secs": LONG},
        f"invalid argument: ttl_secs must be between 1 and 3155760000 {COUNTED}",
    ),
    (
        {"content": HUGE, "type": "TODO"},
        f"invalid argument: content must be a non-empty string {COUNTED}",
    ),
    (
        {**OK_STORE, "tags": [LONG]},
        "invalid argument: tags must be a list of strings (got [an integer of 5000 digits])",
    ),
]

SEARCH_CASES = [
    ({}, "invalid argument: query is required"),
    ({"query": 7}, "invalid argument: query must be a string (got 7)"),
    ({"query": "x", "limit": 0}, "invalid argument: limit must be between 1 and 200 (got 0)"),
    ({"query": "x", "limit": 201}, "invalid argument: limit must be between 1 and 200 (got 201)"),
    ({"query": "x", "limit": -1}, "invalid argument: limit must be between 1 and 200 (got -1)"),
    ({"query": "x", "limit": "5"}, 'invalid argument: limit must be an integer (got "5")'),
    ({"query": "x", "limit": True}, "invalid argument: limit must be an integer (got true)"),
    ({"query": "x", "limit": 1.5}, "invalid argument: limit must be an integer (got 1.5)"),
    (
        {"query": "x", "type": "decision"},
        f"invalid memory type 'decision' (expected one of {TYPES})",
    ),
    ({"query": "x", "tag": ["a"]}, 'invalid argument: tag must be a string (got ["a"])'),
    ({"query": "x", "scope": 1}, "invalid argument: scope must be a string (got 1)"),
    ({"query": SURROGATE}, f"invalid argument: query {UNICODE}"),
    ({"query": "x", "tag": SURROGATE}, f"invalid argument: tag {UNICODE}"),
    ({"query": "x", "scope": SURROGATE}, f"invalid argument: scope {UNICODE}"),
    ({"query": "x", "type": SURROGATE}, f"invalid argument: type {UNICODE}"),
    ({"query": "x", "limit": HUGE}, f"invalid argument: limit must be between 1 and 200 {COUNTED}"),
    ({"query": "x", "limit": LONG}, f"invalid argument: limit must be between 1 and 200 {COUNTED}"),
]

LIST_CASES = [
    ({"limit": 0}, "invalid argument: limit must be between 1 and 200 (got 0)"),
    ({"limit": 1000}, "invalid argument: limit must be between 1 and 200 (got 1000)"),
    ({"limit": "10"}, 'invalid argument: limit must be an integer (got "10")'),
    ({"limit": False}, "invalid argument: limit must be an integer (got false)"),
    ({"type": "Todo"}, f"invalid memory type 'Todo' (expected one of {TYPES})"),
    ({"tag": 1}, "invalid argument: tag must be a string (got 1)"),
    ({"tag": SURROGATE}, f"invalid argument: tag {UNICODE}"),
    ({"scope": SURROGATE}, f"invalid argument: scope {UNICODE}"),
    ({"type": SURROGATE}, f"invalid argument: type {UNICODE}"),
    ({"limit": LONG}, f"invalid argument: limit must be between 1 and 200 {COUNTED}"),
    ({"before": 5}, "invalid argument: before must be a string (got 5)"),
    ({"before": "abc"}, f'{CURSOR} (got "abc")'),
    ({"before": "1767225600"}, f'{CURSOR} (got "1767225600")'),
    ({"before": "1767225600:"}, f'{CURSOR} (got "1767225600:")'),
    ({"before": " 1:2"}, f'{CURSOR} (got " 1:2")'),
    ({"before": "1:２"}, f'{CURSOR} (got "1:２")'),  # ASCII digits only
    ({"before": f"1:{2**63}"}, f'{CURSOR} (got "1:{2**63}")'),
    ({"before": SURROGATE}, f"invalid argument: before {UNICODE}"),
]

UPDATE_CASES = [
    ({"content": "x"}, "invalid argument: id is required"),
    ({"id": "1", "content": "x"}, 'invalid argument: id must be an integer (got "1")'),
    ({"id": True, "content": "x"}, "invalid argument: id must be an integer (got true)"),
    (
        {"id": 1},
        "invalid argument: at least one of content, tags, scope, ttl_secs must be provided",
    ),
    ({"id": 1, "content": None}, "invalid argument: content must be a non-empty string"),
    ({"id": 1, "content": ""}, "invalid argument: content must be a non-empty string"),
    ({"id": 1, "content": "   "}, "invalid argument: content must be a non-empty string"),
    ({"id": 1, "tags": [None]}, "invalid argument: tags must be a list of strings (got [null])"),
    ({"id": 1, "scope": 5}, "invalid argument: scope must be a string (got 5)"),
    (
        {"id": 1, "ttl_secs": 0},
        "invalid argument: ttl_secs must be between 1 and 3155760000 (got 0)",
    ),
    ({"id": 1, "ttl_secs": "1"}, 'invalid argument: ttl_secs must be an integer (got "1")'),
    # a valid field does not rescue an invalid one: the whole patch is refused
    (
        {"id": 1, "tags": ["ok"], "ttl_secs": 0},
        "invalid argument: ttl_secs must be between 1 and 3155760000 (got 0)",
    ),
    ({"id": 1, "content": SURROGATE}, f"invalid argument: content {UNICODE}"),
    (
        {"id": 1, "tags": [SURROGATE]},
        "invalid argument: each tag must be valid Unicode text "
        "(got a lone surrogate at index 1 in tag 0)",
    ),
    ({"id": 1, "scope": SURROGATE}, f"invalid argument: scope {UNICODE}"),
    ({"id": HUGE, "content": "x"}, f"invalid argument: id must be {ID_RANGE} {COUNTED}"),
    (
        {"id": 1, "ttl_secs": LONG},
        f"invalid argument: ttl_secs must be between 1 and 3155760000 {COUNTED}",
    ),
]

FORGET_CASES = [
    ({}, "invalid argument: id is required"),
    ({"id": None}, "invalid argument: id is required"),
    ({"id": "1"}, 'invalid argument: id must be an integer (got "1")'),
    ({"id": 1.0}, "invalid argument: id must be an integer (got 1.0)"),
    (
        {"id": 2**63},
        f"invalid argument: id must be between {-(2**63)} and {2**63 - 1} (got {2**63})",
    ),
    ({"id": LONG}, f"invalid argument: id must be {ID_RANGE} {COUNTED}"),
    ({"id": -HUGE}, f"invalid argument: id must be {ID_RANGE} {COUNTED}"),
    ({"id": 10**100}, f"invalid argument: id must be {ID_RANGE} (got an integer of 101 digits)"),
    ({"id": [HUGE]}, "invalid argument: id must be an integer (got [an integer of 5000 digits])"),
]

LINK_CASES = [
    ({"from_id": 1, "to_id": 2, "kind": SURROGATE}, f"invalid argument: kind {UNICODE}"),
    (
        {"from_id": LONG, "to_id": 2, "kind": "relates_to"},
        f"invalid argument: from_id must be {ID_RANGE} {COUNTED}",
    ),
    (
        {"from_id": 1, "to_id": HUGE, "kind": "caused_by"},
        f"invalid argument: to_id must be {ID_RANGE} {COUNTED}",
    ),
]


@pytest.fixture
def seeded(service, db_path):
    service.store({"content": "an existing memory", "type": "DECISION", "tags": ["keep"]})
    return dump(db_path)


@pytest.mark.parametrize(
    "operation,args,message",
    [("store", a, m) for a, m in STORE_CASES]
    + [("search", a, m) for a, m in SEARCH_CASES]
    + [("list", a, m) for a, m in LIST_CASES]
    + [("update", a, m) for a, m in UPDATE_CASES]
    + [("forget", a, m) for a, m in FORGET_CASES]
    + [(op, a, m) for op in ("link", "unlink") for a, m in LINK_CASES],
)
def test_rejected_with_exact_message_and_nothing_written(
    service, db_path, seeded, raw, operation, args, message
):
    with pytest.raises(InvalidArgument) as raised:
        getattr(service, operation)(args)
    assert str(raised.value) == message
    message.encode("utf-8")  # every message can be sent back
    assert dump(db_path) == seeded
    assert raw.execute("SELECT count(*) FROM memory_links").fetchone() == (0,)


def _nested(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value,shown",
    [
        ("5", '"5"'),
        (True, "true"),
        (None, "null"),
        (1.5, "1.5"),
        (float("nan"), "NaN"),
        (["a", 1, {"k": [None]}], '["a", 1, {"k": [null]}]'),
        (SURROGATE, '"a\\ud800b"'),
        ({SURROGATE: 1}, '{"a\\ud800b": 1}'),
        (10**100 - 1, "9" * 100),
        (10**100, "an integer of 101 digits"),
        pytest.param(-HUGE, "an integer of 5000 digits", id="minus-10**4999"),
        pytest.param(2**20000, "an integer of 6021 digits", id="2**20000"),
        (wire.LongInteger(7000), "an integer of 7000 digits"),
        ("x" * 10_000, '"' + "x" * 199 + "…"),
        (list(range(10**6)), ", ".join(map(str, range(10**6)))[:199].join("[…")),
        (_nested(2000), "[" * 8 + "…" + "]" * 8),
        (
            {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": 1}}}}}}}},
            '{"a": {"b": {"c": {"d": {"e": {"f": {"g": {…}}}}}}}}',
        ),
    ],
)
def test_values_in_messages_are_shown_safely(value, shown):
    assert _shown(value) == shown
    shown.encode("utf-8")


def test_an_in_process_object_is_shown_by_its_repr():
    assert _shown(object()).startswith("<object object at")


@pytest.mark.parametrize(
    "patch,field,hint",
    [
        ({"id": 1, "type": "TODO"}, "type", ""),
        ({"id": 1, "source": "me"}, "source", ""),
        ({"id": 1, "ttl_sec": 5}, "ttl_sec", " (did you mean `ttl_secs`?)"),
        ({"id": 1, "content": "new text", "bogus": None}, "bogus", ""),
        ({"id": 1, "tags": ["x"], "expand_links": True}, "expand_links", ""),
        ({"id": 1, "tags": [], SURROGATE: 1}, "a\\ud800b", ""),
    ],
)
def test_update_unknown_field_fails_as_a_whole(service, db_path, seeded, patch, field, hint):
    with pytest.raises(UnknownField) as raised:
        service.update(patch)
    assert str(raised.value) == (
        f"failed to deserialize parameters: unknown field `{field}`, "
        f"expected one of `id`, `content`, `tags`, `scope`, `ttl_secs`{hint}"
    )
    assert dump(db_path) == seeded


@pytest.mark.parametrize("arguments", [["content"], "content", 5])
def test_arguments_must_be_an_object(service, arguments):
    with pytest.raises(InvalidArgument, match="arguments must be an object"):
        service.store(arguments)


@pytest.mark.parametrize("limit", [1, 200])
def test_limit_bounds_are_inclusive(service, limit):
    assert service.search({"query": "x", "limit": limit})["results"] == []
    assert service.list({"limit": limit}) == []


@pytest.mark.parametrize("ttl", [1, 3155760000])
def test_ttl_bounds_are_inclusive(service, clock, ttl):
    memory_id = service.store({**OK_STORE, "ttl_secs": ttl})["id"]
    assert service.list({})[0]["expires_at"] == clock.now + ttl
    assert service.update({"id": memory_id, "ttl_secs": ttl})["expires_at"] == clock.now + ttl


def test_null_optional_fields_on_store_mean_absent(service):
    memory_id = service.store(
        {**OK_STORE, "tags": None, "source": None, "scope": None, "ttl_secs": None}
    )["id"]
    (row,) = service.list({})
    assert row["id"] == memory_id
    assert (row["tags"], row["source"], row["scope"], row["expires_at"]) == ([], None, None, None)


@pytest.mark.parametrize(
    "text,value",
    [
        ("0", 0),
        ("-12", -12),
        ("007", 7),
        ("9" * 100, 10**100 - 1),
        ("-" + "0" * 5000 + "1", -1),
    ],
)
def test_wire_integers_are_converted_up_to_100_digits(text, value):
    assert wire.integer(text) == value


@pytest.mark.parametrize("text", ["1" * 101, "-" + "9" * 5000])
def test_wire_integers_beyond_100_digits_are_only_counted(text):
    counted = wire.integer(text)
    assert isinstance(counted, wire.LongInteger)
    assert counted.digits == len(text.lstrip("-"))


@pytest.mark.parametrize("text", ["２", "١", "1２", "+1", "1.0", " 1", ""])
def test_wire_integers_are_ascii_digits_only(text):
    assert wire.INTEGER.fullmatch(text) is None


def test_wire_json_keeps_lone_surrogates_and_counts_long_integers():
    value = wire.loads('{"a": "x\\ud800", "b": ' + "9" * 5000 + ', "c": [12, 1.5]}')
    assert value["a"] == "x\ud800"
    assert value["b"].digits == 5000
    assert value["c"] == [12, 1.5]
