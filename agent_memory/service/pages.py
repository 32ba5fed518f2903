"""A search's answer as every transport returns it: the page's results (each with why it is
there, when explained), within the caller's budget, and how the page was made.

The budget (``max_chars``) is what an agent pays to read the page: each result counts as its
JSON text, with its ``why`` and ``related`` when asked (contract.models.json_chars). The
results are offered best first and each is kept whole when it fits in what is left, else left
out (contract.models.Budget, the session brief's rule too); ``more`` tells how many of the
page's results were left out, so the agent knows to ask again with more room.
"""

from __future__ import annotations

import functools
from typing import Any

from agent_memory.contract.models import Budget, SearchPage, json_chars


def answer(page: SearchPage, explain: bool, max_chars: int | None) -> dict[str, Any]:
    """{search_mode, results} (+ more with a budget, + explain when asked)."""
    if explain:
        for result in page.results:
            result["why"] = page.why[result["id"]]
    shaped: dict[str, Any] = {"search_mode": page.mode, "results": page.results}
    if max_chars is not None:
        budget = Budget(max_chars)
        shaped["results"] = [
            r for r in page.results if budget.take(r["content"], functools.partial(json_chars, r))
        ]
        shaped["more"] = budget.more
    if explain:
        shaped["explain"] = page.explain
    return shaped
