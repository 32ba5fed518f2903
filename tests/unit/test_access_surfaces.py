"""Deny by default, surface by surface: every public operation of the service, every MCP
tool, resource and completion, every REST route (from Flask's url_map) and every action of
the page reaches the service only through an operation that has a rule in access.RULES.
A new one without a rule fails here (and is refused to every token but a full one meanwhile).
docs/http.md's table of what each kind of token may do is the one the rules make."""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import CompleteRequestParams, PromptReference, ResourceTemplateReference

from agent_memory.http import rest as rest_app
from agent_memory.http.web import ASSETS
from agent_memory.mcp import catalog, server
from agent_memory.mcp.tools import TOOLS
from agent_memory.service import access
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.paths import ROOT

WEB = ROOT / "agent_memory" / "http" / "web"
DOCS = ROOT / "docs" / "http.md"
BASE = "http://127.0.0.1:7437"
# Routes that reach no operation of the service, and why none is needed.
NO_OPERATION = {
    "/": "the page's own file: no memory in it",
    "/assets/<name>": "the page's own files: no memory in them",
    "/openapi.json": "the API's description: no memory in it",
    "/api/session": "signing in and out, and who the request is: the token gate's own",
}
# A path segment the rules of url_map name, filled in for a request that reaches the route.
SEGMENT = re.compile(r"<(?:\w+:)?(\w+)>")


class Spy:
    """The service, noting each operation a transport asks it for."""

    def __init__(self, service: MemoryService) -> None:
        self._service = service
        self.asked: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.asked.append(name)
        return getattr(self._service, name)


@pytest.fixture
def service(tmp_path) -> Iterator[MemoryService]:
    opened = MemoryService(open_store(str(tmp_path / "memory.db")))
    opened.store({"content": "a memory to read", "type": "TODO", "scope": "s"})
    yield opened
    opened.close()


def operations() -> set[str]:
    """The public operations of the service: its public methods."""
    return {
        name
        for name, value in inspect.getmembers(MemoryService)
        if not name.startswith("_") and callable(value)
    }


def test_every_operation_of_the_service_has_a_rule():
    missing = sorted(operations() - set(access.RULES))
    assert missing == [], f"no rule in service/access.py RULES for {missing}"
    assert sorted(set(access.RULES) - operations()) == [], "a rule names no operation"
    # Granted has no public method of its own, which would answer for an operation of that
    # name without its rule: every one goes through Granted.__getattr__
    assert [n for n in vars(access.Granted) if not n.startswith("_")] == []


def asked(spy: Spy, run) -> list[str]:
    """The operations ``run`` asked the spy for (a refusal of its arguments is fine)."""
    spy.asked.clear()
    with contextlib.suppress(MCPError, Exception):
        run()
    return list(dict.fromkeys(spy.asked))


def mcp_reach(service: MemoryService) -> dict[str, list[str]]:
    """What each MCP tool, resource and completion asks of the service."""
    spy = Spy(service)
    reached = {}
    for name in sorted({tool.name for tool in TOOLS} | set(server.HANDLERS)):
        reached[f"`{name}`"] = asked(spy, lambda n=name: server.call_tool(spy, n, {}))
    for resource in catalog.RESOURCES:
        uri = str(resource.uri)
        reached[f"`{uri}`"] = asked(spy, lambda u=uri: server.read_resource(spy, u))
    for template in catalog.RESOURCE_TEMPLATES:
        uri = re.sub(r"\{\w+\}", "1", template.uri_template)
        reached[f"`{template.uri_template}`"] = asked(
            spy, lambda u=uri: server.read_resource(spy, u)
        )
    for ref in (
        ResourceTemplateReference(type="ref/resource", uri=catalog.SCOPE_TEMPLATE),
        PromptReference(type="ref/prompt", name=catalog.PROMPT_NAME),
    ):
        params = CompleteRequestParams(ref=ref, argument={"name": "scope", "value": ""})
        reached["scope completions"] = asked(spy, lambda p=params: server.complete(spy, p))
    return reached


def routes(app) -> Iterator[tuple[str, str]]:
    """Every route of ``app``: (method, rule as url_map writes it)."""
    for rule in app.url_map.iter_rules():
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            yield method, rule.rule


