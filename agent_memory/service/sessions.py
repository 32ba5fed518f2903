"""The web page's sign-in sessions, kept in the database (storage.sessions).

In the database, not a daemon's memory, so that they hold whichever worker process of a
``serve-rest --workers N`` daemon a request reaches: a session opened by one is found by
all, and a sign-out in one ends it in every one at once. A session keeps the token's name
and its secret's SHA-256, never the token, under the SHA-256 of its id (what a lookup
compares is no prefix of a live cookie, and the database never holds a usable cookie).
Sessions survive a restart of the daemon.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_memory.service.core import MemoryService

# A session ends after this long unused, and this long after sign-in whatever its use.
SESSION_IDLE_SECS = 12 * 3600
SESSION_MAX_AGE_SECS = 7 * 86_400
# Sessions kept at most, of one token and of all; past a token's cap its own least recently
# used session is dropped (its page signs in again), so that one token signing in again and
# again ends no one else's; past the whole cap (many tokens' worth), the least recently used.
MAX_SESSIONS_PER_TOKEN = 20
MAX_SESSIONS = 1000
SESSION_ID_BYTES = 32
# A session's "last seen" is written at most this often: a write per page request would be
# a write lock per request. Idle time and least-recent use are so known to the minute.
SEEN_EVERY_SECS = 60


@dataclass
class Session:
    name: str
    digest: str
    created: float
    seen: float


class Sessions:
    """The sign-in sessions of ``service``'s database, on its clock."""

    def __init__(
        self,
        service: MemoryService,
        *,
        idle_secs: float = SESSION_IDLE_SECS,
        max_age_secs: float = SESSION_MAX_AGE_SECS,
        cap: int = MAX_SESSIONS,
        per_token: int = MAX_SESSIONS_PER_TOKEN,
    ) -> None:
        self._service = service
        self._db = service.db
        self.idle_secs, self.max_age_secs, self.cap = idle_secs, max_age_secs, cap
        self.per_token = per_token

    def __len__(self) -> int:
        with self._service.storage("sign-in"):
            return self._db.count_sessions()

    def open(self, name: str, digest: str) -> str:
        """A new session of the token ``name``: its id, for the cookie. Ended sessions are
        dropped, then the token's own least recently used past its cap, then the least
        recently used of all past the whole cap."""
        session_id = secrets.token_urlsafe(SESSION_ID_BYTES)
        now = self._service.now()
        row = {"name": name, "digest": digest, "created": now, "seen": now}
        new = _key(session_id)
        with self._service.storage("sign-in"):
            self._db.put_session(new, row)
            live: list[tuple[bool, float, str]] = []
            own: list[tuple[bool, float, str]] = []
            ended: list[str] = []
            for key, other in self._db.sessions():
                if self._ended(other, now):
                    ended.append(key)
                else:
                    (own if other["name"] == name else live).append(
                        (key == new, other["seen"], key)
                    )
            own.sort(reverse=True)  # the new one, then the most recently used
            ended += [key for *_, key in own[self.per_token :]]
            live = sorted(live + own[: self.per_token], reverse=True)
            ended += [key for *_, key in live[self.cap :]]
            self._db.delete_sessions(ended)
        return session_id

    def find(self, session_id: str) -> Session | None:
        """The live session of this id, marked used now; None when unknown or ended."""
        key = _key(session_id)
        now = self._service.now()
        with self._service.storage("sign-in"):
            row = self._db.session(key)
            if row is None:
                return None
            if self._ended(row, now):
                self._db.delete_sessions([key])
                return None
            if now - row["seen"] >= SEEN_EVERY_SECS:
                row = {**row, "seen": now}
                self._db.touch_session(key, row)
        return Session(row["name"], row["digest"], row["created"], row["seen"])

    def close(self, session_id: str) -> None:
        with self._service.storage("sign-out"):
            self._db.delete_sessions([_key(session_id)])

    def _ended(self, row: dict, now: float) -> bool:
        return now - row["seen"] >= self.idle_secs or now - row["created"] >= self.max_age_secs


def _key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
