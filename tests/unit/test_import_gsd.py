"""``agent-memory import --from gsd-state``: the tolerant STATE.md reader, on realistic files."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from agent_memory.cli.main import cli
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.transfer import gsd

FRESH_TEMPLATE = """# Project State

## Project Reference

See: .planning/PROJECT.md

## Current Position

Phase: 1 of 4 (Foundation)
Status: Ready to plan

## Accumulated Context

### Decisions

None yet.

### Pending Todos

None yet.

### Blockers/Concerns

None yet.

## Session Continuity

Last session: never
"""

MID_MILESTONE = """---
milestone: v1.0
status: executing
progress:
  - phase: 2
---

# Project State

## Accumulated Context

### Decisions

- [Phase 1]: Use SQLite with WAL for the local store
- [Phase 2]: Hybrid search fuses bm25 and cosine with RRF (k = 60)
  - nested: keep the keyword path as the fallback

### Pending Todos

- Write the restore runbook
* Benchmark search at 100k memories

### Blockers/Concerns

- Ollama is not installed on the CI runners

## Deferred Items

| Category | Item | Status |
|----------|------|--------|
| perf | Quantized vector leg | deferred to v1.1 |
| docs | *(none)* | |
| ux |  | empty item cell |
| api | Windows ACLs | |

## Session Continuity

- Last session: 2026-11-30 (not an item: another section)
"""

HAND_EDITED = (
    "\ufeff# State\r\n"
    "### decisions made\r\n"
    "- Keep migrations forward-only\r\n"
    "-\r\n"
    "```\r\n"
    "- not an item: inside a fence\r\n"
    "```\r\n"
    "~~~md\r\n"
    "* neither is this\r\n"
    "~~~\r\n"
    "*   Tabs and spaces after the marker are fine\r\n"
    "- None\r\n"
    "### CONCERNS ###\r\n"
    "- Disk space on small laptops\r\n"
    "- " + "x" * 9000 + "\r\n"
    "### Notes\r\n"
    "- ignored: not a known section\r\n"
)


def contents(text: str) -> list[tuple[str, str, list[str]]]:
    return [(i.type, i.content, i.tags) for i in gsd.parse(text).items]


def test_a_fresh_template_has_nothing_to_import():
    parsed = gsd.parse(FRESH_TEMPLATE)
    assert (parsed.items, parsed.malformed) == ([], 0)


def test_a_mid_milestone_state_with_frontmatter_and_a_deferred_table():
    assert contents(MID_MILESTONE) == [
        ("DECISION", "[Phase 1]: Use SQLite with WAL for the local store", ["gsd"]),
        (
            "DECISION",
            "[Phase 2]: Hybrid search fuses bm25 and cosine with RRF (k = 60)\n"
            "  - nested: keep the keyword path as the fallback",
            ["gsd"],
        ),
        ("TODO", "Write the restore runbook", ["gsd"]),
        ("TODO", "Benchmark search at 100k memories", ["gsd"]),
        ("CONSTRAINT", "Ollama is not installed on the CI runners", ["gsd"]),
        ("TODO", "Quantized vector leg — deferred to v1.1", ["gsd", "deferred"]),
        ("TODO", "Windows ACLs", ["gsd", "deferred"]),
    ]
    assert gsd.parse(MID_MILESTONE).malformed == 0


def test_a_hand_edited_file_with_bom_crlf_fences_and_odd_bullets():
    parsed = gsd.parse(HAND_EDITED)
    assert contents(HAND_EDITED) == [
        ("DECISION", "Keep migrations forward-only", ["gsd"]),
        ("DECISION", "Tabs and spaces after the marker are fine", ["gsd"]),
        ("CONSTRAINT", "Disk space on small laptops", ["gsd"]),
    ]
    assert parsed.malformed == 2  # the lone marker and the 9,000-byte item


@pytest.mark.parametrize(
    ("header", "row", "expected"),
    [
        ("| Item | Reason |", "| Ship docs | waiting on review |", "Ship docs — waiting on review"),
        (
            "| Category | What | Status |",
            "| perf | Cache warm-up | later |",
            "Cache warm-up — later",
        ),
        ("| Item |", "| Alone |", "Alone"),
    ],
)
def test_deferred_columns_are_found_by_header_name(header, row, expected):
    text = f"## Deferred Items\n{header}\n|---|---|---|\n{row}\n"
    assert contents(text) == [("TODO", expected, ["gsd", "deferred"])]


def invoke(db_path, *args):
    return CliRunner().invoke(cli, ["--db", str(db_path), "import", "--from", "gsd-state", *args])


def test_cli_import_scopes_to_the_project_and_re_running_is_a_no_op(tmp_path):
    state = tmp_path / "kore-runtime" / ".planning" / "STATE.md"
    state.parent.mkdir(parents=True)
    state.write_text(MID_MILESTONE, encoding="utf-8")
    db_path = tmp_path / "memory.db"
    result = invoke(db_path, str(state))
    assert result.exit_code == 0, result.output
    assert result.stdout == "imported: 7, skipped duplicates: 0, malformed lines skipped: 0\n"
    result = invoke(db_path, str(state))
    assert result.stdout == "imported: 0, skipped duplicates: 7, malformed lines skipped: 0\n"
    svc = MemoryService(open_store(db_path))
    try:
        memories = svc.list({})
        assert {m["scope"] for m in memories} == {"kore-runtime"}
        assert {m["source"] for m in memories} == {"gsd-state"}
        assert all("gsd" in m["tags"] for m in memories)
    finally:
        svc.close()
    result = invoke(db_path, "--scope", "other", str(state))  # another project's memories
    assert result.stdout == "imported: 7, skipped duplicates: 0, malformed lines skipped: 0\n"


def test_a_state_md_is_imported_without_from(tmp_path):
    state = tmp_path / "kore" / ".planning" / "STATE.md"
    state.parent.mkdir(parents=True)
    state.write_text(MID_MILESTONE, encoding="utf-8")
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "memory.db"), "import", str(state)])
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == "imported: 7, skipped duplicates: 0, malformed lines skipped: 0\n"


def test_cli_import_of_a_missing_or_non_utf8_file_is_one_line(tmp_path):
    for path, setup in [(tmp_path / "missing.md", None), (tmp_path / "latin1.md", b"- caf\xe9\n")]:
        if setup is not None:
            path.write_bytes(setup)
        result = invoke(tmp_path / "never.db", str(path))
        assert result.exit_code == 1
        assert len(result.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "never.db").exists()


NESTED = """## Decisions

