"""A fact and its rewording: what the near-duplicate hint tests store, in process and
spawned."""

from __future__ import annotations

FIRST = "We chose PostgreSQL as the primary datastore for the billing service."
REWORDED = (
    "The billing service stores its data in PostgreSQL; that was our pick for the main database."
)
