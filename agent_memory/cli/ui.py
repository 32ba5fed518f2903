"""``agent-memory ui``: this database's web page, in the browser.

The page is served by the REST daemon (``serve-rest``, see :mod:`transports.rest.web`). ``ui``
first asks ``--addr`` whether a daemon there serves this database, and believes only a proof
that needs read access to it: ``ui`` reads the database's id itself and sends a fresh
challenge that the daemon must answer with it (:mod:`contract.identity`; the id is never
sent). If the daemon proves it, ``ui`` prints the page's address, opens it and exits. If
nothing listens there, it starts ``serve-rest`` with the same global options at ``--addr``
and runs it in the foreground until Ctrl-C (or SIGTERM), like any server started from a
terminal. If something else listens there (a daemon of another database, any other
program), an ``--addr`` given on the command line is refused with the reason; the default
address gives way to a free port.

Its imports wait for the command: every other command loads this module with cli.py.

The address goes to stdout, alone on its line, for scripts; everything else to stderr. The
browser is opened only when there is one to open (a display, macOS, Windows, or $BROWSER),
so ``ui`` on a server or in a test never waits on a text-mode browser.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
from typing import Any

import click
from click.core import ParameterSource

from agent_memory.cli.terminal import GIVEN_AFTER, PAGE_ASKS_FOR_A_TOKEN, Subcommand
from agent_memory.settings import OPTIONS

DEFAULT_ADDR = OPTIONS["addr"].default  # serve-rest's
# A daemon answers /health in milliseconds; a program that accepts the connection and never
# answers is not one, and ui then starts its own elsewhere.
PROBE_TIMEOUT_SECS = 2.0
LISTENING = re.compile(r"REST listening on (\S+):(\d+)$")
FREE, OURS, OTHER = "free", "ours", "other"
# How much of an answer to /health is read.
MAX_HEALTH_BYTES = 64 * 1024


def _parse_addr(ctx: click.Context, param: click.Parameter, text: str) -> tuple[str, int]:
    from agent_memory.cli.terminal import parse_addr

    return parse_addr(ctx, param, text)


@click.command("ui", cls=Subcommand)
@click.option(
    "--addr",
    default=DEFAULT_ADDR,
    show_default=True,
    metavar="HOST:PORT",
    callback=_parse_addr,
    help="Where to look for the daemon, and to start it when nothing listens there "
    "(loopback only; port 0: always start one on a free port). When something else "
    "listens there, ui stops; without --addr it starts on a free port instead.",
)
@click.option(
    "--browser/--no-browser",
    default=True,
    show_default=True,
    help="Open the page in the browser, when there is one.",
)
@click.pass_context
def ui(ctx: click.Context, addr: tuple[str, int], browser: bool) -> None:
    """Open the web page of this database: browse, search, edit, link and forget memories.

    Uses the REST daemon already serving this database at --addr, or starts one (in the
    foreground: Ctrl-C stops it).
    """
    from agent_memory.app import fail
    from agent_memory.cli.terminal import is_loopback

    host, port = addr
    if not is_loopback(host):
        fail(f"ui serves the page on a loopback address only (got {host}); use serve-rest")
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    found = probe(host, port, database_key(ctx.obj.db)) if port else OTHER
    if found == OURS:
        url = page_url(host, port)
        click.echo(f"the daemon at {shown} serves this database", err=True)
        if asks_for_a_token(host, port):
            click.echo(PAGE_ASKS_FOR_A_TOKEN, err=True)
        click.echo(url)
        if browser:
            open_browser(url)
        return
    if found == OTHER and port:
        if ctx.get_parameter_source("addr") is not ParameterSource.DEFAULT:
            fail(
                f"{shown} is in use by a program that does not prove it serves this database "
                "(a daemon of another database, or something else): ui will not send you "
                "there. Stop it, or pass another --addr (port 0: any free port)"
            )
        click.echo(
            f"{shown} is in use by something that does not serve this database: "
            "starting on a free port",
            err=True,
        )
    sys.exit(serve(ctx, host, port if found == FREE else 0, browser))


def database_key(location: Any) -> bytes | None:
    """This database's identity key, read from it; None when there is no database there
    yet (no daemon is trusted then). One that cannot be read stops ui with the reason, as
    the daemon it would start would stop."""
    from agent_memory import storage
    from agent_memory.app import fail
    from agent_memory.contract.errors import DatabaseOpenError

    try:
        return storage.database_key(location)
    except DatabaseOpenError as exc:
        fail(str(exc))  # exits
        return None


def probe(host: str, port: int, key: bytes | None) -> str:
    """OURS when the daemon at host:port proves it serves the database whose identity key
    is ``key``, FREE when nothing listens there, OTHER for anything else (a daemon of
    another database, another program, no answer; anything at all when ``key`` is None)."""
    import http.client
    import json

    from agent_memory.contract import identity

    challenge = identity.challenge()
    connection = http.client.HTTPConnection(host, port, timeout=PROBE_TIMEOUT_SECS)
    try:
        connection.request(
            "GET", f"/health?challenge={challenge}", headers={"Accept": "application/json"}
        )
        reached = connection.sock.getpeername()  # the IP and port the answer comes from
        response = connection.getresponse()
        health = json.loads(response.read(MAX_HEALTH_BYTES))
    except ConnectionRefusedError:
        return FREE
    except (OSError, http.client.HTTPException, ValueError):
        return OTHER
    finally:
        connection.close()
    if key is None or response.status != 200 or not isinstance(health, dict):
        return OTHER
    expected = identity.proof(key, challenge, f"{reached[0]}:{reached[1]}")
    return OURS if identity.same(expected, health.get("database_proof")) else OTHER


def asks_for_a_token(host: str, port: int) -> bool:
    """Whether the daemon at host:port wants a token of the page: it answers the page's first
    question (who am I, GET /api/session) without one by 401. (A daemon ui starts says so
    itself, as serve-rest does.)"""
    import http.client

    connection = http.client.HTTPConnection(host, port, timeout=PROBE_TIMEOUT_SECS)
    try:
        connection.request("GET", "/api/session", headers={"Accept": "application/json"})
        return connection.getresponse().status == 401
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def page_url(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"


def has_browser() -> bool:
    """Whether opening a browser can show the page to someone (and cannot take over the
    terminal, as a text-mode browser found on a headless machine would)."""
    if os.environ.get("BROWSER"):
        return True
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def open_browser(url: str) -> None:
    import webbrowser

    if not has_browser():
        click.echo("no browser to open here: visit the address above", err=True)
    elif not webbrowser.open(url):
        click.echo("could not open a browser: visit the address above", err=True)


def global_args(ctx: click.Context) -> list[str]:
    """The global options given on this command line, before ``ui`` or after it (those
    win), to start ``serve-rest`` as this ``ui`` was started (values from the environment
    reach the child through it)."""
    root = ctx.find_root()
    given = {
        name: value
        for name, value in root.params.items()
        if root.get_parameter_source(name) is ParameterSource.COMMANDLINE
    }
    given.update(ctx.meta.get(GIVEN_AFTER, {}))
    args: list[str] = []
    for param in root.command.params:
        if not isinstance(param, click.Option) or param.name not in given:
            continue
        value: Any = given[param.name]
        if param.is_flag:
            flag = param.opts[0] if value else next(iter(param.secondary_opts), None)
            args += [flag] if flag else []
        else:
            for item in value if param.multiple else [value]:
                args += [param.opts[0], str(item)]
    return args


def serve(ctx: click.Context, host: str, port: int, browser: bool) -> int:
    """Run ``serve-rest`` at host:port until it stops; its exit status."""
    import subprocess

    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    command = [sys.executable, "-m", "agent_memory", *global_args(ctx), "serve-rest"]
    # Its own session: Ctrl-C reaches ui alone, which passes it on once (a second SIGINT
    # while the daemon finishes its requests would cut them short).
    child = subprocess.Popen(
        [*command, "--addr", shown],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert child.stderr is not None
    previous = {
        signum: signal.signal(signum, lambda signum, _frame: child.send_signal(signum))
        for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        for line in child.stderr:
            sys.stderr.write(line)
            match = LISTENING.match(line.strip())
            if match:
                bound_host, bound_port = match.group(1).strip("[]"), int(match.group(2))
                break
        else:
            return child.wait() or 1
        threading.Thread(target=_relay, args=(child.stderr,), daemon=True).start()
        url = page_url(bound_host, bound_port)
        click.echo(url)
        click.echo("serving the page until Ctrl-C", err=True)
        if browser:
            threading.Thread(target=open_browser, args=(url,), daemon=True).start()
        return child.wait()
    finally:
        if child.poll() is None:
            child.terminate()
            child.wait()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _relay(stream: Any) -> None:
    for line in stream:
        sys.stderr.write(line)
