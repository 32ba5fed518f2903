"""The terminal commands (search, list, show, store, update, forget, link, unlink) through
click's CliRunner: the tool's arguments and messages, --json equal to the tool's answer,
exit codes 0, 1 and 2, and the databases they refuse to create."""

from __future__ import annotations

import json
import re

import pytest

from agent_memory.mcp import server as mcp_server
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.storage.sqlite import database
from tests.support.clock import START
from tests.support.files import dump, file_hashes
from tests.support.paths import FIXTURES
from tests.support.terminal import am

NOW = START + 86_400  # the commands run a day after the memories were stored
TYPES = "DECISION, PATTERN, ERROR, TODO, ARCHITECTURE, CONSTRAINT"


@pytest.fixture
def frozen(monkeypatch):
    """Every service in this process reads the time as NOW: the CLI's and the test's."""
    monkeypatch.setattr(MemoryService, "now", lambda self: NOW)


@pytest.fixture
def seeded(service, db_path):
    """1: a DECISION in kore, 2: a PATTERN in kore linked to it, 3: a global TODO."""
    service.store(
        {
            "content": "We chose SQLite with WAL",
            "type": "DECISION",
            "tags": ["db"],
            "scope": "kore",
            "source": "chat",
        }
    )
    service.store({"content": "Open one writer connection", "type": "PATTERN", "scope": "kore"})
    service.store({"content": "Write the restore runbook", "type": "TODO"})
    service.link({"from_id": 2, "to_id": 1, "kind": "relates_to"})
    return db_path


def tool_text(service, name: str, args: dict) -> str:
    """What the MCP tool answers, as its text content."""
    return mcp_server.call_tool(service, name, args).content[0].text


# -- happy paths ------------------------------------------------------------------------------


def test_store_takes_content_as_an_argument_or_on_stdin(db_path, service):
    result = am(
        db_path,
        "store",
        "We chose SQLite",
        "--type",
        "DECISION",
        "--tag",
        "db",
        "--tag",
        "wal",
        "--scope",
        "kore",
        "--source",
        "chat",
        "--ttl",
        "3600",
    )
    assert (result.exit_code, result.stdout, result.stderr) == (0, "stored memory 1\n", "")
    assert (
        am(db_path, "store", "--type", "TODO", input="from stdin\n").stdout == "stored memory 2\n"
    )
    assert am(db_path, "store", "-", "--type", "TODO", input="a dash\r\n").exit_code == 0
    first, second, third = sorted(service.list({}), key=lambda m: m["id"])
    assert (first["tags"], first["scope"], first["source"]) == (["db", "wal"], "kore", "chat")
    assert first["expires_at"] - first["created_at"] == 3600
    assert (second["content"], third["content"]) == ("from stdin", "a dash")


def test_store_creates_the_database_and_reports_redacted_secrets(tmp_path):
    db_path = tmp_path / "new" / "memory.db"
    result = am(db_path, "store", "key AKIAABCDEFGHIJKLMNOP", "--type", "ERROR")
    assert result.stdout == "stored memory 1 (secrets redacted: aws-access-key)\n"
    result = am(db_path, "store", "AKIAABCDEFGHIJKLMNOQ again", "--type", "ERROR", "--json")
    assert result.stdout == '{"id": 2, "redacted": ["aws-access-key"]}\n'


def test_list_prints_a_table_newest_first(seeded):
    result = am(seeded, "list")
    assert result.exit_code == 0 and result.stderr == "3 memories\n"
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["ID", "TYPE", "SCOPE", "TAGS", "AGE", "DECAY", "CONTENT"]
    assert [line.split()[:4] for line in lines[1:]] == [
        ["3", "TODO", "-", "-"],
        ["2", "PATTERN", "kore", "-"],
        ["1", "DECISION", "kore", "db"],
    ]
    assert lines[3].endswith("We chose SQLite with WAL")


def test_list_filters_and_expands_as_the_tool(seeded):
    result = am(seeded, "list", "--scope", "kore", "--type", "PATTERN", "--limit", "5", "--expand")
    assert result.exit_code == 0
    rows = result.stdout.splitlines()[1:]
    assert rows[0].split()[:2] == ["2", "PATTERN"]
    assert rows[1].split() == [
        "relates_to",
        "1",
        "DECISION",
        "We",
        "chose",
        "SQLite",
        "with",
        "WAL",
    ]
    assert am(seeded, "list", "--tag", "nope").stdout == ""


def test_search_prints_what_it_found_and_the_mode(seeded, frozen):
    result = am(seeded, "search", "sqlite wal?")
    assert result.exit_code == 0
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["ID", "1"]
    assert result.stderr == (  # stored without an embedder: none has a vector
        "1 found (keyword search: 3 memories waiting for a vector; run `agent-memory embed`)\n"
    )


