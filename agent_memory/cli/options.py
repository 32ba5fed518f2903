"""The click options of the settings table (agent_memory.settings): each row becomes one
option, with its flag, default, environment variable and help, so that no option is declared
twice."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from agent_memory import embedders
from agent_memory import settings as table
from agent_memory.app import Location
from agent_memory.cli.terminal import (
    Integer,
    parse_addr,
    parse_public_hosts,
    parse_workers,
)

# How each kind of value is read from the command line.
_TYPES: dict[str, Callable[[table.Option], dict[str, Any]]] = {
    table.TEXT: lambda option: {},
    table.INTEGER: lambda option: {"type": Integer(min=option.minimum)},
    table.CHOICE: lambda option: {"type": click.Choice(option.choices, case_sensitive=False)},
    table.LOCATION: lambda option: {"type": Location()},
    table.FLAG: lambda option: {"is_flag": True},
    table.ADDRESS: lambda option: {"callback": parse_addr},
    table.HOST: lambda option: {"callback": parse_public_hosts},
    table.WORKERS: lambda option: {"callback": parse_workers},
    table.EMBEDDER: lambda option: {"type": click.Choice(embedders.MODES, case_sensitive=False)},
}


def option(row: table.Option) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The click option of one row of the table."""
    shown = row.default is not None and row.kind != table.FLAG and not row.multiple
    return click.option(
        row.flag,
        row.name,
        default=row.default,
        envvar=row.env,
        show_envvar=row.env is not None,
        show_default=shown,
        metavar=row.metavar,
        multiple=row.multiple,
        help=row.help,
        **_TYPES[row.kind](row),
    )


def options(command: str | None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Every option of ``command`` (table.GLOBAL: the group's), in the table's order."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        for row in reversed(table.options_of(command)):
            function = option(row)(function)
        return function

    return decorate
