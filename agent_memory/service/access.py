"""The service as one token may use it: read-only tokens never write, and a scope-bound
token reads and writes only its scope (service.tokens says what a token grants).

Every transport that takes tokens (REST, the page, MCP over HTTP) hands a request's calls to
:class:`Granted` instead of the service, so a rule holds on every path at once. A memory of
another scope is answered exactly as a memory that does not exist: a token learns nothing
of what it may not read, its id included. A search or list is given the token's scope as
its filter (asking for another is refused), so only its scope's supersessions count there
(service/supersede.py); a memory's relations to other scopes are left
out, in ``get`` and in ``expand_links``, and so are the ids in ``superseded_by``; the counts
are the scope's own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from agent_memory.contract.errors import Forbidden
from agent_memory.service import actor
from agent_memory.service.core import MemoryService
from agent_memory.service.tokens import Grant

__all__ = ["Forbidden", "Granted"]


class Granted:
    """``service`` behind ``grant``; every other attribute is the service's own."""

    def __init__(self, service: MemoryService, grant: Grant) -> None:
        self._service = service
        self.grant = grant

    def __getattr__(self, name: str) -> Any:
        return getattr(self._service, name)

    def _writing(self, operation: str) -> None:
        if self.grant.read_only:
            raise Forbidden(
                f"forbidden: the token {self.grant.name!r} is read-only and cannot {operation}"
            )

    def _scoped(self, args: Any, operation: str) -> Any:
        """``args`` with the token's scope as its scope; another scope named is refused."""
        scope = self.grant.scope
        if scope is None or not isinstance(args, Mapping):
            return args  # no scope to hold to, or arguments the service refuses as they are
        given = args.get("scope")
        if given is not None and given != scope:
            raise Forbidden(
                f"forbidden: the token {self.grant.name!r} may {operation} only in scope "
                f"{scope!r} (got scope {given!r})"
            )
        return {**args, "scope": scope}

    def _visible(self, memory_id: Any) -> bool:
        if self.grant.scope is None:
            return True
        found = self._service.get({"id": memory_id})
        return found.get("found", True) is not False and found.get("scope") == self.grant.scope

    def _prune(self, rows: list[dict[str, Any]]) -> None:
        """Memories of other scopes, out of each row's ``related`` and ``superseded_by``."""
        if self.grant.scope is None:
            return
        seen: dict[int, bool] = {}

        def visible(memory_id: int) -> bool:
            if memory_id not in seen:
                seen[memory_id] = self._visible(memory_id)
            return seen[memory_id]

        for row in rows:
            if "related" in row:
                row["related"] = [r for r in row["related"] if visible(r["id"])]
            if row.get("superseded_by"):
                row["superseded_by"] = [i for i in row["superseded_by"] if visible(i)]

    # -- reads ------------------------------------------------------------------------
    def search(self, args: Any, **options: Any) -> dict[str, Any]:
        found = self._service.search(self._scoped(args, "search"), **options)
        self._prune(found.get("results", []))
        return found

    def list(self, args: Any) -> list[dict[str, Any]]:
        return list(self.iter_list(args))

    def iter_list(self, args: Any) -> Iterator[dict[str, Any]]:
        rows = self._service.iter_list(self._scoped(args, "list"))
        if self.grant.scope is None:
            return rows
        return self._pruned(rows)

    def _pruned(self, rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for row in rows:
            self._prune([row])
            yield row

    def get(self, args: Any) -> dict[str, Any]:
        found = self._service.get(args)
        if self.grant.scope is not None and found.get("found", True) is not False:
            if found.get("scope") != self.grant.scope:
                return {"id": found["id"], "found": False, "reason": "not_found"}
            self._prune([found])
        return found

    def history(self, args: Any) -> dict[str, Any]:
        memory_id = _arg(args, "id")
        if memory_id is not None and not self._visible(memory_id):
            return {"id": memory_id, "found": False, "reason": "not_found"}
        return self._service.history(args)

    def stats(self, args: Any = None) -> dict[str, Any]:
        answer = self._service.stats(args)
        if self.grant.scope is None:
            return answer
        by_type: dict[str, int] = {}
        every = {"scope": self.grant.scope, "include_superseded": True}  # as the full count
        for row in self._service.iter_list(every):
            by_type[row["type"]] = by_type.get(row["type"], 0) + 1
        count = sum(by_type.values())
        scoped = {**answer, "memories": count, "by_type": by_type}
        scoped["by_scope"] = [{"scope": self.grant.scope, "memories": count}]
        scoped.pop("links", None)  # not counted per scope
        scoped.pop("pending_embedding", None)
        return scoped

    def tidy(self, args: Any = None) -> dict[str, Any]:
        """The report of the token's scope; ids of other scopes left out of it."""
        answer = self._service.tidy(self._scoped({} if args is None else args, "tidy"))
        if self.grant.scope is None:
            return answer
        for memory in answer["superseded"]:
            for name in ("superseded_by", "current_replacements"):
                memory[name] = [i for i in memory[name] if self._visible(i)]
            memory["related"] = [r for r in memory["related"] if self._visible(r["id"])]
        return answer

    # -- writes -----------------------------------------------------------------------
    def tidy_merge(
        self, clusters: list[dict[str, Any]], scope: str | None = None
    ) -> list[dict[str, Any]]:
        self._writing("merge")
        if self.grant.scope is not None:
            raise Forbidden(f"forbidden: the token {self.grant.name!r} cannot merge clusters")
        with actor.acting_as(self.grant.name):
            return self._service.tidy_merge(clusters, scope)

    def store(self, args: Any) -> dict[str, Any]:
        self._writing("store")
        with actor.acting_as(self.grant.name):
            return self._service.store(self._scoped(args, "store"))

    def update(self, args: Any, *, path_id: Any = None) -> dict[str, Any]:
        self._writing("update")
        memory_id = path_id if path_id is not None else _arg(args, "id")
        if self.grant.scope is not None and isinstance(args, Mapping):
            if "scope" in args and args["scope"] != self.grant.scope:
                self._scoped(args, "update")  # refused: moving a memory out of the scope
            if memory_id is not None and not self._visible(memory_id):
                return {"id": memory_id, "updated": False, "reason": "not_found"}
        with actor.acting_as(self.grant.name):
            return self._service.update(args, path_id=path_id)

    def forget(self, args: Any) -> dict[str, Any]:
        self._writing("forget")
        memory_id = _arg(args, "id")
        if memory_id is not None and not self._visible(memory_id):
            return {"id": memory_id, "deleted": False, "reason": "not_found"}
        return self._service.forget(args)

    def link(self, args: Any) -> dict[str, Any]:
        self._writing("link")
        return self._edge(args, "link", "linked") or self._service.link(args)

    def unlink(self, args: Any) -> dict[str, Any]:
        self._writing("unlink")
        return self._edge(args, "unlink", "unlinked") or self._service.unlink(args)

    def _edge(self, args: Any, operation: str, flag: str) -> dict[str, Any] | None:
        """The not-found answer when an end of the edge is in another scope, else None."""
        for name in ("from_id", "to_id"):
            memory_id = _arg(args, name)
            if memory_id is not None and not self._visible(memory_id):
                echo = {k: args.get(k) for k in ("from_id", "to_id", "kind")}
                return {**echo, flag: False, "reason": "not_found", "missing_id": memory_id}
        return None


def _arg(args: Any, name: str) -> Any:
    """``args[name]`` when it is an integer id (anything else the service refuses itself)."""
    value = args.get(name) if isinstance(args, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