def test_show_prints_one_memory_whole_with_its_relations(seeded):
    result = am(seeded, "show", "1")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "memory 1  DECISION  scope kore"
    assert "tags       db" in lines and "source     chat" in lines and "uses       0" in lines
    assert "expires    never" in lines and "embedding  waiting for a vector" in lines
    assert "We chose SQLite with WAL" in lines
    assert lines[-2:] == ["1 relation:", "  relates_to  2  PATTERN  Open one writer connection"]


def test_update_patches_and_clears_as_a_merge_patch(seeded, service):
    result = am(
        seeded,
        "update",
        "1",
        "--content",
        "We chose SQLite",
        "--tag",
        "a",
        "--tag",
        "b",
        "--global",
        "--ttl",
        "60",
    )
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == "memory 1  DECISION  global"
    got = service.get({"id": 1})
    assert (got["content"], got["tags"], got["scope"]) == ("We chose SQLite", ["a", "b"], None)
    assert am(seeded, "update", "1", "--no-tags", "--no-expiry", "--scope", "x").exit_code == 0
    got = service.get({"id": 1})
    assert (got["tags"], got["expires_at"], got["scope"]) == ([], None, "x")
    assert am(seeded, "update", "1", "--content", "-", input="piped\n").exit_code == 0
    assert service.get({"id": 1})["content"] == "piped"


def test_update_prints_the_memory_as_show_does(seeded):
    """Every field (its uses too) and its relations: a record printed by one function."""
    updated = am(seeded, "update", "1", "--tag", "wal")
    shown = am(seeded, "show", "1")
    assert updated.exit_code == 0 and "uses       1" in updated.stdout.splitlines()
    ago = re.compile(r"\(\d+\w+ ago\)")  # the clock may tick between the two
    assert ago.sub("", updated.stdout) == ago.sub("", shown.stdout)


def test_update_says_what_was_redacted_as_store_does(seeded):
    stored = am(seeded, "store", "password=hunter2hunter2", "--type", "PATTERN")
    assert stored.stdout == "stored memory 4 (secrets redacted: password)\n"
    updated = am(seeded, "update", "1", "--content", "DB_PASSWORD=hunter2hunter2")
    assert updated.exit_code == 0
    assert "DB_PASSWORD=[redacted:password]" in updated.stdout.splitlines()
    assert updated.stdout.endswith("\n\nsecrets redacted: password\n")


def test_update_succeeds_when_the_memory_is_forgotten_before_it_is_shown(seeded, monkeypatch):
    """Another process forgets the memory just after the update: the update still happened,
    and the command shows it from its own database connection, exit 0."""
    update = MemoryService.update

    def update_then_forgotten(self, args, **kwargs):
        answer = update(self, args, **kwargs)
        other = MemoryService(open_store(seeded))
        try:
            other.forget({"id": answer["id"]})
        finally:
            other.close()
        return answer

    monkeypatch.setattr(MemoryService, "update", update_then_forgotten)
    result = am(seeded, "update", "1", "--tag", "wal")
    assert (result.exit_code, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert lines[0] == "memory 1  DECISION  scope kore" and "tags       wal" in lines


def test_a_type_is_taken_in_any_case(seeded, service):
    assert am(seeded, "store", "x", "--type", "decision").stdout == "stored memory 4\n"
    assert service.get({"id": 4})["type"] == "DECISION"
    listed = am(seeded, "list", "--type", "Decision", "--json").stdout
    assert [m["id"] for m in json.loads(listed)["memories"]] == [4, 1]
    assert (
        am(seeded, "search", "sqlite", "--type", "decision").stderr
        == "1 found (keyword search: 4 memories waiting for a vector; run `agent-memory embed`)\n"
    )


def test_stats_prints_what_memory_stats_holds(seeded, service):
    result = am(seeded, "stats")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == (
        "3 memories (superseded ones included), 1 link, 3 waiting for a vector\n"
        "\n"
        "TYPE      MEMORIES\n"
        "DECISION         1\n"
        "PATTERN          1\n"
        "TODO             1\n"
        "\n"
        "SCOPE  MEMORIES\n"
        "kore          2\n"
        "-             1\n"
    )
    resource = mcp_server.read_resource(service, "memory://stats").contents[0].text
    # the test's service runs without an embedder, as --embedder none does
    assert json.loads(am(seeded, "--embedder", "none", "stats", "--json").stdout) == json.loads(
        resource
    )
    assert json.loads(resource) == service.stats()


def test_forget_link_and_unlink(seeded, service):
    assert (
        am(seeded, "link", "1", "3", "--kind", "supersedes").stdout
        == "linked 1 -[supersedes]-> 3\n"
    )
    assert am(seeded, "unlink", "1", "3", "--kind", "supersedes").stdout == (
        "unlinked 1 -[supersedes]-> 3\n"
    )
    assert am(seeded, "forget", "2").stdout == "forgot memory 2\n"
    assert [m["id"] for m in service.list({})] == [3, 1]


# -- --json is the tool's answer -------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "tool", "args"),
    [
        (
            ["search", "sqlite", "--scope", "kore", "--limit", "5", "--expand"],
            "memory_search",
            {"query": "sqlite", "scope": "kore", "limit": 5, "expand_links": True},
        ),
        (["list"], "memory_list", {}),
        (
            ["list", "--type", "PATTERN", "--limit", "1", "--expand"],
            "memory_list",
            {"type": "PATTERN", "limit": 1, "expand_links": True},
        ),
        (
            ["update", "2", "--tag", "x", "--ttl", "90"],
            "memory_update",
            {"id": 2, "tags": ["x"], "ttl_secs": 90},
        ),
        (
            ["link", "2", "1", "--kind", "relates_to"],
            "memory_link",
            {"from_id": 2, "to_id": 1, "kind": "relates_to"},
        ),
    ],
    ids=["search", "list", "list-expanded", "update", "link"],
)
def test_json_is_the_tools_text(frozen, seeded, service, command, tool, args):
    """Run by the CLI, then by the tool on the state the CLI left, all at one frozen time
    (the memories were stored at it too): an update or a link repeated answers the same, and
    a search's bump changes nothing it shows."""
    result = am(seeded, *command, "--json")
    assert result.exit_code == 0 and result.stderr == ""
    assert result.stdout == tool_text(service, tool, args) + "\n"


