"""Which database a daemon serves, proved without giving the proof away.

``agent-memory ui`` must know whether the daemon at an address serves the database it was
asked for before it sends the person there (their edits and forgets go where the page goes).
Anything computable from the location (a hash of the path or of the URL) is no proof: a
program that listens on the port first can compute it too, and two PostgreSQL services
leading to different databases look alike in their URLs. So each database holds a random
128-bit id of its own (the ``database_id`` row of its ``meta`` table, written by the schema
migration that brought it, or with the schema of a new database), readable only by whoever
can read the database.

The id never leaves a process that read it. ``ui`` sends a fresh random challenge; the
daemon answers ``proof(key, challenge, address)``, an HMAC keyed with the id, and ``ui``
compares that with its own. An impostor that cannot read the database cannot answer, and a
past answer is of no use for another challenge. The id is never sent, so asking a port
teaches its listener nothing. The proof names the address the daemon listens on, so a
program on one port cannot pass on the proof of the real daemon listening on another (ui
compares it with the address it reached).

The key also names where the database is (``place``: a SQLite file's real path, a PostgreSQL
database's name), so a copy of a file, which holds the same id, is not taken for the
original.
"""

from __future__ import annotations

import hashlib
import hmac
import re

# A challenge: 128 random bits as lowercase hex, fresh for each question.
CHALLENGE = re.compile(r"[0-9a-f]{32}")


def key(stored_id: str, place: str) -> bytes:
    """The secret a daemon proves it knows: the database's stored id with its place."""
    return hashlib.sha256(f"{stored_id}\0{place}".encode()).digest()


def challenge() -> str:
    """A fresh challenge; only ``ui`` asks one (secrets imports random: not on every open)."""
    import secrets

    return secrets.token_hex(16)


def proof(secret: bytes, challenge: str, address: str) -> str:
    """The answer to ``challenge`` of the daemon listening at ``address`` (IP:PORT as the
    socket names it), for the database whose key is ``secret``."""
    message = f"{challenge} {address}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def same(expected: str, given: object) -> bool:
    """Whether a daemon's answer is the proof expected (in constant time)."""
    return isinstance(given, str) and hmac.compare_digest(expected, given)
