"""``agent-memory ui``: find the daemon of this database, or start one; print and open the page."""

from __future__ import annotations

import signal
import socket
import subprocess
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner
from rest_daemon import START_TIMEOUT_SECS, RestDaemon

from agent_memory import ui
from agent_memory.cli import cli
from agent_memory.storage import database_id

from conftest import executable, server_env


@pytest.fixture
def opened(tmp_path) -> Path:
    """Where the stand-in browser ($BROWSER) writes each address it is asked to open."""
    return tmp_path / "opened.txt"


@pytest.fixture
def browser_env(tmp_path, opened) -> dict[str, str]:
    script = tmp_path / "browser.sh"
    script.write_text(f'#!/bin/sh\necho "$1" >> "{opened}"\n')
    script.chmod(0o755)
    return server_env(BROWSER=str(script), DISPLAY="")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_ui(env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [executable(), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_ui_uses_the_daemon_already_serving_this_database(db_path, browser_env, opened):
    with RestDaemon(db_path) as daemon:
        done = subprocess.run(
            [executable(), "--db", str(db_path), "ui", "--addr", f"127.0.0.1:{daemon.port}"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=browser_env,
            timeout=START_TIMEOUT_SECS,
        )
        assert daemon.stop() == 0
    url = f"http://127.0.0.1:{daemon.port}/"
    assert (done.returncode, done.stdout) == (0, f"{url}\n"), done.stderr
    assert "serves this database" in done.stderr
    assert opened.read_text() == f"{url}\n"


@pytest.mark.parametrize("other_database", [True, False])
def test_ui_starts_a_daemon_until_stopped(db_path, tmp_path, browser_env, opened, other_database):
    """A daemon of another database at --addr: ui starts its own on a free port; nothing
    there: at --addr. Either serves the page of this database, with ui's global options."""
    other = RestDaemon(tmp_path / "other.db") if other_database else None
    port = other.port if other else free_port()
    limit = ("--max-content-bytes", "64")
    addr = ("--addr", f"127.0.0.1:{port}")
    if other_database:  # the global options after the subcommand's name, as `serve --db x`
        args = ("ui", *addr, "--db", str(db_path), *limit)
    else:
        args = ("--db", str(db_path), *limit, "ui", *addr)
    started = start_ui(browser_env, *args)
    try:
        url = started.stdout.readline().strip()  # printed once the daemon listens
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        assert (url != f"http://127.0.0.1:{port}/") is other_database
        health = requests.get(f"{url}health", timeout=START_TIMEOUT_SECS).json()
        assert health["database_id"] == database_id(db_path)
        assert requests.get(url, timeout=START_TIMEOUT_SECS).text.startswith("<!doctype html>")
        too_big = requests.post(
            f"{url}api/memories", json={"content": "x" * 65, "type": "TODO"}, timeout=30
        )
        assert "at most 64 bytes" in too_big.json()["error"]  # --max-content-bytes reached it
        started.send_signal(signal.SIGINT)  # Ctrl-C
        assert started.wait(timeout=START_TIMEOUT_SECS) == 0
        assert opened.read_text() == f"{url}\n"
        with pytest.raises(requests.ConnectionError):  # the daemon went with it
            requests.get(f"{url}health", timeout=START_TIMEOUT_SECS)
    finally:
        if started.poll() is None:
            started.kill()
        started.wait()
        if other:
            assert other.stop() == 0


def test_ui_without_a_browser_only_prints_the_address(db_path):
    env = server_env(DISPLAY="", WAYLAND_DISPLAY="")
    started = start_ui(env, "--db", str(db_path), "ui", "--addr", "127.0.0.1:0")
    try:
        url = started.stdout.readline().strip()
        assert requests.get(f"{url}health", timeout=START_TIMEOUT_SECS).status_code == 200
        started.terminate()  # SIGTERM too stops both
        assert started.wait(timeout=START_TIMEOUT_SECS) == 0
        assert "no browser to open here" in started.stderr.read()
    finally:
        if started.poll() is None:
            started.kill()
        started.wait()


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
        assert ui.probe("127.0.0.1", port, database_id(db_path)) == ui.OTHER
    assert ui.probe("127.0.0.1", free_port(), database_id(db_path)) == ui.FREE
