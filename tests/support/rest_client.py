"""The REST app in process through Flask's test client: (status, JSON body) per request."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agent_memory.rest import create_app

# The daemon's default address, as a client of the real daemon would send it.
BASE = "http://127.0.0.1:7437"


def sender(service) -> Callable[..., tuple[int, Any]]:
    """``send(method, path, body=None)`` against an app over ``service``."""
    client = create_app(service).test_client()

    def send(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        kwargs: dict[str, Any] = {"base_url": BASE}
        if body is not None:
            kwargs.update(data=json.dumps(body), content_type="application/json")
        response = client.open(path, method=method, **kwargs)
        return response.status_code, response.get_json()

    return send
