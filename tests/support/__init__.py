"""Helpers shared by several test files, and by the bench: fake and embedded servers, in-process
clients, the committed query sets and fills. Imported as ``tests.support.NAME`` from the
repository root (pytest's ``pythonpath``); nothing here imports ``bench``, ``conftest`` or a
test module (tests/unit/test_bench_package.py checks)."""
