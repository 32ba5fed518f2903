"""The README's examples run as written: a copy-paster meets no error."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.support.paths import ROOT
from tests.support.spawned import executable, server_env

README = ROOT / "README.md"


def shell_block(section: str) -> str:
    """The first ```sh block under the heading ``section``."""
    text = README.read_text("utf-8")
    start = text.index(f"\n{section}\n")
    return re.search(r"```sh\n(.*?)```", text[start:], re.S)[1]


def test_the_terminal_example_runs_on_a_new_database(tmp_path):
    """Every line of "From a terminal" succeeds on a new database: the ids it uses are
    the ones its own stores get."""
    script = "set -e -o pipefail\n" + shell_block("## From a terminal")
    env = server_env(AGENT_MEMORY_DB=str(tmp_path / "memory.db"))
    env["PATH"] = os.pathsep.join([str(Path(executable()).parent), env.get("PATH", "")])
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    stored = re.findall(r"^stored memory (\d+)$", done.stdout, re.M)
    assert stored == ["1", "2", "3", "4"]
    assert "linked 4 -[supersedes]-> 1" in done.stdout
    assert "forgot memory 3" in done.stdout
