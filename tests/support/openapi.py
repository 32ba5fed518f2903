"""The OpenAPI document as the daemon serves it, for the tests that check it in process and against
the spawned daemon."""

from __future__ import annotations

import json

from agent_memory.http import openapi


def document() -> dict:
    """The document as the daemon serves it (built in code: agent_memory.http.openapi)."""
    return json.loads(openapi.text())
