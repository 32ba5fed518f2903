"""End to end with the real executable: the terminal commands, a read-only directory as
another user sees it, and the Claude Code plugin in integrations/claude-code run as Claude
Code runs it (its SessionStart hook's stdout, its MCP server)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.support.files import file_hashes
from tests.support.paths import PLUGIN
from tests.support.spawned import executable, run_agent_memory, server_env

# Claude Code adds at most this much of a hook's output to the context.
HOOK_CONTEXT_CHARS = 10_000


def run(
    *args: str, db: Path, input: str | None = None, env=None, prefix=()
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*prefix, executable(), "--db", str(db), *args],
        input=input,
        capture_output=True,
        text=True,
        env=env or server_env(),
        timeout=120,
    )


def test_the_commands_end_to_end(tmp_path):
    db = tmp_path / "memory.db"
    stored = run(
        "store",
        "--type",
        "DECISION",
        "--scope",
        "kore",
        "--json",
        db=db,
        input="We chose SQLite with WAL\n",
    )
    assert (stored.returncode, stored.stdout) == (0, '{"id": 1}\n')
    listed = run("list", "--json", db=db)
    assert [m["content"] for m in json.loads(listed.stdout)["memories"]] == [
        "We chose SQLite with WAL"
    ]
    bad = run("search", "x", "--limit", "0", db=db)
    assert (bad.returncode, bad.stdout, bad.stderr) == (
        2,
        "",
        "invalid argument: limit must be between 1 and 200 (got 0)\n",
    )
    missing = run("show", "7", db=db)
    assert (missing.returncode, missing.stdout, missing.stderr) == (1, "", "memory 7 not found\n")
    brief = run("context", "--scope", "kore", db=db)
    assert (brief.returncode, brief.stderr) == (0, "")
    assert "- #1 DECISION " in brief.stdout


# -- a read-only directory, as a user who cannot write it ------------------------------------


def as_another_user() -> list[str]:
    """A command prefix that runs the child as a user without write access to a directory
    of mode 0555: nobody when the tests run as root (root writes anywhere)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot drop to another user")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture
def read_only_dir():
    """A directory anyone can read and nobody but root can write, holding a database."""
    top = Path(tempfile.mkdtemp(prefix="agent-memory-ro-"))
    top.chmod(0o755)
    where = top / "data"
    where.mkdir()
    db = where / "memory.db"
    run("store", "We chose SQLite", "--type", "DECISION", "--scope", "kore", db=db)
    run("store", "Rotate the keys", "--type", "TODO", "--scope", "kore", db=db)
    db.chmod(0o644)
    where.chmod(0o555)
    yield db
    where.chmod(0o755)
    for path in where.iterdir():
        path.unlink()
    where.rmdir()
    top.rmdir()


def readonly_env() -> dict:
    """No coverage in the child: it could not write its data file there."""
    return {k: v for k, v in server_env().items() if not k.startswith("COVERAGE")}


def test_reading_commands_read_a_read_only_directory_and_writes_name_the_cause(read_only_dir):
    db, who = read_only_dir, as_another_user()
    before = file_hashes(db)
    listed = run("list", db=db, env=readonly_env(), prefix=who)
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["ID", "2", "1"]
    found = run("search", "sqlite", db=db, env=readonly_env(), prefix=who)
    assert found.returncode == 0  # no bump
    assert found.stderr == (
        "1 found (keyword search: 2 memories waiting for a vector; run `agent-memory embed`)\n"
    )
    exported = run("export", db=db, env=readonly_env(), prefix=who)
    assert exported.returncode == 0
    assert exported.stderr.endswith("exported 2 memories and 0 links\n")
    brief = run("context", "--scope", "kore", db=db, env=readonly_env(), prefix=who)
    assert brief.returncode == 0 and "- #1 DECISION" in brief.stdout
    for write in (["store", "x", "--type", "TODO"], ["forget", "1"]):
        refused = run(*write, db=db, env=readonly_env(), prefix=who)
        assert (refused.returncode, refused.stdout) == (1, "")
        assert refused.stderr == (
            f"cannot open database {db}: read-only directory {db.parent} "
            "(attempt to write a readonly database)\n"
        )
    assert file_hashes(db) == before  # and no -wal or -shm appeared


