"""The contract's vocabulary and bounds: what the service enforces and the transports state.

Free of heavy imports on purpose: ``serve`` lists its tools from these before SQLAlchemy is
loaded (see cli.serve).
"""

MEMORY_TYPES = ("DECISION", "PATTERN", "ERROR", "TODO", "ARCHITECTURE", "CONSTRAINT")
# Pinned types fade six times slower and carry double base weight.
PINNED_TYPES = frozenset({"DECISION", "ARCHITECTURE", "CONSTRAINT"})
LINK_KINDS = ("relates_to", "supersedes", "caused_by")
# How a relation reads from its to_id's side.
INVERSE_KIND = {"relates_to": "relates_to", "supersedes": "superseded_by", "caused_by": "caused"}

# SQLite's INTEGER: a signed 64-bit value. Ids, counts and timestamps beyond it cannot be
# stored (an overflowing sum in SQL turns into a REAL).
SQLITE_INT_MIN, SQLITE_INT_MAX = -(2**63), 2**63 - 1

MAX_LIMIT = 200
DEFAULT_SEARCH_LIMIT = 50
MAX_TTL_SECS = 3_155_760_000  # about 100 years
# Characters of a related memory's content shown by expand_links.
SNIPPET_CHARS = 160
# Neighbours attached to each result by expand_links, most recent relations first.
MAX_EXPANDED_LINKS = 10
