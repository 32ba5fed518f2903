"""What the terminal commands share: ASCII-only integer options, and the progress of a long
command (export, import, reembed) on stderr, for a person watching."""

from __future__ import annotations

import sys
from typing import Any

import click

from agent_memory import wire

PROGRESS_MIN_ROWS = 2_000


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
