"""The ``agent-memory`` command with another fusion: how a bench measures a fusion over MCP.

    python -m bench.fusion_serve FUSION [agent-memory arguments ...]

The product ranks with ``ranking.FUSION`` and reads no setting to change it: a measurement
sets the module's constant here, in the spawned process, then runs the command line as the
console script would (bench/retrieval.py spawns ``serve`` this way for every mode but the
default).
"""

from __future__ import annotations

import sys

from agent_memory import ranking
from agent_memory.cli.main import main as cli_main


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in ranking.FUSIONS:
        names = ", ".join(ranking.FUSIONS)
        sys.exit(f"usage: python -m bench.fusion_serve FUSION [ARGS...]; FUSION is one of {names}")
    ranking.FUSION = args[0]
    sys.argv = ["agent-memory", *args[1:]]
    cli_main()


if __name__ == "__main__":
    main()
