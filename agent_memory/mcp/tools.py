"""The eight MCP tools as clients see them: names, titles, descriptions and annotations;
their input and output schemas are agent_memory.contract.schemas'. Declarations only (no service, no
engine): ``serve`` lists them before SQLAlchemy is loaded.
"""

from __future__ import annotations

from mcp.types import Tool, ToolAnnotations

from agent_memory.contract.schemas import INPUT, OUTPUT


def _tool(
    name: str,
    title: str,
    description: str,
    *,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
) -> Tool:
    """A tool with its title in both places clients look, its schemas (those of the
    operation it names: memory_store, store), and its hints: every one is closed-world
    (one local file, nothing else)."""
    operation = name.removeprefix("memory_")
    return Tool(
        name=name,
        title=title,
        description=description,
        input_schema=INPUT[operation],
        output_schema=OUTPUT[operation],
        annotations=ToolAnnotations(
            title=title,
            read_only_hint=read_only,
            destructive_hint=destructive,
            idempotent_hint=idempotent,
            open_world_hint=False,
        ),
    )


# In this order in tools/list, always.
TOOLS = [
    _tool(
        "memory_store",
        "Store a memory",
        "Persist a typed memory and return its id. Types: DECISION (a choice made and "
        "why), PATTERN (a way of doing things here), ERROR (a failure and its fix), TODO, "
        "ARCHITECTURE (how the system is built), CONSTRAINT (a rule that must hold). "
        "DECISION, ARCHITECTURE and CONSTRAINT fade six times slower in ranking. Set "
        "ttl_secs for facts that stop being true (the memory is removed after that). "
        "Secrets in any text field (private keys, API keys, tokens, JWTs, passwords) are "
        "replaced by [redacted:KIND] markers before storing; the answer then lists their "
        "kinds in redacted. Unknown arguments are refused.",
    ),
    _tool(
        "memory_search",
        "Search memories",
        "Search memories, best first. With an embedder (the local model or Ollama), by "
        "meaning and keywords together (search_mode hybrid: paraphrases and exact terms both "
        "surface); otherwise by keyword (search_mode keyword). Both are weighted by recency "
        "decay. The page ends where relevance drops, so it holds what answers the question "
        "(limit is the most it returns, not a number to fill; an off-topic question gets "
        "little or nothing). Plain questions work (punctuation is fine) and so does FTS5 "
        'syntax (sqlite AND vec, "exact phrase", vec*). Returns {search_mode, results}; each '
        "result carries a freshly computed decay_score. Returned memories count as used. "
        "max_chars bounds what the results cost you: the best that fit whole, and more: how "
        "many others answered.",
        # Reads only; the recency bump of what it returns is bookkeeping, not a change.
        read_only=True,
    ),
    _tool(
        "memory_list",
        "List memories",
        "List memories newest first, optionally filtered by type, exact tag, scope and by. "
        "Returns {memories: [...]}. Listing does not count as use.",
        read_only=True,
        idempotent=True,
    ),
    _tool(
        "memory_update",
        "Update a memory",
        "Patch a memory in place by id (JSON merge-patch): a field you send replaces the "
        "old value, a field you omit stays, null clears tags (to []), scope (to global) "
        "or ttl_secs (never expire). content cannot be null or empty; type and source "
        "cannot change. Unknown fields are rejected. Returns the updated memory plus "
        "embedding_status (1: new content embedded, 0: embedding pending) and, when "
        "secrets were replaced, redacted (as for memory_store); or "
        "{updated: false, reason: not_found}. Counts as a use.",
        destructive=True,
    ),
    _tool(
        "memory_link",
        "Link two memories",
        "Record a typed relation from_id -[kind]-> to_id between two memories: relates_to, "
        "supersedes (a newer decision replacing an older one) or caused_by (an error and "
        "its cause). Idempotent: repeating it is a success. Unknown ids answer linked: "
        "false with reason not_found and the missing_id.",
        idempotent=True,
    ),
    _tool(
        "memory_unlink",
        "Remove a relation",
        "Remove a relation. supersedes and caused_by must be given in their stored "
        "direction; relates_to can be removed from either end. Answers unlinked: true, or "
        "unlinked: false with reason not_found when there is no such relation.",
        destructive=True,
        idempotent=True,
    ),
    _tool(
        "memory_forget",
        "Forget a memory",
        "Delete a memory by id, with every relation touching it and its history. Returns "
        "{id, deleted: true}, or deleted: false with reason not_found for an unknown id.",
        destructive=True,
        idempotent=True,
    ),
    _tool(
        "memory_history",
        "A memory's versions",
        "List a memory's versions, oldest first, the current one last: content, tags, scope "
        "and expiry as they were, who wrote each and when (written_by, written_at), and what "
        "replaced it (replaced_at, replaced_by; change: update, or duplicate for a store of "
        "the same content merged into it, with the source it sent). Returns {id, versions}, "
        "or found: false with reason not_found. memory_search and memory_list take as_of to "
        "answer as the memories stood at a past moment. Does not count as a use.",
        read_only=True,
        idempotent=True,
    ),
]
