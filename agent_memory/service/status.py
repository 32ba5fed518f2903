"""What the service says of its own state: ``health`` (is it alive, how searches run) and
``doctor`` (the store's checks and repairs). Kept apart from the memory operations."""

from __future__ import annotations

import dataclasses
from typing import Any

from agent_memory import __version__
from agent_memory.contract import identity
from agent_memory.embedders.base import UNREACHABLE
from agent_memory.service import validate
from agent_memory.service.context import Context
from agent_memory.service.embedding_jobs import search_outlook


def health(service: Context, challenge: str | None = None, address: str = "") -> dict[str, Any]:
    """Liveness (the store answers a read), the embedder's status, and how searches run
    now: ``search_mode`` with the ``embedding`` serving it, or why search is by keyword
    only and what would change that (``search_hint``). Given a ``challenge``, the proof
    that this process reads this database, as served at ``address`` (IP:PORT), for
    ``agent-memory ui`` (agent_memory.contract.identity); null for a database without an id."""
    if challenge is not None:
        challenge = validate.challenge(challenge)
    with service.storage("health"):
        service.db.ping()
        pin = service.db.pin()
    status = UNREACHABLE if service.embedder is None else service.embedder.status()
    answer = {
        "status": "ok",
        "embedder": status,
        "schema_version": service.db.schema_version,
        "version": __version__,
        **search_outlook(service.embedder, status, pin),
    }
    if challenge is not None:
        key = service.db.identity_key
        answer["database_proof"] = None if key is None else identity.proof(key, challenge, address)
    return answer


def doctor(service: Context, *, repair: bool = False) -> dict[str, Any]:
    """``agent-memory doctor``: the store's checks (Store.check); with ``repair``, what
    Store.repair rebuilt and the checks run again. Then the pin, the memories waiting
    for a vector, and how searches would run with the configured embedder (as health
    says it: Ollama is asked for its models, the local model is not loaded). ``ok`` is
    False while any check fails."""
    with service.storage("doctor"):
        findings = service.db.check()
        repaired: list[str] = []
        if repair and any(not f.ok and f.repairable for f in findings):
            repaired = service.db.repair()
            findings = service.db.check()
        pin = service.db.pin()
        total, pending = service.db.embedding_counts()
    embedder = service.embedder
    status = UNREACHABLE if embedder is None else embedder.status()
    return {
        "ok": all(f.ok for f in findings),
        "checks": [dataclasses.asdict(f) for f in findings],
        "repaired": repaired,
        "pin": None if pin is None else pin.describe(),
        "memories": total,
        "pending_embedding": pending,
        "embedder": None if embedder is None else embedder.describe(),
        "embedder_status": None if embedder is None else status,
        **search_outlook(service.embedder, status, pin),
    }
