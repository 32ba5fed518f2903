"""The test suite, a folder per tier (tests/support/tiers.py): unit, engines, slow, e2e; what
several files share is in support/, the shared fixtures in conftest.py."""