def shown(method: str, rule: str) -> str:
    return "`" + method + " " + SEGMENT.sub(r"{\1}", rule) + "`"


def rest_reach(service: MemoryService) -> dict[tuple[str, str], list[str]]:
    """What each REST route asks of the service, sent as a request with ids of 1 and a
    JSON body of {} (a refusal of the arguments is fine: the operation was asked for)."""
    app = rest_app.create_app(service)
    client = app.test_client()
    spy = Spy(service)
    reached = {}
    for method, rule in routes(app):
        body = {} if method in ("POST", "PATCH", "PUT") else None
        spy.asked.clear()
        path = SEGMENT.sub("1", rule)
        overrides = {rest_app.SERVICE: spy}
        client.open(path, method=method, json=body, base_url=BASE, environ_overrides=overrides)
        reached[(method, rule)] = list(dict.fromkeys(spy.asked))
    return reached


def page_actions(service: MemoryService) -> dict[str, tuple[str, str]]:
    """The page's actions (api.js's ``api`` object): name -> the route it sends to."""
    source = (WEB / "api.js").read_text()
    block = source[source.index("export const api = {") :]
    block = block[: block.index("\n};")]
    found = re.findall(r"^\s+(\w+): \([^)]*\) =>\s*call\(\"(\w+)\", ([`\"])(.*?)\3", block, re.M)
    adapter = rest_app.create_app(service).url_map.bind("127.0.0.1:7437")
    actions = {}
    for name, method, _quote, template in found:
        path = re.sub(r"\$\{[^}]*\}", "1", re.sub(r"\$\{query\(.*\)\}$", "", template))
        rule, _ = adapter.match(path, method=method, return_rule=True)
        actions[name] = (method, rule.rule)
    return actions


def test_every_mcp_tool_resource_and_completion_reaches_only_operations_with_rules(service):
    for surface, names in mcp_reach(service).items():
        assert names, f"{surface} reaches no operation of the service"
        assert set(names) <= set(access.RULES), f"{surface} reaches {names}: no rule"


def test_every_rest_route_reaches_only_operations_with_rules(service):
    for (method, rule), names in rest_reach(service).items():
        if rule in NO_OPERATION:
            assert names == [], f"{method} {rule} reaches {names}"
            continue
        assert names, f"{method} {rule} reaches no operation (nor is it in NO_OPERATION)"
        assert set(names) <= set(access.RULES), f"{method} {rule} reaches {names}: no rule"


def test_every_page_action_is_a_route_checked_above(service):
    """The page reaches the daemon through api.js's `call` alone, and every entry of its
    `api` object is read here."""
    scripts = {path.name: path.read_text() for path in WEB.glob("*.js")}
    assert {name: text.count("fetch(") for name, text in scripts.items() if "fetch(" in text} == {
        "api.js": 1
    }
    block = scripts["api.js"][scripts["api.js"].index("export const api = {") :]
    entries = re.findall(r"^  (\w+): ", block[: block.index("\n};")], re.M)
    actions = page_actions(service)
    assert sorted(actions) == sorted(entries)
    assert {"update", "forget", "link", "unlink", "search", "signIn"} <= set(actions)
    assert set(actions.values()) <= set(rest_reach(service))
    assert {"api.js", "app.js"} <= set(ASSETS)


def reach(service: MemoryService) -> dict[str, list[str]]:
    """For each operation: the tools, resources, routes and page actions that reach it."""
    by_operation: dict[str, list[str]] = {}
    for surface, names in mcp_reach(service).items():
        for name in names:
            by_operation.setdefault(name, []).append(surface)
    page = set(page_actions(service).values())
    for route, names in rest_reach(service).items():
        for name in names:
            by_operation.setdefault(name, []).append(shown(*route))
            if route in page and "the page" not in by_operation[name]:
                by_operation[name].append("the page")
    return by_operation


def test_docs_http_has_the_table_the_rules_make(service):
    expected = access.table(reach(service))
    assert expected in DOCS.read_text(), f"docs/http.md should hold this table:\n{expected}"
