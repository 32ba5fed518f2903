"""agent-memory: persistent, typed, local memory for AI agents."""

__version__ = "0.1.0"
# The distribution's name on the package index (the command is `agent-memory`); every
# install hint names it through this constant.
DISTRIBUTION = "typed-agent-memory"
