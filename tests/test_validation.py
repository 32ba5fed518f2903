"""Every rejected input: the exact message, and nothing written."""

from __future__ import annotations

import pytest

from agent_memory.errors import InvalidArgument, UnknownField

from conftest import dump

TYPES = "DECISION, PATTERN, ERROR, TODO, ARCHITECTURE, CONSTRAINT"
OK_STORE = {"content": "a valid memory", "type": "TODO"}

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
]

LIST_CASES = [
    ({"limit": 0}, "invalid argument: limit must be between 1 and 200 (got 0)"),
    ({"limit": 1000}, "invalid argument: limit must be between 1 and 200 (got 1000)"),
    ({"limit": "10"}, 'invalid argument: limit must be an integer (got "10")'),
    ({"limit": False}, "invalid argument: limit must be an integer (got false)"),
    ({"type": "Todo"}, f"invalid memory type 'Todo' (expected one of {TYPES})"),
    ({"tag": 1}, "invalid argument: tag must be a string (got 1)"),
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
    + [("forget", a, m) for a, m in FORGET_CASES],
)
def test_rejected_with_exact_message_and_nothing_written(
    service, db_path, seeded, operation, args, message
):
    with pytest.raises(InvalidArgument) as raised:
        getattr(service, operation)(args)
    assert str(raised.value) == message
    assert dump(db_path) == seeded


@pytest.mark.parametrize(
    "patch,field",
    [
        ({"id": 1, "type": "TODO"}, "type"),
        ({"id": 1, "source": "me"}, "source"),
        ({"id": 1, "ttl_sec": 5}, "ttl_sec"),
        ({"id": 1, "content": "new text", "bogus": None}, "bogus"),
        ({"id": 1, "tags": ["x"], "expand_links": True}, "expand_links"),
    ],
)
def test_update_unknown_field_fails_as_a_whole(service, db_path, seeded, patch, field):
    with pytest.raises(UnknownField) as raised:
        service.update(patch)
    assert str(raised.value) == (
        f"failed to deserialize parameters: unknown field `{field}`, "
        "expected one of `id`, `content`, `tags`, `scope`, `ttl_secs`"
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


def test_unknown_fields_are_ignored_outside_update(service):
    assert service.store({**OK_STORE, "priority": "high"})["id"] == 1
    assert service.search({"query": "valid", "fuzzy": True})["results"][0]["id"] == 1
    assert len(service.list({"order": "asc"})) == 1
