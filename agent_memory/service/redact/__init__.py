"""Secrets never stored: high-confidence secret shapes are replaced before a write.

Agents paste keys and tokens into what they remember, and every runtime on the machine,
every export and every team database would then hold them. The service calls
:func:`redact` on every text field of a memory (store, update, both imports) after
validating it and before embedding or writing it. Only shapes that are secrets with high
confidence are touched, so that prose, code and hashes stay as written: vendor prefixes
with their lengths, our own access tokens, PEM private key blocks, JWTs, HTTP
credentials, URL passwords, and the values of keys named for a secret (``password=``,
``api_key:``) that look like one.

Linear time, whatever the text. A rule's pattern starts only where the run of characters
it consumes begins (never inside a run another start of it would consume), consumes runs
possessively (no backtracking into them), and leaves every judgment that needs more than
a character class (lengths, mixed case, what a value looks like) to Python on what it
matched. So a start fails within its own run, or matches; a match is judged once, and the
scan resumes after what its judge read. Light imports only (the stdlib, the fields table,
who acts, and the shapes of our tokens and OAuth secrets): imported on every server's start.

This module is the engine; the rules are the table of redact_rules.py, and what the value
after a key named for a secret is, redact_values.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

from agent_memory.contract import fields
from agent_memory.contract.models import Filters
from agent_memory.service import actor
from agent_memory.service.redact.rules import RULES, Rule

__all__ = ["MARKER", "RULES", "Rule", "filters", "import_step", "redact", "redact_fields"]

MARKER = "[redacted:{}]"
# The text fields of a memory, and of an earlier version (by the fields of a memory it
# holds), whose secrets are replaced before a write: the fields table marks them.
MEMORY_FIELDS = fields.redacted_names()
VERSION_FIELDS = fields.redacted_names(version=True)


def redact(text: str) -> tuple[str, list[str]]:
    """``text`` with each secret replaced by its marker, and the kinds replaced: one entry
    per secret, in the order of RULES (so ``len`` is how many were redacted)."""
    found: list[str] = []
    folded = text.lower()  # for the hints: a marker written never makes a pattern match
    for rule in RULES:
        if any(hint in folded for hint in rule.hints):
            text = _apply(rule, text, found)
    return text, found


def redact_fields(values: MutableMapping[str, Any], names: Iterable[str]) -> list[str]:
    """Replace, in ``values``, the secrets of the text fields ``names`` (a string, or each
    string of a list; those present); the kinds replaced, field by field."""
    found: list[str] = []
    for name in names:
        value = values.get(name)
        if isinstance(value, str):
            values[name], kinds = redact(value)
            found += kinds
        elif isinstance(value, list):
            pairs = [redact(item) for item in value]
            values[name] = [text for text, _ in pairs]
            found += [kind for _, kinds in pairs for kind in kinds]
    return found


def import_step(on: bool) -> Callable[[dict[str, Any]], list[str]]:
    """What an import does to each record before it is written, and what its dry run shows
    (so the two cannot differ): a memory's writers stamped (the file's, else whoever
    imports), then, unless redaction is off (``on``), the secrets of every text field of a
    memory or of a version replaced. The step answers the kinds replaced."""

    def step(record: dict[str, Any]) -> list[str]:
        if record.get("record") == "version":
            names = VERSION_FIELDS
        else:
            actor.stamp(record)
            names = MEMORY_FIELDS
        return redact_fields(record, names) if on else []

    return step


def _apply(rule: Rule, text: str, found: list[str]) -> str:
    """One rule over the whole text: each match judged once, and the scan resumed after
    what its judge read (a value is never searched again for the rule's start)."""
    marker = MARKER.format(rule.kind)
    pieces: list[str] = []
    copied = position = 0
    search = rule.pattern.search
    while (match := search(text, position)) is not None:
        start, end, secret = rule.judge(match)
        if secret:
            pieces += (text[copied:start], marker)
            copied = end
            found.append(rule.kind)
        position = max(end, match.end())
    if not pieces:
        return text
    pieces.append(text[copied:])
    return "".join(pieces)


def filters(on: bool, given: Filters) -> Filters:
    """A search's or a list's filters with their tag, scope and writer redacted as stored
    ones are (``on``: redaction is on), so that a filter naming a secret finds its memory."""
    if not on:
        return given
    tag, scope, by = (
        None if v is None else redact(v)[0] for v in (given.tag, given.scope, given.by)
    )
    return dataclasses.replace(given, tag=tag, scope=scope, by=by)
