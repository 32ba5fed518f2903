"""Every option of agent-memory, once: its flag, environment variable, default, kind and help.

The command line builds its options from this table (``cli/options.py``), the values a
command runs with are a :class:`Settings` read from it, and the README's table of options is
checked against it by a test. A new option is one row here (and its use). Standard library
only: every layer may read a default from here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Where each kind of value comes from on the command line (cli/options.py maps a kind to its
# click type): free text; a whole number at least ``minimum``; one of ``choices``; a file or
# an engine's URL; an on/off flag; HOST:PORT; NAME[:PORT]; N or auto; auto, none or a registered
# embedding provider's name.
TEXT, INTEGER, CHOICE, LOCATION, FLAG, ADDRESS, HOST, WORKERS, EMBEDDER = (
    "text",
    "integer",
    "choice",
    "location",
    "flag",
    "address",
    "host",
    "workers",
    "embedder",
)
GLOBAL = None  # an option of every command, given before or after its name
DB_ENV = "AGENT_MEMORY_DB"
LOG_LEVELS = ("debug", "info", "warning", "error")
DEFAULT_OLLAMA_URL = "http://localhost:11434"
DEFAULT_EMBED_MODEL = "nomic-embed-text"
DEFAULT_REST_PORT = 7437


@dataclass(frozen=True)
class Option:
    """One option: ``name`` is its Settings field and its click parameter."""

    name: str
    flag: str
    default: Any
    help: str
    env: str | None = None
    kind: str = TEXT
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    metavar: str | None = None
    command: str | None = GLOBAL  # the one subcommand that takes it, else every one
    multiple: bool = False


SETTINGS: tuple[Option, ...] = (
    Option(
        "db",
        "--db",
        None,
        "Database file, or a postgresql://user@host/dbname URL (needs the postgres extra). "
        "Default: $AGENT_MEMORY_DB, else memory.db in your user data directory.",
        env=DB_ENV,
        kind=LOCATION,
    ),
    Option(
        "embedder",
        "--embedder",
        "auto",
        "Who makes the vectors of search by meaning: auto (the database's own, else Ollama "
        "when it answers, else the local model when installed), ollama, local, or none "
        "(keyword search only).",
        env="AGENT_MEMORY_EMBEDDER",
        kind=EMBEDDER,
    ),
    Option(
        "ollama_url",
        "--ollama-url",
        DEFAULT_OLLAMA_URL,
        "Ollama base URL for embeddings (hybrid search).",
        env="AGENT_MEMORY_OLLAMA_URL",
    ),
    Option(
        "embed_model",
        "--embed-model",
        DEFAULT_EMBED_MODEL,
        "Ollama embedding model.",
        env="AGENT_MEMORY_EMBED_MODEL",
    ),
    Option(
        "sweep_interval",
        "--sweep-interval",
        3600,
        "Seconds between lifecycle sweeps (TTL expiry, decay refresh).",
        env="AGENT_MEMORY_SWEEP_INTERVAL",
        kind=INTEGER,
        minimum=1,
        metavar="SECONDS",
    ),
    Option(
        "max_content_bytes",
        "--max-content-bytes",
        1024 * 1024,
        "Largest memory content accepted (UTF-8 bytes); bigger stores and updates are refused.",
        env="AGENT_MEMORY_MAX_CONTENT_BYTES",
        kind=INTEGER,
        minimum=1,
        metavar="BYTES",
    ),
    Option(
        "redact",
        "--redact",
        "on",
        "Replace secrets (private keys, cloud and API keys, tokens, JWTs, passwords) "
        "in what is stored and imported by [redacted:KIND] markers.",
        env="AGENT_MEMORY_REDACT",
        kind=CHOICE,
        choices=("on", "off"),
    ),
    Option(
        "log_level",
        "--log-level",
        "info",
        "Log verbosity (logs always go to stderr).",
        env="AGENT_MEMORY_LOG",
        kind=CHOICE,
        choices=LOG_LEVELS,
    ),
    Option(
        "addr",
        "--addr",
        f"127.0.0.1:{DEFAULT_REST_PORT}",
        "Address to bind; [::1]:PORT for IPv6. Port 0 picks a free port.",
        kind=ADDRESS,
        metavar="HOST:PORT",
        command="serve-rest",
    ),
    Option(
        "allow_remote",
        "--allow-remote",
        False,
        "Accept any Host and Origin header (no DNS-rebinding check); prefer --public-host.",
        kind=FLAG,
        command="serve-rest",
    ),
    Option(
        "public_hosts",
        "--public-host",
        (),
        "Also accept this Host header (and Origin http(s)://NAME), e.g. the name a TLS "
        "proxy in front of the daemon is reached by; OAuth's issuer is https://NAME. "
        "Repeatable.",
        kind=HOST,
        metavar="NAME[:PORT]",
        command="serve-rest",
        multiple=True,
    ),
    Option(
        "workers",
        "--workers",
        "1",
        "Processes serving the port (auto: one per core). More answer more searches at "
        "once, on more cores; each holds its own embedder and vector index.",
        env="AGENT_MEMORY_WORKERS",
        kind=WORKERS,
        metavar="N|auto",
        command="serve-rest",
    ),
)
OPTIONS = {option.name: option for option in SETTINGS}


def options_of(command: str | None) -> tuple[Option, ...]:
    """The options of ``command`` (GLOBAL: those every command takes), in the table's order."""
    return tuple(option for option in SETTINGS if option.command == command)


@dataclass(frozen=True)
class Settings:
    """The global options' values a command runs with (one field per GLOBAL row)."""

    db: Path | str | None  # a file, or an engine's URL (kept as written)
    ollama_url: str = DEFAULT_OLLAMA_URL
    embed_model: str = DEFAULT_EMBED_MODEL
    sweep_interval: int = OPTIONS["sweep_interval"].default
    max_content_bytes: int = OPTIONS["max_content_bytes"].default
    redact: bool = True
    embedder: str = "auto"
    log_level: str = "info"

    @classmethod
    def of(cls, values: dict[str, Any]) -> Settings:
        """Settings from the parsed global options (choices as typed, in any case)."""
        given = {f.name: values[f.name] for f in dataclasses.fields(cls) if f.name in values}
        given["embedder"] = str(given.get("embedder", "auto")).lower()
        given["log_level"] = str(given.get("log_level", "info")).lower()
        given["redact"] = str(given.get("redact", "on")).lower() == "on"
        return cls(**given)
