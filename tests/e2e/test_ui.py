"""``agent-memory ui`` spawned: find the daemon of this database, or start one; print and open
the page; never trust an impostor on the port."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import requests

from agent_memory.cli import ui
from agent_memory.storage import database_key, open_store
from agent_memory.storage.sqlite.database import read_meta
from tests.support.rest_daemon import START_TIMEOUT_SECS, RestDaemon, free_port
from tests.support.spawned import executable, server_env


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


def test_ui_says_the_page_asks_for_a_token_when_the_daemon_requires_one(db_path):
    env = server_env(DISPLAY="", WAYLAND_DISPLAY="")
    asked = "the page asks for a token: `agent-memory token create NAME` makes one"
    for tokens in (False, True):
        if tokens:
            token = subprocess.run(
                [executable(), "--db", str(db_path), "token", "create", "alice"],
                capture_output=True,
                env=env,
                timeout=START_TIMEOUT_SECS,
            )
            assert token.returncode == 0
        with RestDaemon(db_path) as daemon:
            done = subprocess.run(
                [executable(), "--db", str(db_path), "ui", "--addr", f"127.0.0.1:{daemon.port}"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                env=env,
                timeout=START_TIMEOUT_SECS,
            )
            assert daemon.stop() == 0
        assert done.returncode == 0, done.stderr
        assert (asked in done.stderr) == tokens, done.stderr


class Impostor(BaseHTTPRequestHandler):
    """A program listening first on the port: it answers /health as a daemon of the
    database would, with all it can know without reading the file (its path)."""

    answer: ClassVar[dict] = {}
    asked: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.asked.append(self.path)
        body = json.dumps(self.answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@contextmanager
def impostor(db_path: Path, port: int = 0) -> Iterator[tuple[int, list[str]]]:
    """(its port, the paths it was asked for)."""
    path_hash = hashlib.sha256(os.fsencode(os.path.realpath(db_path))).hexdigest()
    answer = {
        "status": "ok",
        "embedder": "unreachable",
        "search_mode": "keyword",
        "database_id": path_hash[:16],  # what the daemon of this file answered before
        "database_proof": path_hash,
    }
    handler = type("Handler", (Impostor,), {"answer": answer, "asked": []})
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_port, handler.asked
    finally:
        server.shutdown()
        server.server_close()


def test_an_impostor_on_the_port_is_not_trusted(db_path):
    """It listens first and answers with everything computable from the path: an --addr
    given is refused, and the database's id was never sent to it (issue 31, item 17)."""
    open_store(db_path).close()
    with impostor(db_path) as (port, asked):
        done = subprocess.run(
            [
                executable(),
                "--db",
                str(db_path),
                "ui",
                "--no-browser",
                "--addr",
                f"127.0.0.1:{port}",
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=server_env(),
            timeout=START_TIMEOUT_SECS,
        )
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    assert f"127.0.0.1:{port} is in use by a program that does not prove it serves" in done.stderr
    assert "pass another --addr" in done.stderr
    stored = read_meta(db_path)["database_id"]
    assert len(asked) == 1 and stored not in asked[0]
    assert database_key(db_path).hex() not in asked[0]


def test_an_explicit_addr_serving_another_database_is_refused(db_path, tmp_path):
    with RestDaemon(tmp_path / "other.db") as other:
        started = start_ui(
            server_env(), "--db", str(db_path), "ui", "--addr", f"127.0.0.1:{other.port}"
        )
        try:
            assert started.stdout.readline() == ""  # no address: it did not start elsewhere
            assert started.wait(timeout=START_TIMEOUT_SECS) == 1
            assert "does not prove it serves this database" in started.stderr.read()
        finally:
            if started.poll() is None:
                started.send_signal(signal.SIGINT)  # ui passes it on to what it started
                started.wait(timeout=START_TIMEOUT_SECS)
        assert other.stop() == 0


def test_the_default_addr_gives_way_to_a_free_port(db_path, browser_env, opened):
    """Something else on the default address (here an impostor): ui starts its own daemon
    on a free port."""
    open_store(db_path).close()
    default_port = int(ui.DEFAULT_ADDR.rsplit(":", 1)[1])
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the impostor binds
        try:
            sock.bind(("127.0.0.1", default_port))
        except OSError:
            pytest.skip(f"the default port {default_port} is in use on this machine")
    with impostor(db_path, default_port):
        started = start_ui(browser_env, "--db", str(db_path), "ui")
        try:
            url = started.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            assert url != ui.page_url("127.0.0.1", default_port)
            port = int(url.rstrip("/").rsplit(":", 1)[1])
            assert ui.probe("127.0.0.1", port, database_key(db_path)) == ui.OURS
            started.send_signal(signal.SIGINT)
            assert started.wait(timeout=START_TIMEOUT_SECS) == 0
            assert "starting on a free port" in started.stderr.read()
        finally:
            if started.poll() is None:
                started.kill()
            started.wait()


@pytest.mark.parametrize("options_after", [True, False])
def test_ui_starts_a_daemon_until_stopped(db_path, browser_env, opened, options_after):
    """Nothing at --addr: ui starts the daemon of this database there, with its global
    options (given before the subcommand's name or after it, as `serve --db x`)."""
    port = free_port()
    limit = ("--max-content-bytes", "64")
    addr = ("--addr", f"127.0.0.1:{port}")
    if options_after:
        args = ("ui", *addr, "--db", str(db_path), *limit)
    else:
        args = ("--db", str(db_path), *limit, "ui", *addr)
    started = start_ui(browser_env, *args)
    try:
        url = started.stdout.readline().strip()  # printed once the daemon listens
        assert url == f"http://127.0.0.1:{port}/"
        assert ui.probe("127.0.0.1", port, database_key(db_path)) == ui.OURS
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
