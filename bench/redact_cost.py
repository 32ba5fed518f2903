"""Redaction's time on adversarial texts: linear in the text, and near ordinary prose's.

    .venv/bin/python -m bench.redact_cost [--chars 4000] [--repeats 7]

Each unit of tests/support/redaction_set.py (a rule's literal start, repeated) is redacted at
CHARS and at four times CHARS characters, and prose of the larger length holding no secret
(ORDINARY) beside it. Each figure is the best of REPEATS runs in CPU time (another process on
the machine does not count). Four times the text should take about four times the time (a
pattern that rescans from every start takes sixteen), and an adversarial text no more than a
constant factor over prose of its length.
"""

from __future__ import annotations

import argparse
import time

from agent_memory.service.redact import redact
from bench._common import machine, table
from tests.support.redaction_set import ADVERSARIAL, ORDINARY


def cpu_seconds(texts: list[str], repeats: int) -> list[float]:
    """Each text's best redaction time of ``repeats``, measured in turns."""
    best = [float("inf")] * len(texts)
    for _ in range(repeats):
        for i, text in enumerate(texts):
            start = time.process_time()
            redact(text)
            best[i] = min(best[i], time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=4_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rows = []
    for unit in ADVERSARIAL:
        small, large = (unit * (n // len(unit)) + " x" for n in (args.chars, 4 * args.chars))
        ordinary = ORDINARY * (len(large) // len(ORDINARY) + 1)
        t_small, t_large, t_ordinary = cpu_seconds([small, large, ordinary], args.repeats)
        rows.append(
            [
                repr(unit),
                t_small * 1e3,
                t_large * 1e3,
                t_large / max(t_small, 1e-9),
                t_large / max(t_ordinary, 1e-9),
            ]
        )
    head = ["unit", f"{args.chars:,} chars ms", f"{4 * args.chars:,} chars ms"]
    print(table([*head, "x4 text: time x", "over prose x"], rows))
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
