"""The click front end: global options, version, help, usage errors."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from agent_memory import __version__
from agent_memory.cli.main import cli


@pytest.fixture
def runner():
    return CliRunner()


def test_version(runner):
    result = runner.invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"agent-memory {__version__}\n"


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_lists_every_global_option(runner, flag):
    result = runner.invoke(cli, [flag])
    assert result.exit_code == 0
    for option in (
        "--db",
        "--ollama-url",
        "--embed-model",
        "--sweep-interval",
        "--log-level",
        "--version",
        "serve",
    ):
        assert option in result.output
    for env in (
        "AGENT_MEMORY_DB",
        "AGENT_MEMORY_OLLAMA_URL",
        "AGENT_MEMORY_EMBED_MODEL",
        "AGENT_MEMORY_SWEEP_INTERVAL",
        "AGENT_MEMORY_LOG",
    ):
        assert env in result.output


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "abc", ""])
def test_sweep_interval_must_be_a_whole_positive_number(runner, value):
    result = runner.invoke(cli, ["--sweep-interval", value, "serve"])
    assert result.exit_code == 2
    assert "--sweep-interval" in result.output


def test_sweep_interval_from_the_environment_is_checked_too(runner):
    result = runner.invoke(cli, ["serve"], env={"AGENT_MEMORY_SWEEP_INTERVAL": "soon"})
    assert result.exit_code == 2


def test_unknown_log_level_is_a_usage_error(runner):
    result = runner.invoke(cli, ["--log-level", "loud", "serve"])
    assert result.exit_code == 2


def test_settings_reach_the_subcommand(runner, tmp_path, monkeypatch):
    seen = {}

    def fake_open(settings, **_options):
        seen["settings"] = settings
        raise SystemExit(0)

    monkeypatch.setattr("agent_memory.app.open_service", fake_open)
    result = runner.invoke(
        cli,
        [
            "--db",
            str(tmp_path / "m.db"),
            "--ollama-url",
            "http://127.0.0.1:9",
            "--embed-model",
            "other",
            "--sweep-interval",
            "5",
            "serve",
        ],
    )
    assert result.exit_code == 0
    settings = seen["settings"]
    assert (settings.db, settings.ollama_url, settings.embed_model, settings.sweep_interval) == (
        tmp_path / "m.db",
        "http://127.0.0.1:9",
        "other",
        5,
    )


def test_environment_defaults(runner, monkeypatch):
    seen = {}
    monkeypatch.setattr(
        "agent_memory.app.open_service", lambda s, **_o: seen.setdefault("s", s) and exit(0)
    )
    runner.invoke(
        cli,
        ["serve"],
        env={"AGENT_MEMORY_OLLAMA_URL": "http://127.0.0.1:1", "AGENT_MEMORY_EMBED_MODEL": "m"},
    )
    assert (seen["s"].ollama_url, seen["s"].embed_model, seen["s"].sweep_interval) == (
        "http://127.0.0.1:1",
        "m",
        3600,
    )


def test_unopenable_database_exits_1_with_one_line(runner, tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"x" * 4096)
    result = runner.invoke(cli, ["--db", str(bad), "serve"])
    assert result.exit_code == 1
    assert result.output == f"cannot open database {bad}: file is not a database\n"


class _Terminal:
    def __init__(self, tty: bool) -> None:
        self.tty, self.text = tty, ""

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize(
    ("tty", "total", "shown"), [(True, 5000, True), (False, 5000, False), (True, 10, False)]
)
def test_progress_shows_only_on_a_terminal_for_big_jobs(monkeypatch, tty, total, shown):
    from agent_memory.cli import terminal as terminal_module

    terminal = _Terminal(tty)
    monkeypatch.setattr(terminal_module.sys, "stderr", terminal)
    bar = terminal_module.Progress("importing")
    for done in range(0, total + 1, 1000):
        bar.at(done, total)
    bar.close()
    assert ("importing" in terminal.text) is shown
    assert (terminal.text == "") is (not shown)


@pytest.mark.parametrize(
    "args",
    [
        ["--sweep-interval", "\uff12", "serve"],  # fullwidth 2
        ["--max-content-bytes", "\u0661\u0660\u0660", "serve"],  # Arabic-Indic 100
        ["--sweep-interval", "9" * 5000, "serve"],
        ["reembed", "--batch", "\u0968"],  # Devanagari 2
        ["serve-rest", "--addr", "127.0.0.1:\u0668\u0660"],  # Arabic-Indic 80
    ],
    ids=["fullwidth", "arabic-indic", "5000-digits", "devanagari", "addr-port"],
)
def test_number_options_take_ascii_digits_only(runner, tmp_path, args):
    db = tmp_path / "memory.db"
    result = runner.invoke(cli, ["--db", str(db), *args])
    assert result.exit_code == 2, result.output
    assert "Invalid value for" in result.output
    assert "9" * 100 not in result.output  # a long value is described, not echoed
    assert not db.exists()