def test_json_of_show_store_forget_and_unlink(seeded, service, frozen):
    assert json.loads(am(seeded, "show", "1", "--json").stdout) == service.get({"id": 1})
    assert am(seeded, "store", "x", "--type", "TODO", "--json").stdout == '{"id": 4}\n'
    assert am(seeded, "forget", "4", "--json").stdout == '{"id": 4, "deleted": true}\n'
    assert am(seeded, "unlink", "1", "2", "--kind", "relates_to", "--json").stdout == (
        '{"from_id": 1, "to_id": 2, "kind": "relates_to", "unlinked": true}\n'
    )


# -- refusals: exit 2 for the arguments, 1 for not found ------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["store", "x"], "invalid argument: type is required"),
        (["store", "x", "--type", "NOTE"], f"invalid memory type 'NOTE' (expected one of {TYPES})"),
        (["store", "  ", "--type", "TODO"], "invalid argument: content must be a non-empty string"),
        (["store", "--type", "TODO"], "invalid argument: content must be a non-empty string"),
        (
            ["store", "x", "--type", "TODO", "--ttl", "0"],
            "invalid argument: ttl_secs must be between 1 and 3155760000 (got 0)",
        ),
        (
            ["store", "x", "--type", "TODO", "--ttl", "soon"],
            'invalid argument: ttl_secs must be an integer (got "soon")',
        ),
        (
            ["search", "x", "--limit", "0"],
            "invalid argument: limit must be between 1 and 200 (got 0)",
        ),
        (
            ["search", "x", "--limit", "\uff15"],
            'invalid argument: limit must be an integer (got "５")',
        ),
        (
            ["search", "x", "--type", "note"],
            f"invalid memory type 'note' (expected one of {TYPES})",
        ),
        (
            ["list", "--expand"],
            "invalid argument: limit is required when expand_links is true; "
            "pass a limit between 1 and 200",
        ),
        (["list", "--limit", "201"], "invalid argument: limit must be between 1 and 200 (got 201)"),
        (["show", "abc"], 'invalid argument: id must be an integer (got "abc")'),
        (
            ["update", "1"],
            "nothing to change: give at least one of --content, --tag, --no-tags, --scope, "
            "--global, --ttl, --no-expiry",
        ),
        (["update", "1", "--content", ""], "invalid argument: content must be a non-empty string"),
        (["forget", "1.5"], 'invalid argument: id must be an integer (got "1.5")'),
        (
            ["link", "1", "1", "--kind", "relates_to"],
            "invalid argument: from_id and to_id must differ (got 1)",
        ),
        (
            ["link", "1", "2", "--kind", "blocks"],
            "invalid argument: kind must be one of relates_to, supersedes, caused_by (got 'blocks')",
        ),
        (["unlink", "1", "2"], "invalid argument: kind is required"),
    ],
)
def test_invalid_arguments_exit_2_with_the_tools_message(seeded, args, message):
    before = dump(seeded)
    result = am(seeded, *args)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", message + "\n")
    assert dump(seeded) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["update", "1", "--tag", "a", "--no-tags"], "--tag and --no-tags cannot be used together"),
        (
            ["update", "1", "--scope", "a", "--global"],
            "--scope and --global cannot be used together",
        ),
        (
            ["update", "1", "--ttl", "5", "--no-expiry"],
            "--ttl and --no-expiry cannot be used together",
        ),
        (["store", "--type", "TODO", "-"], "the content on stdin is not UTF-8 text"),
    ],
)
def test_usage_errors_exit_2(seeded, args, message):
    result = am(seeded, *args, input=b"caf\xe9")
    assert result.exit_code == 2 and result.stderr.endswith(f"Error: {message}\n")


