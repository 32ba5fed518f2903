"""Cold start against the protocol floor: spawn to the first ``tools/list`` answer.

    .venv/bin/python -m bench.cold_start [--runs 12] [--size 1000]

The floor (bench/floors.py) and ``agent-memory serve`` (keyword mode, on a file of
``--size`` memories at the current schema, loaded as bench/run.py loads it) are started
alternately (A B, B A, ...) through the official MCP client, as bench/run.py measures them,
so that a loaded machine slows both alike. Prints the medians, the fastest runs and the
ratios to the floor.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import stdio_client

from bench import corpus
from bench._common import log, machine, table
from bench.run import AgentMemory, Floor, System


async def spawn_to_list(system: System) -> float:
    devnull = open(os.devnull, "w")  # noqa: SIM115
    start = time.perf_counter()
    async with Client(stdio_client(system.params(), errlog=devnull)) as client:
        await client.list_tools()
        return (time.perf_counter() - start) * 1e3


async def alternate(systems: list[System], runs: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {s.name: [] for s in systems}
    for i in range(runs):
        for system in systems if i % 2 == 0 else systems[::-1]:
            times[system.name].append(await spawn_to_list(system))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--size", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="am-cold-") as tmp:
        systems: list[System] = [Floor(Path(tmp)), AgentMemory(Path(tmp))]
        log(f"loading {args.size} memories")
        systems[1].load(list(corpus.developer_memories(args.size)))
        times = anyio.run(alternate, systems, args.runs)
    floor = times["floor"]
    rows = [
        [
            name,
            args.runs,
            statistics.median(t),
            min(t),
            statistics.median(t) / statistics.median(floor),
            min(t) / min(floor),
        ]
        for name, t in times.items()
    ]
    print(
        table(["server", "runs", "median ms", "fastest ms", "median/floor", "fastest/floor"], rows)
    )
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
