"""Helpers shared by the tests and the bench: fake and embedded servers, the committed query
sets. Imported as ``tests.support.NAME`` from the repository root (pytest's ``pythonpath``);
nothing here imports ``bench`` or a test module."""
