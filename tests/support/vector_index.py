"""Loading the SQLite store's in-process vector index on demand, for tests that compare its
answers with the SQL leg's (a search otherwise loads it in the background)."""

from __future__ import annotations

from typing import Any


def load_vector_index(store: Any) -> None:
    """Load ``store``'s vector index now (nothing without numpy)."""
    index = store._vector_index()
    if index is not None:
        index.load()
