"""Keeping a memory store clean: exact and near duplicates, supersede, history and
as-of, tidy."""
