"""Memories in and out of a database: the JSONL format, GSD's STATE.md, export and import."""
