"""``agent-memory ui`` in process: the addresses it refuses, when it opens a browser, and a
port that answers something else."""

from __future__ import annotations

import socket

import pytest
from click.testing import CliRunner

from agent_memory.cli import ui
from agent_memory.cli.main import cli
from agent_memory.storage import database_key
from tests.support.rest_daemon import free_port


def test_ui_refuses_an_address_beyond_loopback(db_path):
    result = CliRunner().invoke(cli, ["--db", str(db_path), "ui", "--addr", "192.0.2.1:7437"])
    assert result.exit_code == 1
    assert "loopback address only" in result.output


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, False),
        ({"DISPLAY": ":0"}, True),
        ({"WAYLAND_DISPLAY": "wayland-0"}, True),
        ({"BROWSER": "firefox"}, True),
    ],
)
def test_a_browser_is_opened_only_where_there_is_one(monkeypatch, env, expected):
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(ui.sys, "platform", "linux")
    assert ui.has_browser() is expected


def test_a_port_that_answers_something_else_is_not_ours(db_path, monkeypatch):
    monkeypatch.setattr(ui, "PROBE_TIMEOUT_SECS", 0.2)
    with socket.socket() as listener:  # takes the connection and never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert ui.probe("127.0.0.1", port, database_key(db_path)) == ui.OTHER
    assert ui.probe("127.0.0.1", free_port(), database_key(db_path)) == ui.FREE
