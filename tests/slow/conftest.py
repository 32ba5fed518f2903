"""In process but too long for the fast tier: the local model's quality sets and its own
tests, and tests at scale. As in tests/unit, a test here may neither start a process nor
connect to PostgreSQL (tests/support/in_process.py)."""

from __future__ import annotations

from tests.support.in_process import in_process_only, pytest_runtest_makereport

__all__ = ["in_process_only", "pytest_runtest_makereport"]
