"""Every rejected input: the exact message, and nothing written."""

from __future__ import annotations

import pytest

from agent_memory.contract import wire
from agent_memory.contract.errors import InvalidArgument, UnknownField
from agent_memory.service.validate import shown as _shown
from tests.support.files import dump
from tests.support.validation_cases import (
    FORGET_CASES,
    HUGE,
    LINK_CASES,
    LIST_CASES,
    OK_STORE,
    SEARCH_CASES,
    STORE_CASES,
    SURROGATE,
    UPDATE_CASES,
)


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
    + [(op, a, m) for op in ("forget", "history") for a, m in FORGET_CASES]
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
