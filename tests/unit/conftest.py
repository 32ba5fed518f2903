"""The fast tier: every test here runs in this process, with no PostgreSQL
(tests/support/in_process.py fails one that starts a process or connects to PostgreSQL)."""

from __future__ import annotations

from tests.support.in_process import in_process_only, pytest_runtest_makereport

__all__ = ["in_process_only", "pytest_runtest_makereport"]
