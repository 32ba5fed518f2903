"""Every rejected input of each operation with its exact message: run by the service's
validation tests and again through the MCP tools."""

from __future__ import annotations

from agent_memory.contract import wire

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

AS_OF_RANGE = (
    "invalid argument: as_of must be a moment between 0 and now (1767225600), as Unix seconds "
    "or an ISO 8601 date-time such as 2026-12-01T09:00:00Z"
)
AS_OF_CASES = [
    ({"as_of": -1}, f"{AS_OF_RANGE} (got -1)"),
    ({"as_of": 1767225601}, f"{AS_OF_RANGE} (got 1767225601)"),
    ({"as_of": "2027-01-01T00:00:00Z"}, f'{AS_OF_RANGE} (got "2027-01-01T00:00:00Z")'),
    ({"as_of": "yesterday"}, f'{AS_OF_RANGE} (got "yesterday")'),
    ({"as_of": LONG}, f"{AS_OF_RANGE} {COUNTED}"),
    ({"as_of": SURROGATE}, f"invalid argument: as_of {UNICODE}"),
    (
        {"as_of": 1.5},
        "invalid argument: as_of must be Unix seconds or an ISO 8601 date-time (got 1.5)",
    ),
    (
        {"as_of": True},
        "invalid argument: as_of must be Unix seconds or an ISO 8601 date-time (got true)",
    ),
]

MAX_CHARS_RANGE = "invalid argument: max_chars must be between 400 and 10000000"
MAX_CHARS_CASES = [
    ({"max_chars": 399}, f"{MAX_CHARS_RANGE} (got 399)"),
    ({"max_chars": 0}, f"{MAX_CHARS_RANGE} (got 0)"),
    ({"max_chars": -400}, f"{MAX_CHARS_RANGE} (got -400)"),
    ({"max_chars": 10_000_001}, f"{MAX_CHARS_RANGE} (got 10000001)"),
    ({"max_chars": LONG}, f"{MAX_CHARS_RANGE} {COUNTED}"),
    ({"max_chars": "1000"}, 'invalid argument: max_chars must be an integer (got "1000")'),
    ({"max_chars": 1000.0}, "invalid argument: max_chars must be an integer (got 1000.0)"),
    ({"max_chars": True}, "invalid argument: max_chars must be an integer (got true)"),
]

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
    *(({"query": "x", **args}, message) for args, message in AS_OF_CASES),
    *(({"query": "x", **args}, message) for args, message in MAX_CHARS_CASES),
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
    *AS_OF_CASES,
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
