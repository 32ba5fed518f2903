"""Benchmarks of agent-memory. Each script runs from the repository root as a module,
``python -m bench.NAME --help``; what they share is in ``bench._common``. Speed is measured
here, never asserted in tests."""
