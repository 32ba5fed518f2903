"""``agent-memory token``: the access tokens of the HTTP daemon (service.tokens), and the
OAuth grants they approved (service.oauth).

A token is printed once, when created; the database keeps only its hash. ``approve`` prints
a one-time code that signs in as a token on an MCP client's OAuth sign-in page; ``list``
shows each token's OAuth grants under it; ``revoke`` ends them with it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import click

from agent_memory.cli.command_support import answering, open_service, print_json
from agent_memory.cli.display import printable
from agent_memory.cli.terminal import quiet_below
from agent_memory.storage.base import CREATE, EXISTING


@click.group("token")
def token() -> None:
    """Access tokens for the HTTP daemon (REST, the page and MCP at /mcp)."""


@token.command("create")
@click.argument("name")
@click.option("--read-only", is_flag=True, help="The token may read, never write.")
@click.option("--scope", default=None, help="The token reads and writes only this scope.")
@click.option(
    "--expires", "days", type=int, default=None, metavar="DAYS", help="Expires after DAYS days."
)
@click.pass_obj
@quiet_below(logging.WARNING)
def create(settings: Any, name: str, read_only: bool, scope: str | None, days: int | None) -> None:
    """Create the token NAME and print it (only this once)."""
    from agent_memory.service.tokens import Tokens

    service = open_service(settings, CREATE)
    with answering(service):
        secret = Tokens(service).create(name, read_only=read_only, scope=scope, days=days)
    click.echo(secret)
    click.echo(
        f"token {name!r} created; it is shown only now. Clients send it as the header "
        "'Authorization: Bearer <token>', or sign in with it when they connect with OAuth.",
        err=True,
    )


@token.command("approve")
@click.argument("name")
@click.pass_obj
@quiet_below(logging.WARNING)
def approve(settings: Any, name: str) -> None:
    """Print a one-time code that signs in as the token NAME on an OAuth sign-in page."""
    from agent_memory.service.oauth import APPROVAL_SECS, OAuth

    service = open_service(settings, EXISTING)
    with answering(service):
        code = OAuth(service).approval(name)
    click.echo(code)
    click.echo(
        f"a one-time code for the token {name!r}, good for {APPROVAL_SECS // 60} minutes: type "
        "it on the sign-in page an MCP client opens, instead of the token.",
        err=True,
    )


@token.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
@quiet_below(logging.WARNING)
def list_tokens(settings: Any, as_json: bool) -> None:
    """The tokens: name, rights, scope, created, expires and last used (never the token),
    each with the OAuth grants it approved under it (their client, and where it answers)."""
    from agent_memory.service.oauth import OAuth
    from agent_memory.service.tokens import Tokens

    service = open_service(settings, EXISTING)
    with answering(service):
        rows = Tokens(service).list()
        grants = OAuth(service).grants()
    for row in rows:
        mine = [g for g in grants if g["token"] == row["name"]]
        row["oauth_grants"] = [{k: v for k, v in g.items() if k != "token"} for g in mine]
    if as_json:
        print_json(rows)
        return
    header = ("NAME", "RIGHTS", "SCOPE", "CREATED", "EXPIRES", "LAST USED")
    click.echo(_line(header))
    for row in rows:
        rights = "read" if row["read_only"] else "read-write"
        cells = [_when(row[k]) for k in ("created_at", "expires_at", "last_used_at")]
        scope = row["scope"] if row["scope"] is not None else "(all)"
        click.echo(_line((row["name"], rights, scope, *cells)))
        for grant in row["oauth_grants"]:  # the token's rights, through a client
            dates = [_when(grant[k]) for k in ("created_at", "expires_at", "last_used_at")]
            # what a client registered (anyone may): as text, never acting on the terminal
            client = printable(grant["client_name"] or grant["client_id"])
            where = printable(", ".join(grant["redirect_uris"]))
            name = f"  oauth {grant['id']}"
            click.echo(_line((name, rights, scope, *dates)) + f" {client} -> {where}")


@token.command("revoke")
@click.argument("name")
@click.pass_obj
@quiet_below(logging.WARNING)
def revoke(settings: Any, name: str) -> None:
    """Revoke the token NAME: refused from its next request on, no restart needed."""
    from agent_memory.service.tokens import Tokens

    service = open_service(settings, EXISTING)
    with answering(service):
        done = Tokens(service).revoke(name)
    if not done:
        raise click.ClickException(f"no token named {name!r}")
    click.echo(f"token {name!r} revoked", err=True)


@token.command("open-loopback")
@click.pass_obj
@quiet_below(logging.WARNING)
def open_loopback(settings: Any) -> None:
    """Let loopback daemons serve without a token again, once none exists.

    A database that has had a token keeps requiring one after the last is revoked; this
    undoes that, on purpose: every process on this machine that reaches the port then reads,
    changes and forgets every memory, with full rights."""
    from agent_memory.service.tokens import Tokens

    service = open_service(settings, EXISTING)
    with answering(service):
        remaining = Tokens(service).reopen()
    if remaining:
        them = "it" if len(remaining) == 1 else "them"
        raise click.ClickException(
            f"tokens exist ({', '.join(remaining)}): revoke {them} first; nothing was changed"
        )
    click.echo(
        "a daemon on loopback now serves every request without a token, with full rights: "
        "any process on this machine that reaches its port can read, change and forget every "
        "memory. `agent-memory token create NAME` requires tokens again.",
        err=True,
    )


def _when(seconds: int | None) -> str:
    return "-" if seconds is None else time.strftime("%Y-%m-%d %H:%M", time.gmtime(seconds))


def _line(cells: tuple[str, ...]) -> str:
    widths = (20, 10, 16, 17, 17)
    return " ".join(f"{cell:<{w}}" for cell, w in zip(cells, widths, strict=False)) + (
        f" {cells[-1]}" if len(cells) > len(widths) else ""
    )
