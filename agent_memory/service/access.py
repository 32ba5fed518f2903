"""The service as one token may use it: what each kind of token may do, for every operation
of the service, in one table (:data:`RULES`), denied by default.

Every transport that takes tokens (REST, the page, MCP over HTTP) hands a request's calls to
:class:`Granted` instead of the service, so a rule holds on every path at once. ``Granted``
hands nothing through on its own: an operation is reached only through its rule, and one
with no rule is refused to every token but a full one (read-write, bound to no scope). A new
operation of the service is so closed to the others until its rule says otherwise: adding
one is one line of :data:`RULES`.

A rule says who may call the operation (every token, read-write tokens, full tokens only, or no
token: the terminal's own), and how a scope-bound token's call is checked; without that, a
scope-bound token is refused. A scope-bound token acts only on memories of its scope: a memory of
another scope is answered exactly as a memory that does not exist, whichever argument names it (an
id, a link's end, ``supersedes``), so it learns nothing of what it may not read, its id included. A
search or list is given the token's scope as its filter (asking for another is refused), so only its
scope's supersessions count there (service/hygiene/supersede.py); ``scope`` in an update may name
only its own (``null`` would make a memory global); a memory's relations to other scopes are left
out, in ``get`` and in ``expand_links``, and so are the ids in ``superseded_by``; ``history`` leaves
out the versions a memory had in another scope; the counts are the scope's own. A read-only token
changes nothing, uses included: its searches record none.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from agent_memory.contract.errors import Forbidden
from agent_memory.service import actor
from agent_memory.service.core import MemoryService
from agent_memory.service.tokens import Grant

__all__ = ["RULES", "Forbidden", "Granted", "Rule", "may", "table"]

# Who may call an operation at all.
EVERY_TOKEN = "every token"  # reads
READ_WRITE = "read-write tokens"  # writes: refused to read-only tokens
FULL_ONLY = "full tokens"  # read-write and bound to no scope
NO_TOKEN = "no token"  # the terminal's and the process's own

# A step of a call as a token makes it: (granted, the next step, *the call's arguments).
Step = Callable[..., Any]


@dataclass(frozen=True)
class Rule:
    """Who may call an operation; ``scoped``: what a scope-bound token's call may reach (the
    words of docs/http.md's table), None when it is refused to such a token; ``check``: the
    step that holds a scope-bound token's call to it, beyond the ids it names (which the
    service answers as missing ones when they are of another scope: service.actor);
    ``read_only``: how a read-only token's call is changed, and why."""

    who: str
    scoped: str | None = None
    check: Step | None = None
    read_only: tuple[Step, str] | None = None


FULL = Rule(FULL_ONLY)
TERMINAL = Rule(NO_TOKEN)


class Granted:
    """``service`` behind ``grant``: only the operations :data:`RULES` opens to it."""

    def __init__(self, service: MemoryService, grant: Grant) -> None:
        self._service = service
        self.grant = grant

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._service, name) if not name.startswith("_") else None
        if not callable(method):
            raise AttributeError(f"{type(self).__name__} has no operation {name!r}")
        rule = RULES.get(name)

        def operation(*args: Any, **kwargs: Any) -> Any:
            refused = refusal(self.grant, name, rule)
            if refused is not None:
                raise refused
            call: Callable[..., Any] = method
            if rule is not None and self.grant.read_only and rule.read_only is not None:
                call = _then(rule.read_only[0], self, call)
            visible = None
            if self.grant.scope is not None:
                visible = functools.partial(self._visible, operation=VERBS.get(name, name))
                if rule is not None and rule.check is not None:
                    call = _then(rule.check, self, call)
            with actor.acting_as(self.grant.name, visible):
                return call(*args, **kwargs)

        operation.__name__ = name
        return operation

    # -- what a scope-bound token's checks read ---------------------------------------
    def _visible(self, memory_id: int, *, operation: str = "get") -> bool:
        """Whether the memory ``memory_id`` exists in the token's scope."""
        with self._service.storage(operation):
            found = self._service.db.get(memory_id, 0)
        return found is not None and found[0]["scope"] == self.grant.scope

    def _scoped(self, args: Any, verb: str) -> Any:
        """``args`` with the token's scope as its scope; another scope named is refused."""
        if not isinstance(args, Mapping):
            return args  # arguments the service refuses as they are
        given = args.get("scope")
        if given is not None and given != self.grant.scope:
            raise self._elsewhere(verb, given)
        return {**args, "scope": self.grant.scope}

    def _elsewhere(self, verb: str, given: Any) -> Forbidden:
        shown = "null" if given is None else repr(given)
        return Forbidden(
            f"forbidden: the token {self.grant.name!r} may {verb} only in scope "
            f"{self.grant.scope!r} (got scope {shown})"
        )

    def _prune(self, rows: list[dict[str, Any]]) -> None:
        """Memories of other scopes, out of each row's ``related`` and ``superseded_by``."""
        seen: dict[int, bool] = {}

        def shown(memory_id: int) -> bool:
            if memory_id not in seen:
                seen[memory_id] = self._visible(memory_id)
            return seen[memory_id]

        for row in rows:
            if "related" in row:
                row["related"] = [r for r in row["related"] if shown(r["id"])]
            if row.get("superseded_by"):
                row["superseded_by"] = [i for i in row["superseded_by"] if shown(i)]


