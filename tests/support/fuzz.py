"""Hypothesis strategies for hostile input: every tool's fields, hostile strings and values of
every JSON shape."""

from __future__ import annotations

from hypothesis import strategies as st

FIELDS = {
    "memory_store": ["content", "type", "tags", "source", "scope", "ttl_secs"],
    "memory_search": ["query", "type", "tag", "scope", "limit", "expand_links"],
    "memory_list": ["type", "tag", "scope", "limit", "expand_links"],
    "memory_update": ["id", "content", "tags", "scope", "ttl_secs"],
    "memory_link": ["from_id", "to_id", "kind"],
    "memory_unlink": ["from_id", "to_id", "kind"],
    "memory_forget": ["id"],
    "memory_history": ["id"],
}
NASTY = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        '"',
        "NEAR(",
        "*",
        "col:val",
        "AND OR NOT",
        "'; DROP TABLE memories; --",
        "\u202e\u0301\ufeff",
        "🧠" * 50,
        "DECISION",
        "relates_to",
        "x" * 5000,
        "a\ud800b",  # a lone surrogate: no UTF-8 text can hold it
        "\udfff",
    ]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | NASTY
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
# Integers beyond str()'s 4,300 digits, for tool arguments only (json.dumps cannot write them).
HUGE_INTEGERS = st.builds(pow, st.sampled_from([10, -10]), st.sampled_from([4999, 5001]))


def arguments(tool: str):
    keys = st.sampled_from([*FIELDS[tool], "bogus", ""])
    return st.dictionaries(keys, VALUES | HUGE_INTEGERS, max_size=5)
