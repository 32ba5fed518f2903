"""``python -m agent_memory``: the agent-memory command (``ui`` starts ``serve-rest`` so)."""

from agent_memory.cli.main import main

main()