def test_when_even_reading_fails_the_cause_is_named(read_only_dir):
    """A -wal left beside the file: SQLite must create the -shm to read it, and cannot."""
    db = read_only_dir
    db.parent.chmod(0o755)
    Path(f"{db}-wal").touch()
    db.parent.chmod(0o555)
    for command in (["list"], ["context"]):
        result = run(*command, db=db, env=readonly_env(), prefix=as_another_user())
        assert (result.returncode, result.stdout) == (1, "")
        assert result.stderr == (
            f"cannot open database {db}: read-only directory {db.parent} "
            "(unable to open database file)\n"
        )


def session_start_hooks(source: str) -> list[dict]:
    """The command hooks Claude Code would run for a SessionStart of ``source``."""
    groups = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]["SessionStart"]
    return [
        hook
        for group in groups
        if re.fullmatch(group.get("matcher") or ".*", source)
        for hook in group["hooks"]
        if hook["type"] == "command"
    ]


def run_hook(hook: dict, project: Path, db: Path) -> subprocess.CompletedProcess:
    """As Claude Code runs a command hook: through the shell, in the session's directory,
    with ${CLAUDE_PLUGIN_ROOT} expanded, the plugin's variables set and the event's JSON on
    stdin; what it prints on stdout (exit 0) goes into the session's context."""
    env = server_env(
        AGENT_MEMORY_DB=str(db),
        CLAUDE_PLUGIN_ROOT=str(PLUGIN),
        CLAUDE_PROJECT_DIR=str(project),
        PATH=f"{Path(executable()).parent}{os.pathsep}{os.environ['PATH']}",
    )
    event = {
        "session_id": "4f1c2a",
        "transcript_path": str(project / "transcript.jsonl"),
        "cwd": str(project),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    return subprocess.run(
        ["/bin/sh", "-c", hook["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(PLUGIN))],
        cwd=project,
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env=env,
        timeout=hook.get("timeout", 60),
    )


@pytest.fixture
def project(tmp_path) -> Path:
    repo = tmp_path / "kore-runtime"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    return repo


def test_the_session_start_hook_prints_the_projects_brief(project, tmp_path):
    db = tmp_path / "memory.db"
    for args in (
        ["Money is integers of cents", "--type", "DECISION", "--scope", "kore-runtime"],
        ["Secrets never go into memories", "--type", "CONSTRAINT"],
        ["Use Stripe", "--type", "DECISION", "--scope", "billing"],
    ):
        assert run("store", *args, db=db).returncode == 0
    hooks = session_start_hooks("startup")
    assert len(hooks) == 1 and {s: session_start_hooks(s) for s in ("resume", "clear", "compact")}
    result = run_hook(hooks[0], project / "src", db)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith("# Memory from earlier sessions (agent-memory)\n")
    assert "For project `kore-runtime`, then global" in result.stdout
    assert "- #1 DECISION " in result.stdout and "- #2 CONSTRAINT " in result.stdout
    assert "Use Stripe" not in result.stdout  # another project's
    assert len(result.stdout) <= HOOK_CONTEXT_CHARS


def test_the_session_start_hook_is_silent_before_the_first_memory(project, tmp_path):
    db = tmp_path / "none" / "memory.db"
    result = run_hook(session_start_hooks("startup")[0], project, db)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not db.parent.exists()


def test_the_plugins_mcp_server_starts_as_claude_code_starts_it(tmp_path):
    server = json.loads((PLUGIN / ".mcp.json").read_text())["agent-memory"]
    command = Path(executable()).parent / server["command"]
    params = StdioServerParameters(
        command=str(command),
        args=server["args"],
        env=server_env(AGENT_MEMORY_DB=str(tmp_path / "memory.db")),
    )

    async def main():
        async with Client(stdio_client(params)) as client:
            return await client.list_tools()

    tools = anyio.run(main)
    assert {"memory_store", "memory_search", "memory_list"} <= {t.name for t in tools.tools}


def test_export_of_a_missing_database_says_so(tmp_path):
    db = tmp_path / "a" / "b" / "c" / "m.db"
    proc = run_agent_memory("--db", str(db), "export")
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"no database at {db}\n")
    assert list(tmp_path.iterdir()) == []
