"""How long `agent-memory context` takes, against `agent-memory --version`, at N memories.

    .venv/bin/python -m bench.context_timing [--count 10000] [--runs 40] [--json out.json]

Fills a temporary database through the service with COUNT memories of the bench corpus
(a third each in the scopes kore-runtime and billing and global, all six types, one
minute apart, every tenth ERROR linked to the memory before it), then times the real
executable: `--version` (the floor: Python, click and the command's own imports), the
brief of one scope (what a session-start hook runs), and the brief ranked by a query (the
search pipeline, keyword mode: the Ollama URL points at a closed port). With hyperfine on
the PATH it runs each under hyperfine (--warmup 3, --runs RUNS, --shell=none); otherwise it
times them itself. Prints mean, median and min wall time per command, each one's median
minus the floor's, and the CPU time (user + system, mean): on a machine shared with other
work the wall times swell with the load, the CPU times much less.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from bench._common import agent_memory_cmd, clean_env
from bench.corpus import memories

START = 1_767_225_600
CLOSED_PORT_URL = "http://127.0.0.1:9"


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return float(self.now)


def fill(db: Path, count: int) -> None:
    clock = Clock()
    service = MemoryService(open_store(db), clock=clock)
    try:
        previous = None
        for i, memory in enumerate(memories(count)):
            clock.now += 60
            stored = service.store(memory)["id"]
            if memory["type"] == "ERROR" and previous is not None and i % 10 == 0:
                service.link({"from_id": stored, "to_id": previous, "kind": "caused_by"})
            previous = stored
    finally:
        service.close()


def with_hyperfine(commands: dict[str, list[str]], runs: int, env: dict[str, str]) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            [
                "hyperfine",
                "--warmup",
                "3",
                "--runs",
                str(runs),
                "--shell=none",
                "--export-json",
                out.name,
                *[" ".join(argv) for argv in commands.values()],
            ],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        results = json.loads(Path(out.name).read_text())["results"]
    return {
        name: (r["times"], r["user"] + r["system"])
        for name, r in zip(commands, results, strict=True)
    }


def by_hand(commands: dict[str, list[str]], runs: int, env: dict[str, str]) -> dict:
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, float] = dict.fromkeys(commands, 0.0)
    for round_ in range(runs + 3):
        for name, argv in commands.items():
            before = os.times()
            started = time.perf_counter()
            subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)
            after = os.times()
            if round_ >= 3:  # warm-up rounds
                times[name].append(time.perf_counter() - started)
                cpu[name] += (after.children_user - before.children_user) + (
                    after.children_system - before.children_system
                )
    return {name: (times[name], cpu[name] / runs) for name in commands}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    env = clean_env(AGENT_MEMORY_OLLAMA_URL=CLOSED_PORT_URL)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.db"
        fill(db, options.count)
        exe = agent_memory_cmd()
        commands = {
            "--version": [exe, "--version"],
            "context": [exe, "--db", str(db), "context", "--scope", "kore-runtime"],
            "context --query": [
                exe,
                "--db",
                str(db),
                "context",
                "--scope",
                "kore-runtime",
                "--query",
                "retry",
            ],
        }
        brief = subprocess.run(commands["context"], env=env, capture_output=True, text=True)
        timer = with_hyperfine if shutil.which("hyperfine") else by_hand
        times = timer(commands, options.runs, env)
    floor = statistics.median(times["--version"][0])
    report = {
        "count": options.count,
        "runs": options.runs,
        "timer": timer.__name__,
        "brief_chars": len(brief.stdout),
        "commands": {
            name: {
                "mean_ms": round(1000 * statistics.mean(t), 1),
                "median_ms": round(1000 * statistics.median(t), 1),
                "min_ms": round(1000 * min(t), 1),
                "median_over_version_ms": round(1000 * (statistics.median(t) - floor), 1),
                "cpu_ms": round(1000 * cpu, 1),
            }
            for name, (t, cpu) in times.items()
        },
    }
    print(f"{options.count} memories, {options.runs} runs ({timer.__name__})")
    print(f"{'command':<18}{'mean':>9}{'median':>9}{'min':>9}{'over --version':>16}{'cpu':>9}")
    for name, r in report["commands"].items():
        print(
            f"{name:<18}{r['mean_ms']:>7.1f}ms{r['median_ms']:>7.1f}ms{r['min_ms']:>7.1f}ms"
            f"{r['median_over_version_ms']:>14.1f}ms{r['cpu_ms']:>7.1f}ms"
        )
    if options.json:
        options.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
