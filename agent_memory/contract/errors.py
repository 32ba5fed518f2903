"""The named exceptions every layer raises; transports map them to the wire.

Each class's docstring is its message template, in the style of sqlite-utils and llm.
"""

from __future__ import annotations

from agent_memory import DISTRIBUTION
from agent_memory.contract.vocabulary import count


class AgentMemoryError(Exception):
    """agent-memory error"""


class InvalidArgument(AgentMemoryError):
    """invalid argument: {detail}"""

    def __init__(self, detail: str, *, prefixed: bool = True) -> None:
        self.detail = detail
        super().__init__(f"invalid argument: {detail}" if prefixed else detail)


class InvalidType(InvalidArgument):
    """invalid argument: {detail}

    A field that is missing or has the wrong JSON type: the body does not deserialize.
    Same message as any invalid argument; REST answers 422 for it on POST /api/memories
    and POST /api/search: the status clients of the REST API expect for a body that does
    not deserialize.
    """


class UnknownField(AgentMemoryError):
    """failed to deserialize parameters: unknown field `{field}`, expected one of {expected}
    (did you mean `{suggestion}`?)

    serde's wording, the message clients expect for an unknown field; the hint is ours and
    only there when a known field is close to the one sent.
    """

    def __init__(
        self, field: str, expected: tuple[str, ...], suggestion: str | None = None
    ) -> None:
        self.field = field
        self.suggestion = suggestion
        names = ", ".join(f"`{name}`" for name in expected)
        if not expected:
            known = "there are no fields"
        elif len(expected) == 1:
            known = f"expected {names}"
        else:
            known = f"expected one of {names}"
        hint = f" (did you mean `{suggestion}`?)" if suggestion else ""
        super().__init__(
            f"failed to deserialize parameters: unknown field `{field}`, {known}{hint}"
        )


class StorageError(AgentMemoryError):
    """{operation} failed due to a storage error (details are in the server log)"""

    def __init__(self, operation: str) -> None:
        self.operation = operation
        super().__init__(
            f"{operation} failed due to a storage error (details are in the server log)"
        )


class SchemaTooNew(AgentMemoryError):
    """database schema is version {found} but this binary supports up to version {supported} —
    upgrade agent-memory (pipx upgrade DISTRIBUTION) or point --db at a different file"""

    def __init__(self, found: int, supported: int) -> None:
        self.found = found
        self.supported = supported
        super().__init__(
            f"database schema is version {found} but this binary supports up to version "
            f"{supported} — upgrade agent-memory (pipx upgrade {DISTRIBUTION}) "
            "or point --db at a different file"
        )


class DatabaseOpenError(AgentMemoryError):
    """cannot open database {path}: {cause}"""

    def __init__(self, path: object, cause: str) -> None:
        self.path = path
        self.cause = cause
        super().__init__(f"cannot open database {path}: {cause}")


class DatabaseMissing(AgentMemoryError):
    """no database at {path}

    A command that only reads (or changes what exists) found no database file: it creates
    nothing, not even the directories.
    """

    def __init__(self, path: object) -> None:
        self.path = path
        super().__init__(f"no database at {path}")


class DatabaseBusy(AgentMemoryError):
    """database {path} is locked by another process; gave up after {waited} s

    A read that must answer at once (the session brief) found the file locked (an
    exclusive lock, a migration) for longer than it may wait.
    """

    def __init__(self, path: object, waited_secs: float) -> None:
        self.path = path
        super().__init__(
            f"database {path} is locked by another process; gave up after {waited_secs:g} s"
        )


class BackupFailed(AgentMemoryError):
    """cannot back up the database to {path} before migrating ({cause}); the database was not
    migrated"""

    def __init__(self, path: object, cause: str) -> None:
        self.path = path
        self.cause = cause
        super().__init__(
            f"cannot back up the database to {path} before migrating ({cause}); "
            "the database was not migrated"
        )


def _verb(command: str) -> str:
    """What a command does, in a sentence: reembed re-embeds."""
    return "re-embed" if command == "reembed" else command


class EmbedderUnavailable(AgentMemoryError):
    """cannot re-embed: {embedder} did not answer{progress}; {advice}, then run reembed again
    to go on

    ``command`` is the one that stopped (reembed, embed): the message names it.
    """

    def __init__(self, embedder: str, advice: str, done: int = 0, command: str = "reembed") -> None:
        self.embedder = embedder
        progress = f" after {count(done, 'memory')}" if done else ""
        super().__init__(
            f"cannot {_verb(command)}: {embedder} did not answer{progress}; {advice}, then run "
            f"{command} again to go on"
        )


class EmbeddingOff(AgentMemoryError):
    """cannot {verb}: search by meaning is off (--embedder none); run it with --embedder
    auto, ollama or local (the verb: re-embed for reembed, as EmbedderUnavailable says)"""

    def __init__(self, command: str) -> None:
        super().__init__(
            f"cannot {_verb(command)}: search by meaning is off (--embedder none); run it with "
            "--embedder auto, ollama or local"
        )


class PinMismatch(AgentMemoryError):
    """cannot embed: this database's vectors were made with {stored}, not with {embedder};
    run `{reembed}` to move it to that model, or embed with the one it is pinned to
    (--embedder auto)"""

    def __init__(self, stored: str, embedder: str, reembed: str) -> None:
        super().__init__(
            f"cannot embed: this database's vectors were made with {stored}, not with "
            f"{embedder}; run `{reembed}` to move it to that model, or embed with the one it "
            "is pinned to (--embedder auto)"
        )


class StorageFault(AgentMemoryError):
    """a store's engine failed: {detail}

    Raised by a store for anything its database engine raises, with the engine's text as
    the detail. The service logs the detail and answers StorageError: engine text never
    reaches a client.
    """

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)


class SearchTimedOut(AgentMemoryError):
    """a search's reads ran past the time budget the service gave them, and were stopped"""


class FormatTooNew(AgentMemoryError):
    """file is format version {found} but this binary reads up to version {readable} —
    upgrade agent-memory"""

    def __init__(self, found: int, readable: int = 1) -> None:
        self.found = found
        super().__init__(
            f"file is format version {found} but this binary reads up to version {readable} — "
            "upgrade agent-memory"
        )


class Forbidden(Exception):
    """the caller's access token may not do this (read-only, or another scope): HTTP 403;
    the message says why"""
