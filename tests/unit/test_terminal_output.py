"""What the terminal commands write for a person: a memory's control characters escaped
(a stored memory must not act on the reviewer's terminal), and counts in the singular for
one."""

from __future__ import annotations

import json
import re

import pytest

from agent_memory.cli import display
from agent_memory.contract.vocabulary import count
from tests.support.terminal import am

# What a terminal acts on: C0 but tab and newline (newline ends our own lines), DEL, C1,
# the separators and the bidirectional controls.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07"  # OSC 52: write the clipboard
HOSTILE = {
    "content": f"hostile note{CLIPBOARD}\x1b[2K\x1b]0;pwned\x07\x9b31m\rfake line\u2028\u202eevil",
    "type": "ERROR",
    "tags": ["a\nb", "\x1b[8mhidden"],
    "source": "src\x1b[31m",
    "scope": "kore\x1b]0;x\x07",
}


@pytest.fixture
def hostile(service, db_path):
    service.store(HOSTILE)
    service.store({"content": "plain", "type": "TODO"})
    service.link({"from_id": 2, "to_id": 1, "kind": "relates_to"})
    return db_path


@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["list", "--expand", "--limit", "5"],
        ["search", "hostile note"],
        ["search", "plain", "--expand"],
        ["show", "1"],
        ["show", "2"],
        ["update", "1", "--ttl", "60"],
        ["stats"],
    ],
    ids=["list", "list-expanded", "search", "search-expanded", "show", "show-related", "update",
         "stats"],
)  # fmt: skip
def test_control_characters_are_shown_escaped(hostile, args):
    result = am(hostile, *args)
    assert result.exit_code == 0, result.output
    assert not RAW_CONTROL.findall(result.stdout)
    assert not RAW_CONTROL.findall(result.stderr)
    if args[0] in ("show", "update") and args[1] == "1":
        lines = result.stdout.splitlines()
        assert lines[0] == "memory 1  ERROR  scope kore\\x1b]0;x\\x07"
        assert "tags       a\\nb, \\x1b[8mhidden" in lines
        assert "source     src\\x1b[31m" in lines
        # the content's line breaks stay line breaks (a bare \r, U+2028 too), escaped within
        assert (
            "hostile note\\x1b]52;c;Y3VybCBldmlsLnNofHNo\\x07\\x1b[2K\\x1b]0;pwned\\x07\\x9b31m"
            in lines
        )
        assert "fake line" in lines and "\\u202eevil" in lines


@pytest.mark.parametrize(
    "args",
    [["list"], ["search", "hostile note"], ["show", "1"], ["update", "1", "--ttl", "60"],
     ["stats"]],
)  # fmt: skip
def test_json_escapes_them_too_and_means_the_same(hostile, service, args):
    result = am(hostile, *args, "--json")
    assert result.exit_code == 0 and not RAW_CONTROL.findall(result.stdout)
    if args[0] == "show":
        assert json.loads(result.stdout) == service.get({"id": 1})


@pytest.mark.parametrize("args", [["tidy"], ["history", "1"]], ids=["tidy", "history"])
def test_tidy_and_history_escape_them_too(hostile, service, args):
    near = {**HOSTILE, "content": HOSTILE["content"] + " once more", "tags": ["\x1b]0;t\x07"]}
    service.store(near)  # a near-duplicate: tidy's cluster, its tags merged
    service.store({**HOSTILE, "source": "again\x1b[1m"})  # a version with this change_source
    service.update({"id": 1, "tags": ["a\x1b[8mb"]})
    result = am(hostile, *args)
    assert result.exit_code == 0, result.output
    assert not RAW_CONTROL.findall(result.stdout)
    if args[0] == "history":
        assert "(duplicate store from again\\x1b[1m)" in result.stdout
    else:
        (tags,) = [line for line in result.stdout.splitlines() if "tags after:" in line]
        assert "a\\x1b[8mb" in tags and "\\x1b]0;t\\x07" in tags


def test_the_brief_escapes_them_too(hostile):
    result = am(hostile, "context", "--scope", "kore\x1b]0;x\x07")
    assert result.exit_code == 0 and "hostile note" in result.stdout
    assert not RAW_CONTROL.findall(result.stdout)


def test_one_is_said_in_the_singular(service, db_path):
    service.store({"content": "alone", "type": "TODO"})
    assert am(db_path, "list").stderr == "1 memory\n"
    service.store({"content": "other", "type": "TODO"})
    service.link({"from_id": 2, "to_id": 1, "kind": "relates_to"})
    assert am(db_path, "list").stderr == "2 memories\n"
    assert "1 relation:" in am(db_path, "show", "1").stdout.splitlines()
    assert am(db_path, "stats").stdout.splitlines()[0] == (
        "2 memories (superseded ones included), 1 link, 2 waiting for a vector"
    )


def test_count_and_printable():
    assert [count(n, "memory") for n in (0, 1, 2)] == [
        "0 memories",
        "1 memory",
        "2 memories",
    ]
    assert [count(n, "link") for n in (1, 3)] == ["1 link", "3 links"]
    assert count(2, "key") == "2 keys"
    assert display.printable("a\x1b[31mb\tc\nd\x85\u2029") == "a\\x1b[31mb\tc\\nd\\x85\\u2029"
    assert display.printable_lines("one\rtwo\x0bthree\u2028four\r\n") == [
        "one", "two", "three", "four"
    ]  # fmt: skip


def test_stats_says_its_counts_include_superseded_memories(service, db_path):
    old = service.store({"content": "The API timeout is 30 seconds.", "type": "CONSTRAINT"})
    service.store({"content": "It is 90 s.", "type": "CONSTRAINT", "supersedes": [old["id"]]})
    assert len(service.list({})) == 1  # the list leaves the superseded one out
    first = am(db_path, "stats").stdout.splitlines()[0]
    assert first.startswith("2 memories (superseded ones included), ")


@pytest.mark.parametrize(
    "commands",
    [
        [("token", "create", "bob")],
        [("token", "list")],
        [("token", "revoke", "alice")],
        [("token", "approve", "alice")],
        [("token", "revoke", "alice"), ("token", "open-loopback")],
    ],
)
def test_token_commands_print_no_info_log_line(db_path, commands):
    """As no other terminal command does (a person reads the answer, not the log)."""
    assert am(db_path, "token", "create", "alice").exit_code == 0
    for args in commands:
        result = am(db_path, *args)
        assert result.exit_code == 0, result.output
        assert " INFO " not in result.stderr, result.stderr


def test_update_without_a_change_names_the_commands_options(service, db_path):
    service.store({"content": "plain", "type": "TODO"})
    result = am(db_path, "update", "1")
    assert result.exit_code == 2
    assert result.stderr == (
        "nothing to change: give at least one of --content, --tag, --no-tags, --scope, "
        "--global, --ttl, --no-expiry\n"
    )
