"""The test tiers, and what a run of the fast tier alone trims.

Each tier is a folder of tests/: unit (in process, no PostgreSQL: the fast tier), engines
(both engines, so PostgreSQL), e2e (spawned servers, the browser, npm) and slow (in process,
but too long for the fast tier). A property-based test runs every example it asks for in any
run that reaches past the fast tier, the full suite included, and a share of them when the
paths given to pytest all lie in tests/unit: the full run keeps the full search.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import ROOT

TIERS = ("unit", "engines", "e2e", "slow")
# The share of a property's examples the fast tier alone runs, and the fewest it runs.
FAST_SHARE = 5
FAST_MIN_EXAMPLES = 10

# Set by tests/conftest.py before any test module is imported.
fast_only = False


def tiers_of(args: list[str], invoked_in: Path) -> set[str]:
    """The tiers the paths of a pytest command line name: every tier when it names none
    (pytest then runs its testpaths), "other" for a path outside the tier folders."""
    if not args:
        return set(TIERS)
    found = set()
    for arg in args:
        path = (invoked_in / arg.split("::")[0]).resolve()
        try:
            parts = path.relative_to(ROOT / "tests").parts
        except ValueError:
            parts = ()
        found.add(parts[0] if parts and parts[0] in TIERS else "other")
    return found


def examples(full: int) -> int:
    """How many examples a property-based test asks for: ``full``, or its share in a run of
    the fast tier alone."""
    return max(FAST_MIN_EXAMPLES, full // FAST_SHARE) if fast_only else full
