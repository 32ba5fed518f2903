"""Global options before or after the subcommand (`agent-memory serve --db x.db` is what
MCP client configs hold), and the notice ``serve`` gives a person in a terminal: how it names
the command."""

from __future__ import annotations

import json
import logging
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agent_memory import app as wiring
from agent_memory.cli.main import cli, terminal_notice
from agent_memory.settings import Settings
from tests.support.spawned import executable

GLOBALS = [
    "--embedder",
    "ollama",
    "--ollama-url",
    "http://127.0.0.1:9",
    "--embed-model",
    "other",
    "--sweep-interval",
    "5",
    "--max-content-bytes",
    "100",
    "--redact",
    "off",
    "--log-level",
    "debug",
]
# Each subcommand with the arguments of its own it needs; the service is never opened.
COMMANDS = [
    ["serve"],
    ["serve-rest", "--addr", "127.0.0.1:0"],
    ["reembed", "--batch", "2"],
    ["embed", "--batch", "2"],
    ["doctor", "--repair"],
    ["export"],
    ["import", "--from", "gsd-state", "{tmp}/STATE.md"],
]


@pytest.fixture
def opened(monkeypatch):
    """The Settings each command opens its service with (and the log level then)."""
    seen = {}

    def fake_open(settings, **_mode):
        seen.update(settings=settings, level=logging.getLogger().level)
        raise SystemExit(0)

    monkeypatch.setattr(wiring, "open_service", fake_open)
    return seen


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("where", ["before", "after"])
def test_global_options_go_before_or_after_the_subcommand(opened, tmp_path, command, where):
    (tmp_path / "STATE.md").write_text("## Decisions\n- one\n")
    options = ["--db", str(tmp_path / "m.db"), *GLOBALS]
    command = [arg.replace("{tmp}", str(tmp_path)) for arg in command]
    args = [*options, *command] if where == "before" else [*command, *options]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    settings = opened["settings"]
    assert settings == Settings(
        db=tmp_path / "m.db",
        ollama_url="http://127.0.0.1:9",
        embed_model="other",
        sweep_interval=5,
        max_content_bytes=100,
        redact=False,
        embedder="ollama",
        log_level="debug",
    )
    assert opened["level"] == logging.DEBUG


def test_a_value_after_the_subcommand_wins(opened, tmp_path):
    args = ["--db", str(tmp_path / "a.db"), "--sweep-interval", "7", "serve", "--db"]
    result = CliRunner().invoke(
        cli, [*args, str(tmp_path / "b.db")], env={"AGENT_MEMORY_EMBED_MODEL": "from-env"}
    )
    assert result.exit_code == 0, result.output
    settings = opened["settings"]
    # --db from after the subcommand; the rest as before it, or from the environment
    assert (settings.db, settings.sweep_interval, settings.embed_model) == (
        tmp_path / "b.db",
        7,
        "from-env",
    )


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["serve", "--sweep-interval", "0"], "--sweep-interval"),
        (["serve", "--log-level", "loud"], "--log-level"),
        (["export", "--redact", "maybe"], "--redact"),
        (["serve", "--version"], "No such option '--version'"),
    ],
)
def test_a_bad_global_option_after_the_subcommand_is_a_usage_error(opened, args, shown):
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert shown in result.output
    assert opened == {}


def test_subcommand_help_lists_the_global_options():
    result = CliRunner().invoke(cli, ["serve", "--help"])
    assert result.exit_code == 0
    for option in ("--db", "--ollama-url", "--sweep-interval", "--log-level", "AGENT_MEMORY_DB"):
        assert option in result.output
    assert result.output.rstrip().endswith("Show this message and exit.")


def notice_command(monkeypatch, path: Path, running: str = "") -> str:
    """The command terminal_notice tells a client to run, with PATH set to ``path`` and
    this process taken for the console script ``running``."""
    monkeypatch.setenv("PATH", str(path))
    monkeypatch.setattr(sys, "argv", [running or executable(), "serve"])
    entry = re.search(r'add the server "agent-memory": (\{.*?\}) to', terminal_notice(None))
    return json.loads(entry[1])["command"]


def test_the_notice_names_the_bare_command_when_path_finds_this_one(monkeypatch):
    assert notice_command(monkeypatch, Path(executable()).parent) == "agent-memory"


def test_the_notice_names_the_absolute_path_when_path_does_not(monkeypatch, tmp_path):
    assert notice_command(monkeypatch, tmp_path) == executable()


def test_the_notice_names_the_absolute_path_when_path_finds_another(monkeypatch, tmp_path):
    other = tmp_path / "agent-memory"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    assert notice_command(monkeypatch, tmp_path) == executable()


def test_the_notice_under_the_second_script_names_agent_memory_beside_it(monkeypatch, tmp_path):
    second = str(Path(executable()).with_name("typed-agent-memory"))
    assert notice_command(monkeypatch, tmp_path, running=second) == executable()
    assert notice_command(monkeypatch, Path(executable()).parent, running=second) == "agent-memory"
