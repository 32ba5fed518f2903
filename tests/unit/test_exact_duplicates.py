"""Exact duplicates at store time: what counts as the same content (whitespace only is
normalised). tests/engines/test_exact_duplicates.py holds the store-time behaviour on both
engines."""

from __future__ import annotations

from agent_memory.contract.models import content_hash, normalised


def test_normalised_content_and_its_hash_ignore_whitespace_only():
    assert normalised("  a\tb\n\n c  ") == "a b c"
    assert content_hash("a  b") == content_hash(" a\nb ") != content_hash("a b c")
    assert content_hash("A b") != content_hash("a b")  # case counts
