"""Generators: each writes a file the repository keeps (a table, a fixture, the README's
pictures). Each runs from the repository root as ``python -m scripts.NAME``."""
