"""A memory's relations as every engine reads them (and the SQLite session brief, which
imports no SQLAlchemy): one SQL text whose id test each engine writes in its dialect, and
one mapping of its rows."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

# Every relation touching one of the ids, seen from that end, at most {per_result} of them
# per id, newest first; {member} is the engine's "is one of the ids" (IN a list, = ANY).
NEIGHBOURS = """
SELECT e.self, e.other, e.kind, e.direction, m.type, m.content, m.tags FROM (
  SELECT *, row_number() OVER (
    PARTITION BY self ORDER BY created_at DESC, other DESC, kind) AS rank FROM (
      SELECT from_id AS self, to_id AS other, kind, 'out' AS direction, created_at
      FROM memory_links WHERE from_id {member}
      UNION ALL
      SELECT to_id, from_id, kind, 'in', created_at
      FROM memory_links WHERE to_id {member}
  ) AS edges
) AS e JOIN memories AS m ON m.id = e.other
WHERE e.rank <= {per_result}
ORDER BY e.self, e.rank
"""
NEIGHBOUR_KEYS = ("self", "id", "kind", "direction", "type", "content", "tags")


def neighbour_edges(found: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    """NEIGHBOURS rows as Store.neighbours gives them (tags decoded where the driver reads
    them as JSON text)."""
    out = []
    for row in found:
        edge = dict(zip(NEIGHBOUR_KEYS, row, strict=True))
        if isinstance(edge["tags"], str):
            edge["tags"] = json.loads(edge["tags"])
        out.append(edge)
    return out