def full(grant: Grant) -> bool:
    """Read-write and bound to no scope: a rule's checks change nothing for it."""
    return not grant.read_only and grant.scope is None


def refusal(grant: Grant, name: str, rule: Rule | None) -> Forbidden | None:
    """Why ``grant`` may not call the operation ``name`` (its rule: ``rule``) at all; None
    when it may (its arguments are then checked as the rule says)."""
    token = f"the token {grant.name!r}"
    verb = VERBS.get(name, name)
    if (rule is None or rule.who == FULL_ONLY) and not full(grant):
        return Forbidden(f"forbidden: {token} cannot {verb}: only a full token may")
    if rule is None:
        return None
    if rule.who == NO_TOKEN:
        return Forbidden(f"forbidden: no token may {verb}; it runs on the terminal only")
    if rule.who == READ_WRITE and grant.read_only:
        return Forbidden(f"forbidden: {token} is read-only and cannot {verb}")
    if grant.scope is not None and rule.scoped is None:
        return Forbidden(f"forbidden: {token} is bound to scope {grant.scope!r} and cannot {verb}")
    return None


def _then(step: Step, granted: Granted, call: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *args, **kwargs: step(granted, call, *args, **kwargs)


# -- the steps that hold a scope-bound token's call to its scope ---------------------------
# Each takes the Granted, the next step of the call (the service's method, or another step),
# and the call's arguments.


def _search(g: Granted, call: Callable[..., Any], args: Any, **options: Any) -> dict[str, Any]:
    found = call(g._scoped(args, "search"), **options)
    g._prune(found.get("results", []))
    return found


def _no_use(g: Granted, call: Callable[..., Any], args: Any, **options: Any) -> dict[str, Any]:
    return call(args, **{**options, "record_use": False})


def _iter_list(g: Granted, call: Callable[..., Any], args: Any) -> Iterator[dict[str, Any]]:
    rows = call(g._scoped(args, "list"))  # bad arguments raise here, as the service's do
    return _pruned(g, rows)


def _pruned(g: Granted, rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for row in rows:
        g._prune([row])
        yield row


def _list(g: Granted, call: Callable[..., Any], args: Any) -> list[dict[str, Any]]:
    return list(g.iter_list(args))  # the service's own list would not be scoped


def _get(g: Granted, call: Callable[..., Any], args: Any) -> dict[str, Any]:
    found = call(args)
    if found.get("found", True) is not False:
        if found.get("scope") != g.grant.scope:
            return {"id": found["id"], "found": False, "reason": "not_found"}
        g._prune([found])
    return found


def _history(g: Granted, call: Callable[..., Any], args: Any) -> dict[str, Any]:
    found = call(args)
    versions = found.get("versions")
    if not versions:
        return found
    if versions[-1]["scope"] != g.grant.scope:  # the current version: the memory as it is
        return {"id": found["id"], "found": False, "reason": "not_found"}
    kept = [v for v in versions if v["scope"] == g.grant.scope]
    numbered = [{**v, "version": n} for n, v in enumerate(kept, start=1)]
    return {**found, "versions": numbered}


def _stats(g: Granted, call: Callable[..., Any], args: Any = None) -> dict[str, Any]:
    answer = call(args)
    by_type: dict[str, int] = {}
    every = {"scope": g.grant.scope, "include_superseded": True}  # as the full count
    for row in g._service.iter_list(every):
        by_type[row["type"]] = by_type.get(row["type"], 0) + 1
    count = sum(by_type.values())
    scoped = {**answer, "memories": count, "by_type": by_type}
    scoped["by_scope"] = [{"scope": g.grant.scope, "memories": count}]
    scoped.pop("links", None)  # not counted per scope
    scoped.pop("pending_embedding", None)
    return scoped


def _tidy(g: Granted, call: Callable[..., Any], args: Any = None) -> dict[str, Any]:
    answer = call(g._scoped({} if args is None else args, "tidy"))
    for memory in answer["superseded"]:
        for name in ("superseded_by", "current_replacements"):
            memory[name] = [i for i in memory[name] if g._visible(i)]
        memory["related"] = [r for r in memory["related"] if g._visible(r["id"])]
    return answer


def _store(g: Granted, call: Callable[..., Any], args: Any) -> dict[str, Any]:
    return call(g._scoped(args, "store"))


def _update(
    g: Granted, call: Callable[..., Any], args: Any, *, path_id: Any = None
) -> dict[str, Any]:
    if isinstance(args, Mapping) and "scope" in args and args["scope"] != g.grant.scope:
        raise g._elsewhere("update", args["scope"])
    return call(args, path_id=path_id)


SCOPE_ONLY = "its scope only (naming another is refused); relations elsewhere left out"
NOT_FOUND = "its scope's memories; another scope's is not found"


# Every public operation of MemoryService, and what a token needs to call it
# (tests/unit/test_access_surfaces.py fails when one has no rule).
RULES: dict[str, Rule] = {
    # reads
    "search": Rule(EVERY_TOKEN, SCOPE_ONLY, _search, (_no_use, "its searches record no use")),
    "list": Rule(EVERY_TOKEN, SCOPE_ONLY, _list),
    "iter_list": Rule(EVERY_TOKEN, SCOPE_ONLY, _iter_list),
    "get": Rule(EVERY_TOKEN, f"{NOT_FOUND}; relations elsewhere left out", _get),
    "history": Rule(EVERY_TOKEN, f"{NOT_FOUND}; versions it had elsewhere left out", _history),
    "stats": Rule(EVERY_TOKEN, "its scope's counts (no relations, no backlog)", _stats),
    "tidy": Rule(EVERY_TOKEN, "its scope's report; ids elsewhere left out", _tidy),
    "health": Rule(EVERY_TOKEN, "yes: it holds nothing of any scope"),
    # writes
    "store": Rule(READ_WRITE, "lands in its scope; `supersedes` names its scope's only", _store),
    "update": Rule(READ_WRITE, f"{NOT_FOUND}; `scope` only its own (not null)", _update),
    "forget": Rule(READ_WRITE, NOT_FOUND),
    "link": Rule(READ_WRITE, "both ends in its scope; an end elsewhere is not found"),
    "unlink": Rule(READ_WRITE, "both ends in its scope; an edge elsewhere is not found"),
    "tidy_merge": FULL,
    "purge_history": FULL,
    # the terminal's and the process's own
    "waiting_for_vectors": TERMINAL,
    "doctor": TERMINAL,
    "backfill": TERMINAL,
    "reembed": TERMINAL,
    "embed_pending": TERMINAL,
    "report_embedder": TERMINAL,
    "export": TERMINAL,
    "import_jsonl": TERMINAL,
    "import_gsd": TERMINAL,
    "now": TERMINAL,
    "storage": TERMINAL,
    "close": TERMINAL,
}
# How a refusal names an operation, where its name is not the word.
VERBS = {"iter_list": "list", "tidy_merge": "merge clusters"}


def may(grant: Grant) -> dict[str, bool]:
    """Whether ``grant`` may call each operation a token can reach (the page shows only
    what its token may do)."""
    return {
        name: refusal(grant, name, rule) is None
        for name, rule in RULES.items()
        if rule.who != NO_TOKEN
    }


def table(reached: Mapping[str, list[str]]) -> str:
    """docs/http.md's table of what each kind of token may do, from :data:`RULES`;
    ``reached``: the MCP tools, REST routes and page actions that call each operation."""
    lines = [
        "| operation | reached by | full token | read-only token | scope-bound token |",
        "|---|---|---|---|---|",
    ]
    for name, rule in RULES.items():
        if rule.who == NO_TOKEN:
            continue
        read_only = "no"
        if rule.who == EVERY_TOKEN:
            read_only = "yes" if rule.read_only is None else f"yes; {rule.read_only[1]}"
        scoped = rule.scoped or "no"
        where = ", ".join(reached.get(name, [])) or "the terminal"
        lines.append(f"| `{name}` | {where} | yes | {read_only} | {scoped} |")
    terminal = ", ".join(f"`{n}`" for n, r in RULES.items() if r.who == NO_TOKEN)
    lines += [
        "",
        f"No token may call the terminal's own operations: {terminal}; nor create, list or "
        "revoke tokens (`agent-memory token`, on the terminal only: a token only signs in).",
    ]
    return "\n".join(lines) + "\n"
