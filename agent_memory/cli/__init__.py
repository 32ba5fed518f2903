"""The agent-memory command: its options, the subcommands, and how they print."""
