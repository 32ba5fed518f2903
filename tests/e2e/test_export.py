"""``agent-memory export`` spawned: into a FIFO and a character device, refusing a link or a
directory untouched, and under signals (SIGTERM, SIGHUP under nohup) leaving no temp file."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent_memory.storage.files import EXPORT_SIGNALS
from tests.support.export import char_device, fill
from tests.support.spawned import executable, run_agent_memory, server_env


def big(svc) -> None:
    """About 2.7 MB of export: more than one write chunk plus a pipe's buffer."""
    for n in range(3):
        svc.store({"content": f"memory {n} " + "x" * 900_000, "type": "TODO"})


def export_to(db_path, target) -> subprocess.CompletedProcess:
    return run_agent_memory("--db", str(db_path), "export", "--output", str(target))


def temp_files(directory) -> list[str]:
    return [name for name in os.listdir(directory) if "export-tmp" in name]


def test_export_into_a_fifo_streams_through_it(service, clock, db_path, tmp_path):
    fill(service, clock)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    proc = export_to(db_path, fifo)
    reader.join(timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert [json.loads(line)["record"] for line in got[0].splitlines()] == ["header"] + [
        "memory"
    ] * 3 + ["link"] * 3
    assert temp_files(tmp_path) == []


def test_export_into_a_character_device_writes_into_it(service, clock, db_path, tmp_path):
    fill(service, clock)
    null = char_device(tmp_path, "null")
    before = null.stat()
    proc = export_to(db_path, null)
    assert proc.returncode == 0, proc.stderr
    after = null.lstat()
    assert stat.S_ISCHR(after.st_mode)
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert temp_files(null.parent) == []


@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-file", "dangling"])
def test_a_symbolic_link_as_output_is_refused_untouched(service, db_path, tmp_path, dangling):
    victim = tmp_path / "victim.jsonl"
    if not dangling:
        victim.write_text("not an export\n")
    link = tmp_path / "out.jsonl"
    link.symlink_to(victim)
    proc = export_to(db_path, link)
    assert proc.returncode == 1
    assert proc.stderr == (
        f"refusing to replace {link}: it is a symbolic link; give the path of the file itself\n"
    )
    assert link.is_symlink() and link.readlink() == victim
    assert victim.read_text() == "not an export\n" if not dangling else not victim.exists()
    assert temp_files(tmp_path) == []


def test_a_directory_as_output_is_refused_untouched(service, db_path, tmp_path):
    directory = tmp_path / "dir"
    directory.mkdir()
    proc = export_to(db_path, directory)
    assert proc.returncode == 2
    assert "is a directory" in proc.stderr
    assert directory.is_dir() and os.listdir(directory) == []


def test_sigterm_while_blocked_on_a_fifo_dies_of_it_promptly(service, db_path, tmp_path):
    big(service)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [executable(), "--db", str(db_path), "export", "--output", str(fifo)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=server_env(),
    )
    first: list[bytes] = []

    def read_one_line_then_signal() -> None:
        with fifo.open("rb") as reader:
            first.append(reader.readline())  # the writer is now blocked on the full pipe
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)

    reader = threading.Thread(target=read_one_line_then_signal, daemon=True)
    reader.start()
    assert proc.wait(timeout=60) == -signal.SIGTERM
    reader.join(timeout=60)
    assert json.loads(first[0])["record"] == "header"
    assert b"Traceback" not in proc.stderr.read()
    assert temp_files(tmp_path) == []


# Runs the real CLI, but the export stops after its header and first memory (the temp file
# exists, a part of it is written) and waits in a blocking read for the test's signal.
PAUSED_EXPORT = """
import os, sys
from agent_memory.cli import main as cli
from agent_memory.transfer import jsonl
ready, hold = int(sys.argv[1]), int(sys.argv[2])
real, calls = jsonl.line, []
def line(record):
    calls.append(record)
    if len(calls) == 2:
        os.write(ready, b"x")
        os.read(hold, 1)
    return real(record)
jsonl.line = line
sys.argv = ["agent-memory", *sys.argv[3:]]
cli.main()
"""


@contextmanager
def paused_export(
    db_path: Path, target: Path, ignored: tuple[int, ...] = ()
) -> Iterator[tuple[subprocess.Popen, int]]:
    """The real CLI exporting to ``target``, paused mid-export; yields the process and the fd
    whose write lets it go on. It starts with a terminal's signal dispositions (the default),
    not those this test process may have inherited (`nohup` ignores SIGHUP, a background
    job SIGINT), except ``ignored``, which it starts ignoring."""

    def dispositions() -> None:
        for signum in EXPORT_SIGNALS:
            signal.signal(signum, signal.SIG_IGN if signum in ignored else signal.SIG_DFL)

    ready_r, ready_w = os.pipe()
    hold_r, hold_w = os.pipe()
    cli_args = ["--db", str(db_path), "export", "--output", str(target)]
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSED_EXPORT, str(ready_w), str(hold_r), *cli_args],
        pass_fds=(ready_w, hold_r),
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=server_env(),
        preexec_fn=dispositions,
    )
    os.close(ready_w)
    os.close(hold_r)
    try:
        assert os.read(ready_r, 1) == b"x"  # paused mid-export
        assert temp_files(target.parent) == [f"{target.name}.export-tmp-{proc.pid}"]
        yield proc, hold_w
    finally:
        os.close(ready_r)
        os.close(hold_w)
        proc.kill()
        proc.wait()


@pytest.fixture
def under_nohup():
    """This test process as `nohup pytest ... &` leaves it: SIGHUP and SIGINT ignored."""
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGHUP, signal.SIGINT)}
    yield
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def signal_removes_the_temp_file(db_path: Path, tmp_path: Path, signum: int) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("the previous export\n")
    with paused_export(db_path, target) as (proc, _hold):
        proc.send_signal(signum)
        assert proc.wait(timeout=60) == -signum  # the status a shell shows as 128+N
    assert b"Traceback" not in proc.stderr.read()
    assert target.read_text() == "the previous export\n"
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("signum", EXPORT_SIGNALS, ids=lambda s: s.name)
def test_a_signal_during_an_export_removes_the_temp_file(service, clock, db_path, tmp_path, signum):
    fill(service, clock)
    signal_removes_the_temp_file(db_path, tmp_path, signum)


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_the_signal_tests_hold_when_the_suite_runs_under_nohup(
    service, clock, db_path, tmp_path, signum, under_nohup
):
    """A child inherits ignored signals: the export under test must not (it would wait
    for its signal until the timeout)."""
    fill(service, clock)
    signal_removes_the_temp_file(db_path, tmp_path, signum)


def test_an_export_started_under_nohup_ignores_a_hangup(service, clock, db_path, tmp_path):
    """`nohup agent-memory export -o FILE` asks for the export to outlive the terminal: an
    inherited "ignore SIGHUP" stays, and the export completes."""
    fill(service, clock)
    target = tmp_path / "out.jsonl"
    with paused_export(db_path, target, ignored=(signal.SIGHUP,)) as (proc, hold):
        proc.send_signal(signal.SIGHUP)  # discarded at once: the child ignores it
        os.write(hold, b"x")
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    assert [json.loads(line)["record"] for line in target.read_text().splitlines()] == [
        "header",
        *["memory"] * 3,
        *["link"] * 3,
    ]
    assert temp_files(tmp_path) == []
