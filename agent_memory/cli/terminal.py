"""What the terminal commands share: ASCII-only integer options, an address option, the
progress of a long command (export, import, reembed) on stderr, for a person watching, and
their quiet logging."""

from __future__ import annotations

import functools
import ipaddress
import logging
import re
import sys
from collections.abc import Callable
from typing import Any

import click
from click.core import ParameterSource

from agent_memory import app as wiring
from agent_memory.contract import wire

PROGRESS_MIN_ROWS = 2_000
# serve-rest --workers: at most this many processes (each holds its own embedder and index).
MAX_WORKERS = 64
# What serve-rest and ui say when the daemon requires a token: the page will ask for one.
PAGE_ASKS_FOR_A_TOKEN = (
    "the page asks for a token: `agent-memory token create NAME` makes one "
    "(`--read-only`, `--scope S` to give less)"
)


class Integer(click.IntRange):
    """click's IntRange, of ASCII digits only: int() also reads "２" (fullwidth) as 2."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if not wire.INTEGER.fullmatch(text) or not isinstance(wire.integer(text), int):
                shown = repr(value) if len(value) <= 40 else f"a value of {len(value)} characters"
                digits = wire.MAX_INTEGER_DIGITS
                self.fail(f"{shown} is not an integer (at most {digits} ASCII digits)", param, ctx)
        return super().convert(value, param, ctx)


def quiet_below(level: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A command that logs only from ``level`` up unless --log-level (or AGENT_MEMORY_LOG)
    says otherwise: a person reads the command's answer, not the log."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            logger, ctx = logging.getLogger(), click.get_current_context()
            before = logger.level
            source = ctx.find_root().get_parameter_source("log_level")
            given_after = ctx.meta.get(GIVEN_AFTER, {})
            if source in (None, ParameterSource.DEFAULT) and "log_level" not in given_after:
                logger.setLevel(level)
            try:
                return command(*args, **kwargs)
            finally:
                logger.setLevel(before)  # for whoever called it in this process (tests)

        return run

    return decorate


# The memory commands and the brief: errors only (an agent hook's stderr is shown to people).
quiet = quiet_below(logging.ERROR)


class Progress:
    """A progress bar on stderr, only when a person watches (a terminal) and the job is big.

    Nothing at all is written when stderr is not a terminal or the total is under
    ``minimum``, so logs and pipes stay clean.
    """

    def __init__(self, label: str, minimum: int = PROGRESS_MIN_ROWS) -> None:
        self.label = label
        self.minimum = minimum
        self._bar = None

    def at(self, done: int, total: int) -> None:
        if self._bar is None:
            if total < self.minimum or not sys.stderr.isatty():
                return
            self._bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self._bar.__enter__()
        self._bar.length = total
        self._bar.update(done - self._bar.pos)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


def parse_addr(_ctx: click.Context, _param: click.Parameter, text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[IPV6]:PORT`` -> (host, port); a usage error otherwise."""
    match = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\]:([0-9]{1,5})|([^:\[\]]+):([0-9]{1,5})", text)
    port = int(match.group(2) or match.group(4)) if match else -1
    if not match or port > 65535:
        raise click.BadParameter(f"expected HOST:PORT or [IPV6]:PORT (got {text!r})")
    return match.group(1) or match.group(3), port


def parse_public_hosts(
    _ctx: click.Context, _param: click.Parameter, names: tuple[str, ...]
) -> tuple[str, ...]:
    """Each ``NAME[:PORT]`` (a host name, an IPv4 address or ``[IPV6]``), as given; a usage
    error for anything else, a URL first of all: the proxy serves the name over https, which
    the daemon says for it (its OAuth issuer is ``https://NAME``)."""
    for name in names:
        match = re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::([0-9]{1,5}))?", name)
        if not match or int(match.group(2) or 0) > 65535:
            raise click.BadParameter(
                f"expected NAME[:PORT], the name a proxy is reached by, not a URL (got {name!r})"
            )
    return names


def parse_workers(_ctx: click.Context, _param: click.Parameter, text: str) -> int:
    """``N`` (1 to MAX_WORKERS) or ``auto`` (one per core) -> N; a usage error otherwise."""
    if text.strip().lower() == "auto":
        from agent_memory.http.workers import cores

        return cores()
    if not re.fullmatch(r"[0-9]{1,3}", text.strip()) or not 1 <= int(text) <= MAX_WORKERS:
        raise click.BadParameter(f"expected 1 to {MAX_WORKERS} or auto (got {text!r})")
    return int(text)


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # any other name may resolve anywhere


# ctx.meta key: the global options given after the subcommand's name, by name.
GIVEN_AFTER = "agent_memory.given_after"


class Subcommand(click.Command):
    """A subcommand that takes the global options after its name too: `serve --db x.db`
    is how MCP client configs are written. The options are the group's own (one definition
    each); a value given after the subcommand wins over one given before it."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        help_option = self.get_help_option(ctx)
        own = [p for p in super().get_params(ctx) if p is not help_option]
        shared = _global_options(ctx, {p.name for p in own})
        return [*own, *shared, *([help_option] if help_option else [])]

    def invoke(self, ctx: click.Context) -> Any:
        given = {}
        for option in _global_options(ctx, {p.name for p in self.params}):
            value = ctx.params.pop(option.name)
            if ctx.get_parameter_source(option.name) is ParameterSource.COMMANDLINE:
                given[option.name] = value
        if given and ctx.parent is not None:
            ctx.obj = wiring.settings({**ctx.parent.params, **given})
        ctx.meta[GIVEN_AFTER] = given  # for `ui`, which starts serve-rest with them
        return super().invoke(ctx)


def _global_options(ctx: click.Context, taken: set[Any]) -> list[click.Option]:
    """The group's options a subcommand accepts as well (not --version, not its own)."""
    group = ctx.parent.command if ctx.parent is not None else None
    if group is None:
        return []
    return [
        p
        for p in group.params
        if isinstance(p, click.Option) and p.expose_value and p.name not in taken
    ]
