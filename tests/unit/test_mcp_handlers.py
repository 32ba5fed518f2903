"""The MCP transport's handler tables name every tool and every resource read, and each
entry calls the service method of its name (no dispatch by string)."""

from __future__ import annotations

from agent_memory.mcp import catalog as mcp_catalog
from agent_memory.mcp import server as mcp_server
from agent_memory.mcp.tools import TOOLS

RESOURCE_URIS = (
    "memory://recent",
    "memory://stats",
    "memory://7",
    "memory://scope/agent-memory",
    "memory://type/DECISION",
)


def test_every_tool_has_a_handler_and_no_other():
    assert set(mcp_server.HANDLERS) == {tool.name for tool in TOOLS}


class Recorder:
    """A stand-in service: which method was called, with what."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def __getattr__(self, name: str):
        def method(args):
            self.calls.append((name, args))
            return []

        return method


def test_each_handler_calls_the_method_its_operation_names():
    for name, handler in mcp_server.HANDLERS.items():
        service = Recorder()
        handler.run(service, {"x": name})
        assert name == f"memory_{handler.operation}"
        assert service.calls == [(handler.operation, {"x": name})]


def test_each_resource_read_calls_the_method_of_its_operation():
    for operation, read in mcp_server.READS.items():
        service = Recorder()
        read(service, {"limit": 1})
        assert service.calls == [(operation, {"limit": 1})]


def test_every_resource_read_has_a_service_call():
    operations = {mcp_catalog.resource_call(uri)[0] for uri in RESOURCE_URIS}
    assert operations == set(mcp_server.READS)
