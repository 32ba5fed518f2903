"""Start the real ``agent-memory serve-rest`` on a free port and talk HTTP to it."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import threading
from pathlib import Path

import requests

from tests.support.spawned import executable, server_env

START_TIMEOUT_SECS = 60
# A test's waits on the daemon's answers are bounded by this: an answer it owes comes long
# before it.
CLIENT_TIMEOUT_SECS = 10


class RestDaemon:
    def __init__(
        self,
        db_path: Path,
        *extra: str,
        addr: str = "127.0.0.1:0",
        log_level: str = "info",
        env: dict[str, str] | None = None,
        sigint_ignored: bool = False,
    ):
        self.proc = subprocess.Popen(
            [
                executable(),
                "--db",
                str(db_path),
                "--log-level",
                log_level,
                "serve-rest",
                "--addr",
                addr,
                *extra,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # On a hang, stop() sends SIGABRT and faulthandler prints every thread's stack.
            env=server_env(PYTHONFAULTHANDLER="1", **(env or {})),
            # as a shell script's `serve-rest &` starts it
            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
            if sigint_ignored
            else None,
        )
        self.stderr_lines: list[str] = []
        for line in self.proc.stderr:  # blocks until the daemon says where it listens
            self.stderr_lines.append(line)
            match = re.match(r"REST listening on (.+):(\d+)$", line.strip())
            if match:
                self.host, self.port = match.group(1), int(match.group(2))
                break
        else:
            raise AssertionError(
                "serve-rest exited before listening: " + "".join(self.stderr_lines)
            )
        self.url = f"http://{self.host}:{self.port}"
        self.session = requests.Session()
        self.signaled = False

    def terminate(self, signum: int = signal.SIGTERM) -> None:
        self.proc.send_signal(signum)
        self.signaled = True

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        return self.session.request(method, self.url + path, timeout=START_TIMEOUT_SECS, **kwargs)

    def drain_stderr(self) -> None:
        """Keep reading stderr in the background: a long run logs more than a pipe holds."""

        def drain() -> None:
            for line in self.proc.stderr:
                self.stderr_lines.append(line)

        threading.Thread(target=drain, daemon=True).start()

    def read_stderr_until(self, needle: str) -> str:
        for line in self.proc.stderr:
            self.stderr_lines.append(line)
            if needle in line:
                return line
        raise AssertionError(f"{needle!r} never appeared on stderr")

    def stop(self) -> int:
        self.session.close()
        if not self.signaled:
            self.terminate()
        try:
            code = self.proc.wait(timeout=START_TIMEOUT_SECS)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)
            self.proc.wait(timeout=START_TIMEOUT_SECS)
            stacks = "".join(self.stderr_lines) + self.proc.stderr.read()
            raise AssertionError(f"serve-rest did not exit; its threads:\n{stacks}") from None
        self.stderr_lines.extend(self.proc.stderr.readlines())
        return code

    def __enter__(self) -> RestDaemon:
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.stop()


def free_port() -> int:
    """A loopback port that was free a moment ago: for a daemon to be told to listen on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
