"""Export and import rates, and peak RSS of each, at a large size.

    .venv/bin/python -m bench.bench_portable [--size 100000] [--shuffled-times] [--json out.json]

Writes a seeded JSONL v1 file of SIZE memories (bench/corpus.py texts) and SIZE/10 links,
their created_at ascending with the key over the last ~4 months, as in an export (keys are
ids, which a database gives out in the order it stores); --shuffled-times draws each
created_at at random instead, the worst case for the indexes on it. Then it times, each in
a fresh process of its own: ``agent-memory import --from jsonl`` into an empty database,
and ``agent-memory export --output`` of that database. Peak RSS is the process's own
(ru_maxrss), so each figure belongs to one command.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agent_memory.contract import fields
from agent_memory.transfer import jsonl
from bench import corpus
from bench._common import export_header

RUN = (
    "import resource, sys\n"
    "from agent_memory.cli.main import cli\n"
    "try:\n"
    "    cli(sys.argv[1:], prog_name='agent-memory')\n"
    "except SystemExit as exc:\n"
    "    code = exc.code\n"
    "print('peak_rss_kib', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
)


SPAN_SECS = 10**7  # created_at spread over the ~116 days before now


def write_file(path: Path, size: int, shuffled_times: bool = False) -> None:
    rng = random.Random(3)
    links = size // 10
    with path.open("w", encoding="utf-8") as out:
        out.write(export_header(size, links))
        now = int(time.time())
        initial = {f.name: f.initial for f in fields.exported()}  # what a field not set holds
        for key, memory in enumerate(corpus.memories(size), start=1):
            created_at = (
                now - rng.randint(0, SPAN_SECS)
                if shuffled_times
                else now - SPAN_SECS + key * SPAN_SECS // size
            )
            row = initial | {
                "id": key,
                "type": memory["type"],
                "content": memory["content"],
                "tags": memory["tags"],
                "source": "bench",
                "scope": memory["scope"],
                "created_at": created_at,
                "last_accessed": now,
                "access_count": rng.randint(0, 9),
                "expires_at": None,
            }
            out.write(jsonl.line(jsonl.memory(row)))
        seen = set()
        while len(seen) < links:
            a, b = rng.randint(1, size), rng.randint(1, size)
            if a != b and (a, b) not in seen:
                seen.add((a, b))
        for a, b in sorted(seen):
            out.write(jsonl.line(jsonl.link(a, b, "caused_by", now)))


def timed_command(*args: str) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", RUN, *args], capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    rss = int(done.stderr.rsplit("peak_rss_kib", 1)[1].split()[0])
    return elapsed, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--shuffled-times", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        source = work / "in.jsonl"
        write_file(source, args.size, args.shuffled_times)
        db = work / "memory.db"
        import_s, import_rss = timed_command(
            "--db", str(db), "import", "--from", "jsonl", str(source)
        )
        export_s, export_rss = timed_command(
            "--db", str(db), "export", "--output", str(work / "out.jsonl")
        )
        result = {
            "size": args.size,
            "created_at": "shuffled" if args.shuffled_times else "ascending with the key",
            "file_mb": source.stat().st_size / 1e6,
            "import_s": import_s,
            "import_rows_per_s": args.size / import_s,
            "import_peak_rss_mib": import_rss / 1024,
            "export_s": export_s,
            "export_rows_per_s": args.size / export_s,
            "export_peak_rss_mib": export_rss / 1024,
        }
    print(f"| figure | {args.size:,} memories |")
    print("|---|---:|")
    for key, value in result.items():
        if isinstance(value, float):
            print(f"| {key} | {value:.2f} |")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
