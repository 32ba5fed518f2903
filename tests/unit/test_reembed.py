"""``agent-memory reembed``: a database moves to another embedding model, resumably."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from agent_memory.contract.models import Pin
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.fake_ollama import embedder_for
from tests.support.spawned import NO_OLLAMA_URL

NOMIC = Pin("nomic-embed-text", 768, "nomic")
MXBAI = Pin("mxbai-embed-large", 768, "none")
TEXTS = [f"memory number {i} about the datastore" for i in range(5)]


@pytest.fixture
def pinned(db_path, ollama):
    """Five memories with nomic-embed-text vectors."""
    ollama.models = ["nomic-embed-text:latest", "mxbai-embed-large:latest"]
    svc = MemoryService(open_store(db_path), embedder=embedder_for(ollama.url))
    for text in TEXTS:
        svc.store({"content": text, "type": "TODO"})
    svc.close()
    return db_path


def reembed(db_path, url, *args, model="mxbai-embed-large"):
    from agent_memory.cli.main import cli

    return CliRunner().invoke(
        cli, ["--db", str(db_path), "--ollama-url", url, "--embed-model", model, "reembed", *args]
    )


def state(db_path, ollama, model="mxbai-embed-large"):
    svc = MemoryService(open_store(db_path), embedder=embedder_for(ollama.url, model))
    try:
        return svc.db.pin(), svc.db.embedding_counts(), svc
    finally:
        svc.close()


def test_reembed_moves_every_memory_to_the_configured_model(pinned, ollama):
    before = len(ollama.embedded)
    result = reembed(pinned, ollama.url)
    assert result.exit_code == 0, result.output
    assert (
        "re-embedded 5 memories with mxbai-embed-large (ollama, 768 dimensions, none prefixes)"
        in result.stderr
    )
    pin, counts, _ = state(pinned, ollama)
    assert pin == MXBAI and counts == (5, 0)
    assert sorted(ollama.embedded[before + 1 :]) == sorted(TEXTS)  # no nomic prefixes now
    svc = MemoryService(open_store(pinned), embedder=embedder_for(ollama.url, "mxbai-embed-large"))
    try:
        assert svc.search({"query": "datastore"})["search_mode"] == "hybrid"
    finally:
        svc.close()


def test_an_interrupted_reembed_resumes_where_it_stopped(pinned, ollama):
    ollama.fail_after = ollama.embed_requests() + 2  # the probe and one batch of two
    result = reembed(pinned, ollama.url, "--batch", "2")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "cannot re-embed: mxbai-embed-large at " + ollama.url + " did not answer after 2 "
        "memories; check that Ollama is running and the model is pulled (ollama pull "
        "mxbai-embed-large), then run reembed again to go on"
    )
    pin, counts, _ = state(pinned, ollama)
    assert pin == MXBAI and counts == (5, 3)  # two kept, three to go
    ollama.fail_after = None
    before = len(ollama.embedded)
    result = reembed(pinned, ollama.url, "--batch", "2")
    assert result.exit_code == 0, result.output
    assert "re-embedded 3 memories" in result.stderr
    assert len(ollama.embedded) - before == 1 + 3  # the probe, then only what was left
    assert state(pinned, ollama)[1] == (5, 0)


def test_reembed_reports_each_batch_and_embeds_rows_stored_while_it_runs(pinned, ollama):
    svc = MemoryService(open_store(pinned), embedder=embedder_for(ollama.url, "mxbai-embed-large"))
    other = MemoryService(open_store(pinned))  # another process's stores, without an embedder
    seen: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total))
        if done == 2 and total == 5:
            other.store({"content": "stored during the reembed", "type": "TODO"})

    try:
        embedded, pin = svc.reembed(batch=2, progress=progress)
        assert (embedded, pin) == (6, MXBAI)
        assert seen == [(0, 5), (2, 5), (4, 5), (6, 6)]
        assert svc.db.embedding_counts() == (6, 0)
    finally:
        other.close()
        svc.close()


def test_reembed_on_an_up_to_date_database_does_nothing_unless_asked(pinned, ollama):
    result = reembed(pinned, ollama.url, model="nomic-embed-text")
    assert result.exit_code == 0 and "re-embedded 0 memories" in result.stderr
    result = reembed(pinned, ollama.url, "--all", model="nomic-embed-text")
    assert result.exit_code == 0 and "re-embedded 5 memories" in result.stderr
    assert state(pinned, ollama, "nomic-embed-text")[:2] == (NOMIC, (5, 0))


def test_reembed_pins_a_database_that_has_no_vectors_yet(db_path, ollama):
    svc = MemoryService(open_store(db_path))  # no Ollama: every row pending
    for text in TEXTS:
        svc.store({"content": text, "type": "TODO"})
    svc.close()
    result = reembed(db_path, ollama.url, model="nomic-embed-text")
    assert result.exit_code == 0 and "re-embedded 5 memories" in result.stderr
    assert state(db_path, ollama, "nomic-embed-text")[:2] == (NOMIC, (5, 0))


@pytest.mark.parametrize("why", ["unreachable", "model-missing"])
def test_reembed_without_ollama_is_one_line_and_changes_nothing(pinned, ollama, why):
    url = NO_OLLAMA_URL if why == "unreachable" else ollama.url
    ollama.models = ["nomic-embed-text:latest"]
    result = reembed(pinned, url)
    assert result.exit_code == 1
    assert (
        result.stderr.strip().splitlines()[-1].startswith("cannot re-embed: mxbai-embed-large at ")
    )
    assert "Traceback" not in result.output
    assert state(pinned, ollama, "nomic-embed-text")[:2] == (NOMIC, (5, 0))


def test_reembed_with_embedding_off_is_one_line(pinned, ollama):
    from agent_memory.cli.main import cli

    result = CliRunner().invoke(cli, ["--db", str(pinned), "--embedder", "none", "reembed"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "cannot re-embed: search by meaning is off (--embedder none); run it with --embedder "
        "auto, ollama or local"
    )
    assert state(pinned, ollama, "nomic-embed-text")[:2] == (NOMIC, (5, 0))


def test_reembed_logs_nothing_at_the_default_level(pinned, ollama):
    result = reembed(pinned, ollama.url)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "re-embedded 5 memories with mxbai-embed-large (ollama, 768 dimensions, none prefixes)"
    ]
    assert "INFO" in reembed(pinned, ollama.url, "--all", "--log-level", "info").stderr


def test_one_memory_re_embedded_is_said_in_the_singular(db_path, ollama):
    svc = MemoryService(open_store(db_path))
    svc.store({"content": TEXTS[0], "type": "TODO"})
    svc.close()
    result = reembed(db_path, ollama.url, model="nomic-embed-text")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[-1].startswith("re-embedded 1 memory with nomic-embed-text")
