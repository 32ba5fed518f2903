"""One memory found only by meaning: no word of PARAPHRASE is in DATASTORE (stemmed or not),
so a search that finds it used the vector leg. OTHERS are memories beside it."""

from __future__ import annotations

DATASTORE = "We chose PostgreSQL as our datastore."
PARAPHRASE = "which relational database did the team pick"
OTHERS = [
    ("PATTERN", "Use tmp_path fixtures for throwaway files."),
    ("ERROR", "The login page crashed on an empty password."),
    ("TODO", "Write a rollout checklist before shipping."),
    ("ARCHITECTURE", "Requests go through a redis layer first."),
]


def fill(svc) -> dict[str, int]:
    """DATASTORE (as "datastore") and OTHERS (by content) stored through ``svc``: their ids."""
    ids = {"datastore": svc.store({"content": DATASTORE, "type": "DECISION"})["id"]}
    for memory_type, content in OTHERS:
        ids[content] = svc.store({"content": content, "type": memory_type})["id"]
    return ids
