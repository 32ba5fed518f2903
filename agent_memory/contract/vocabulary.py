"""The contract's vocabulary and bounds: what the service enforces and the transports state.

Free of heavy imports on purpose: ``serve`` lists its tools from these before SQLAlchemy is
loaded (see cli.serve). A memory's own fields and their bounds are agent_memory.contract.fields'.
"""

from agent_memory.contract import fields

MEMORY_TYPES = fields.MEMORY_TYPES
# Pinned types fade six times slower and carry double base weight.
PINNED_TYPES = frozenset({"DECISION", "ARCHITECTURE", "CONSTRAINT"})
LINK_KINDS = ("relates_to", "supersedes", "caused_by")
# How a relation reads from its to_id's side, in a memory's related list.
INVERSE_KIND = {"relates_to": "relates_to", "supersedes": "superseded_by", "caused_by": "caused"}

# The arguments each operation takes, in the order the MCP tools list them; any other
# argument is refused (an agent that misspells ``tags`` must learn it, not get a memory
# without tags). REST's update takes the id from its path. What store and update take of a
# memory's fields is the fields table's.
ARGUMENTS: dict[str, tuple[str, ...]] = {
    "store": (*fields.argument_names("store"), "supersedes"),
    "search": (
        "query",
        "type",
        "tag",
        "scope",
        "by",
        "limit",
        "expand_links",
        "explain",
        "include_superseded",
        "as_of",
        "max_chars",
    ),
    "list": (
        *("type", "tag", "scope", "by", "limit", "before", "expand_links"),
        *("include_superseded", "as_of"),
    ),
    "update": ("id", *fields.argument_names("update")),
    "link": ("from_id", "to_id", "kind"),
    "unlink": ("from_id", "to_id", "kind"),
    "forget": ("id",),
    "get": ("id", "as_of"),
    "history": ("id",),
    "stats": (),
}
# What a REST search takes besides: ``record_use: false`` answers without recording the use
# of the results (the web page's searches: a person browsing is not an agent using a
# memory). The MCP tool does not take it: an agent's search is a use.
REST_ARGUMENTS: dict[str, tuple[str, ...]] = {"search": (*ARGUMENTS["search"], "record_use")}

# SQLite's INTEGER: a signed 64-bit value. Ids, counts and timestamps beyond it cannot be
# stored (an overflowing sum in SQL turns into a REAL).
SQLITE_INT_MIN, SQLITE_INT_MAX = -(2**63), 2**63 - 1

MAX_LIMIT = 200
# memory_store's supersedes names at most this many older memories.
MAX_SUPERSEDES = 50
DEFAULT_SEARCH_LIMIT = 50
# A page's budget in characters (memory_search's max_chars, the session brief's --max-chars):
# at least enough for one short memory, at most far past any page of MAX_LIMIT memories an
# agent would read.
MIN_MAX_CHARS = 400
MAX_MAX_CHARS = 10_000_000
MAX_TTL_SECS = fields.MAX_TTL_SECS
# Characters of a related memory's content shown by expand_links.
SNIPPET_CHARS = 160
# Neighbours attached to each result by expand_links, most recent relations first.
MAX_EXPANDED_LINKS = 10


def count(number: int, noun: str) -> str:
    """A count and its noun, plural unless the count is 1: 1 link, 2 links, 1 memory, 3
    memories. Every count a command prints is written with it."""
    if number == 1:
        return f"{number} {noun}"
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return f"{number} {noun[:-1]}ies"
    return f"{number} {noun}s"
