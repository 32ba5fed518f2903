"""``agent-memory import --from`` another memory server: each peer's own files (made by
tests/fixtures/peers/generate.py) imported, found again by keyword, their links kept, and a
re-run that adds nothing."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest
from click.testing import CliRunner

from agent_memory.cli.main import cli
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.peers import CASES, check_round_trip, found, run


@pytest.mark.parametrize("source", CASES)
def test_a_peers_own_file_round_trips(tmp_path, source):
    check_round_trip(tmp_path / "memory.db", source)


def test_times_are_kept_and_nothing_is_embedded(tmp_path):
    db = tmp_path / "memory.db"
    assert run(db, "mcp-memory-service", CASES["mcp-memory-service"][0]).exit_code == 0
    svc = MemoryService(open_store(db))
    memory = svc.get({"id": found(svc, "pin numpy below")["id"]})
    with closing(sqlite3.connect(CASES["mcp-memory-service"][0])) as peer:
        (created,) = peer.execute(
            "SELECT created_at FROM memories WHERE content LIKE 'We decided to pin numpy%'"
        ).fetchone()
    assert memory["created_at"] == int(created)  # the peer's created_at, whole seconds
    assert memory["embedding_status"] == 0  # pending: the backfill embeds it


def test_a_dry_run_prints_the_memories_and_writes_nothing(tmp_path):
    db = tmp_path / "data" / "memory.db"
    result = run(db, "server-memory", CASES["server-memory"][0], "--dry-run")
    assert result.exit_code == 0
    assert (
        "PATTERN      Alice: Prefers tabs over spaces in Python files  [Alice, person]"
        in result.stdout
    )
    assert result.stdout.splitlines()[-1] == (
        "would import 8 memories and 7 links (scope: global; duplicates are found when written)"
    )
    assert not db.parent.exists()


def test_scope_is_given_to_every_memory(tmp_path):
    db = tmp_path / "memory.db"
    assert run(db, "basic-memory", CASES["basic-memory"][0], "--scope", "coffee").exit_code == 0
    svc = MemoryService(open_store(db))
    assert {m["scope"] for m in svc.list({"limit": 50})} == {"coffee"}


CLAUDE_MD = """# Project notes
- Run the tests with pytest -q

## Conventions
Some prose that is not a bullet.
- Use ruff for lint
  - nested: and ruff format before each commit
- Never push to main

