"""The REST app in process through Flask's test client: (status, JSON body) per request."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agent_memory.http.rest import create_app

# The daemon's default address, as a client of the real daemon would send it.
BASE = "http://127.0.0.1:7437"


class Client:
    """Flask's test client, addressed as the daemon's own origin by default."""

    def __init__(self, app):
        self._client = app.test_client()

    def __call__(
        self,
        method,
        path,
        *,
        body=None,
        raw=None,
        content_type="application/json",
        headers=None,
        base_url=BASE,
    ):
        kwargs = {"base_url": base_url, "headers": headers or {}}
        if body is not None:
            kwargs["data"] = json.dumps(body)
            kwargs["content_type"] = content_type
        elif raw is not None:
            kwargs["data"] = raw
            if content_type:
                kwargs["content_type"] = content_type
        response = self._client.open(path, method=method, **kwargs)
        return response.status_code, response.get_json(silent=True)


def sender(service) -> Callable[..., tuple[int, Any]]:
    """``send(method, path, body=None)`` against an app over ``service``."""
    client = Client(create_app(service))

    def send(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return client(method, path, body=body)

    return send
