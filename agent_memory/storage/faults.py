"""Engine exceptions turned into StorageFault at the store's edge, for both backends.

The service and the transports know only StorageFault (its detail goes to the log); each
backend names the exceptions its driver raises and wraps its public methods with the guard.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from agent_memory.contract.errors import StorageFault

F = TypeVar("F", bound=Callable[..., Any])
# An engine's message may quote what it refused (a word, a parameter, the memory itself in
# PostgreSQL's CONTEXT line): the log keeps this many characters of it.
MAX_DETAIL_CHARS = 500


def detail_of(exc: BaseException) -> str:
    """The engine's text for the log (the driver's own, not the SQL wrapper's), cut short."""
    text = str(getattr(exc, "orig", None) or exc)
    return text if len(text) <= MAX_DETAIL_CHARS else text[:MAX_DETAIL_CHARS] + "…"


def guard(engine_errors: tuple[type[BaseException], ...]) -> Callable[[F], F]:
    """A decorator: the method with ``engine_errors`` raised as StorageFault (generators too,
    whose errors surface while they are iterated)."""

    @contextmanager
    def faults() -> Iterator[None]:
        try:
            yield
        except engine_errors as exc:
            raise StorageFault(detail_of(exc)) from exc

    def guarded(method: F) -> F:
        if inspect.isgeneratorfunction(method):

            @functools.wraps(method)
            def generator(*args: Any, **kwargs: Any) -> Any:
                with faults():
                    return (yield from method(*args, **kwargs))

            return generator  # type: ignore[return-value]

        @functools.wraps(method)
        def plain(*args: Any, **kwargs: Any) -> Any:
            with faults():
                return method(*args, **kwargs)

        return plain  # type: ignore[return-value]

    return guarded


def guarded(method: F) -> F:
    """As guard, for a method written once for every engine: the exceptions are those the
    store's class names in its ENGINE_ERRORS."""

    @functools.wraps(method)
    def plain(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except self.ENGINE_ERRORS as exc:
            raise StorageFault(detail_of(exc)) from exc

    return plain  # type: ignore[return-value]