## Decisions
* SQLite first, PostgreSQL when a team shares one database
"""


@pytest.mark.parametrize("name", ["CLAUDE.md", "AGENTS.md"])
def test_a_claude_md_or_agents_md_folds_nested_bullets(tmp_path, name):
    project = tmp_path / "shop"
    project.mkdir()
    (project / name).write_text(CLAUDE_MD, encoding="utf-8")
    db = tmp_path / "memory.db"
    result = CliRunner().invoke(cli, ["--db", str(db), "import", str(project / name)])
    assert result.exit_code == 0, result.output
    assert "skipped lines that are not bullets: 1" in result.stdout
    svc = MemoryService(open_store(db))
    rows = {(m["type"], m["content"], tuple(m["tags"]), m["scope"]) for m in svc.list({})}
    assert rows == {
        ("PATTERN", "Run the tests with pytest -q", ("Project notes",), "shop"),
        (
            "CONSTRAINT",
            "Use ruff for lint\n  - nested: and ruff format before each commit",
            ("Conventions",),
            "shop",
        ),
        ("CONSTRAINT", "Never push to main", ("Conventions",), "shop"),
        (
            "DECISION",
            "SQLite first, PostgreSQL when a team shares one database",
            ("Decisions",),
            "shop",
        ),
    }


def test_secrets_are_redacted_on_the_way_in(tmp_path):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    notes = tmp_path / "memory.jsonl"
    notes.write_text(
        '{"type":"entity","name":"CI","entityType":"system","observations":'
        f'["The bot token is {token}"]}}\n',
        encoding="utf-8",
    )
    db = tmp_path / "memory.db"
    result = run(db, "server-memory", notes)
    assert result.exit_code == 0
    assert "secrets redacted: 1 in 1 memory" in result.stdout
    svc = MemoryService(open_store(db))
    assert token not in svc.list({})[0]["content"]


def test_a_users_own_claude_md_is_global(tmp_path, isolated_home):
    memory_file = isolated_home / ".claude" / "CLAUDE.md"
    memory_file.parent.mkdir()
    memory_file.write_text("- Answer in British English\n", encoding="utf-8")
    db = tmp_path / "memory.db"
    assert run(db, "claude-md", memory_file).exit_code == 0
    assert [m["scope"] for m in MemoryService(open_store(db)).list({})] == [None]


@pytest.mark.parametrize("source", ["jsonl", "gsd-state"])
def test_dry_run_is_for_the_peers_only(tmp_path, source):
    result = run(tmp_path / "memory.db", source, tmp_path / "in.jsonl", "--dry-run")
    assert result.exit_code == 2
    assert f"--dry-run is not accepted with --from {source}" in result.stderr


def test_a_relation_names_a_note_never_a_path(tmp_path):
    (tmp_path / "secret.md").write_text("- [fact] outside the folder\n", encoding="utf-8")
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "note.md").write_text(
        "- [fact] inside\n- relates_to [[../secret]]\n- relates_to [[/etc/passwd]]\n",
        encoding="utf-8",
    )
    db = tmp_path / "memory.db"
    result = run(db, "basic-memory", folder)
    assert result.exit_code == 0
    assert "skipped relations to a note not in the folder: 2" in result.stdout
    assert [m["content"] for m in MemoryService(open_store(db)).list({})] == ["note: inside"]


STRIPE = [
    {
        "type": "entity",
        "name": "Use Stripe for payments",
        "entityType": "decision",
        "observations": [
            "Chosen over Adyen in 2025 for its lower fees",
            "use Stripe for payments in every new service",
        ],
    },
    {"type": "entity", "name": "Payments", "entityType": "system", "observations": []},
    {"type": "entity", "name": "Adyen", "entityType": "vendor", "observations": ["Dropped"]},
    {
        "type": "relation",
        "from": "Use Stripe for payments",
        "to": "Payments",
        "relationType": "applies_to",
    },
]


def test_server_memory_observations_stand_alone_and_relations_join_the_entities(tmp_path):
    """An observation reads without its tags; a relation links the memories that stand for
    its two entities, and an entity's observations relate to that memory of it."""
    notes = tmp_path / "memory.jsonl"
    notes.write_text("\n".join(json.dumps(r) for r in STRIPE) + "\n", encoding="utf-8")
    db = tmp_path / "memory.db"
    assert run(db, "server-memory", notes).exit_code == 0
    svc = MemoryService(open_store(db))
    by_text = {m["content"]: m for m in svc.list({})}
    assert set(by_text) == {
        "Use Stripe for payments: Chosen over Adyen in 2025 for its lower fees",
        "use Stripe for payments in every new service",  # it begins with its entity's name
        "Use Stripe for payments (decision): applies to Payments.",
        "Payments (system)",
        "Adyen: Dropped",  # no relation names Adyen: no memory of its own
    }
    decision = by_text["Use Stripe for payments (decision): applies to Payments."]["id"]
    payments = by_text["Payments (system)"]["id"]
    chosen = by_text["Use Stripe for payments: Chosen over Adyen in 2025 for its lower fees"]
    related = svc.get({"id": decision})["related"]
    assert {(r["id"], r["kind"]) for r in related} == {
        (payments, "relates_to"),
        (chosen["id"], "relates_to"),
        (by_text["use Stripe for payments in every new service"]["id"], "relates_to"),
    }
    assert [(r["id"], r["kind"]) for r in svc.get({"id": chosen["id"]})["related"]] == [
        (decision, "relates_to")
    ]
    assert svc.get({"id": by_text["Adyen: Dropped"]["id"]})["related"] == []


def test_basic_memory_observations_and_notes_begin_with_the_title(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "stripe.md").write_text(
        "---\ntitle: Payments\n---\n- [decision] Chosen over Adyen in 2025 #vendor\n"
        "- [fact] Payments settle daily\n",
        encoding="utf-8",
    )
    (folder / "plain.md").write_text("---\ntitle: Release train\n---\nShips every Tuesday.\n")
    (folder / "headed.md").write_text(
        "---\ntitle: Oncall\n---\n# Oncall\n\nPage the owner first.\n"
    )
    db = tmp_path / "memory.db"
    assert run(db, "basic-memory", folder).exit_code == 0
    contents = {m["content"] for m in MemoryService(open_store(db)).list({})}
    assert contents == {
        "Payments: Chosen over Adyen in 2025 #vendor",
        "Payments settle daily",
        "Release train\n\nShips every Tuesday.",
        "# Oncall\n\nPage the owner first.",  # its heading names it already
    }