@pytest.mark.parametrize(
    ("args", "message", "answer"),
    [
        (["show", "99"], "memory 99 not found", {"id": 99, "found": False, "reason": "not_found"}),
        (
            ["update", "99", "--content", "x"],
            "memory 99 not found",
            {"id": 99, "updated": False, "reason": "not_found"},
        ),
        (
            ["forget", "99"],
            "memory 99 not found",
            {"id": 99, "deleted": False, "reason": "not_found"},
        ),
        (
            ["link", "1", "99", "--kind", "caused_by"],
            "memory 99 not found",
            {
                "from_id": 1,
                "to_id": 99,
                "kind": "caused_by",
                "linked": False,
                "reason": "not_found",
                "missing_id": 99,
            },
        ),
        (
            ["unlink", "1", "2", "--kind", "supersedes"],
            "no relation 1 -[supersedes]-> 2",
            {
                "from_id": 1,
                "to_id": 2,
                "kind": "supersedes",
                "unlinked": False,
                "reason": "not_found",
            },
        ),
    ],
)
def test_not_found_is_exit_1_with_one_line(seeded, args, message, answer):
    result = am(seeded, *args)
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", message + "\n")
    result = am(seeded, *args, "--json")
    assert (result.exit_code, json.loads(result.stdout), result.stderr) == (1, answer, "")


def test_a_storage_fault_is_exit_1_with_the_generic_message(seeded, raw):
    raw.execute("ALTER TABLE memories RENAME TO moved_away")
    raw.commit()
    result = am(seeded, "list")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == (
        "list failed due to a storage error (details are in the server log)"
    )


# -- databases: missing, read-only ------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["export"],
        ["search", "x"],
        ["list"],
        ["show", "1"],
        ["context"],
        ["update", "1", "--content", "x"],
        ["forget", "1"],
        ["link", "1", "2", "--kind", "relates_to"],
        ["unlink", "1", "2", "--kind", "relates_to"],
    ],
    ids=lambda args: args[0],
)
def test_commands_that_read_refuse_a_missing_database_and_create_nothing(tmp_path, args):
    db_path = tmp_path / "a" / "b" / "memory.db"
    result = am(db_path, *args)
    assert (result.exit_code, result.stdout, result.stderr) == (
        1,
        "",
        f"no database at {db_path}\n",
    )
    assert list(tmp_path.iterdir()) == []


def test_an_empty_file_is_no_database_either(tmp_path):
    db_path = tmp_path / "memory.db"
    db_path.touch()
    assert am(db_path, "export").stderr == f"no database at {db_path}\n"
    assert db_path.stat().st_size == 0


def test_a_database_this_process_cannot_write_is_read_read_only(seeded, service, monkeypatch):
    """As the reading commands find a file in a read-only directory (the real thing, as
    another user, is in test_integrations.py): they answer, and write nothing at all."""
    service.close()
    monkeypatch.setattr(database, "writable", lambda path: False)
    before, hashes = dump(seeded), file_hashes(seeded)
    assert [line.split()[0] for line in am(seeded, "list").stdout.splitlines()] == [
        "ID",
        "3",
        "2",
        "1",
    ]
    assert am(seeded, "search", "sqlite").stdout.splitlines()[1].split()[0] == "1"
    assert am(seeded, "show", "1").exit_code == 0
    assert am(seeded, "export").stderr == "exported 3 memories and 1 link\n"
    assert am(seeded, "context", "--scope", "kore").stdout.count("\n- #") == 3
    assert (dump(seeded), file_hashes(seeded)) == (before, hashes)


def test_read_only_refuses_a_schema_that_needs_an_upgrade(tmp_path, monkeypatch):
    import shutil

    db_path = tmp_path / "memory.db"
    shutil.copyfile(FIXTURES / "memory-0004.db", db_path)
    monkeypatch.setattr(database, "writable", lambda path: False)
    result = am(db_path, "list")
    assert result.exit_code == 1
    assert result.stderr == (
        f"cannot open database {db_path}: read-only, and its schema (version 4) must be "
        f"upgraded to version {database.head_revision()} first: run agent-memory once with "
        "write access to it\n"
    )