- Amounts are integers of cents
  - never floats
    * not even in reports
  because rounding drifted in 2024

- Prices come from the catalogue
\t- tab-indented detail
- None
  - a note under a placeholder goes with it
Not an item: a paragraph ends the item above
  - a bullet under a paragraph is an item of its own
## Pending Todos
- Write the migration
```
- in a fence: not an item
```
"""


def test_nested_bullets_and_continued_lines_fold_into_their_item():
    assert contents(NESTED) == [
        (
            "DECISION",
            "Amounts are integers of cents\n  - never floats\n    * not even in reports\n"
            "  because rounding drifted in 2024",
            ["gsd"],
        ),
        ("DECISION", "Prices come from the catalogue\n    - tab-indented detail", ["gsd"]),
        ("DECISION", "a bullet under a paragraph is an item of its own", ["gsd"]),
        ("TODO", "Write the migration", ["gsd"]),
    ]


def test_a_folded_item_over_the_size_limit_is_malformed():
    text = "## Decisions\n- short parent\n" + "  - child\n" * 1000 + "- next\n"
    parsed = gsd.parse(text)
    assert [i.content for i in parsed.items] == ["next"]
    assert parsed.malformed == 1


@pytest.mark.parametrize(
    "text",
    ['{"record": "header"}\n{"record": "memory"}\n', "# Notes\n\n- an item, but not GSD's\n", ""],
    ids=["jsonl", "other-headings", "empty"],
)
def test_a_file_with_no_known_section_says_so_and_creates_nothing(tmp_path, text):
    notes = tmp_path / "notes.jsonl"
    notes.write_text(text, encoding="utf-8")
    db_path = tmp_path / "data" / "memory.db"
    result = invoke(db_path, str(notes))
    assert result.exit_code == 0
    assert result.stdout == "imported: 0, skipped duplicates: 0, malformed lines skipped: 0\n"
    assert result.stderr == (
        f"no known GSD section in {notes} (headings read: Decisions, Decisions Made, "
        "Blockers/Concerns, Blockers, Concerns, Pending Todos, Deferred Items)\n"
    )
    assert not (tmp_path / "data").exists()


def test_a_state_with_nothing_to_import_leaves_no_database_behind(tmp_path):
    state = tmp_path / "STATE.md"
    state.write_text(FRESH_TEMPLATE, encoding="utf-8")
    result = invoke(tmp_path / "memory.db", str(state))
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == "imported: 0, skipped duplicates: 0, malformed lines skipped: 0\n"
    assert not (tmp_path / "memory.db").exists()


def test_the_default_scope_is_the_git_top_level_of_the_project(tmp_path):
    repo = tmp_path / "kore"
    (repo / ".git").mkdir(parents=True)
    state = repo / "services" / "billing" / ".planning" / "STATE.md"
    state.parent.mkdir(parents=True)
    assert gsd.default_scope(state) == "kore"
    (repo / ".git").rmdir()
    assert gsd.default_scope(state) == "billing"
