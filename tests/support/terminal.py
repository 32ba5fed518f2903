"""The terminal commands run in process through click's runner, as the tests drive them."""

from __future__ import annotations

from click.testing import CliRunner, Result

from agent_memory.cli.main import cli


def am(db_path, *args: str, input: str | bytes | None = None) -> Result:
    """``agent-memory --db DB ARGS``; an exception other than the exit fails the test."""
    result = CliRunner().invoke(cli, ["--db", str(db_path), *args], input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def am_with_ollama(db_path, ollama, *args: str, embedder: str = "auto") -> Result:
    """``agent-memory`` on DB with the fake Ollama's URL and ``--embedder`` (the result as
    it is: these tests look at failures too)."""
    return CliRunner().invoke(
        cli, ["--db", str(db_path), "--embedder", embedder, "--ollama-url", ollama.url, *args]
    )
