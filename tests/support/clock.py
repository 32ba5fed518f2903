"""A clock the tests move by hand: decay, TTL and sweeps without waiting."""

from __future__ import annotations

START = 1_767_225_600  # 2026-01-01T00:00:00Z


class Clock:
    def __init__(self, now: int = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return float(self.now)

    def advance(self, seconds: int) -> None:
        self.now += seconds
