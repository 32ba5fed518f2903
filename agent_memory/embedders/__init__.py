"""Embedders: the seam (base.py) and its providers, Ollama over HTTP (ollama.py) and a model
in this process (local.py). ``choose`` is the one place that decides which one serves a
database; nothing here loads a model or opens a connection until a text is embedded.
"""

from __future__ import annotations

import logging

from agent_memory import DISTRIBUTION
from agent_memory.contract.models import LOCAL, Pin
from agent_memory.embedders.base import READY, Embedder

log = logging.getLogger(__name__)

AUTO, OLLAMA, NONE = "auto", "ollama", "none"
MODES = (AUTO, OLLAMA, LOCAL, NONE)


def choose(mode: str, stored: Pin | None, *, ollama_url: str, ollama_model: str) -> Embedder | None:
    """The embedder for a database pinned to ``stored`` (None: no vector yet).

    ``none``: keyword search only. ``ollama`` and ``local``: that provider, whatever the pin
    (a database pinned to another stays keyword-only until ``reembed``). ``auto``: a pinned
    database's own provider and model (when it is not there, searches are keyword-only,
    never another model's vectors); an unpinned one takes Ollama when it answers with the
    configured model, else the local model when it can run here, else Ollama all the same
    (keyword-only until it answers).
    """
    from agent_memory.embedders.local import Local, unavailable_reason
    from agent_memory.embedders.ollama import Ollama

    if mode == NONE:
        return None
    if mode == LOCAL:
        return Local()
    if mode == OLLAMA:
        return Ollama(ollama_url, ollama_model)
    if stored is not None:
        if stored.provider == LOCAL:
            return Local()
        return Ollama(ollama_url, stored.model)
    ollama = Ollama(ollama_url, ollama_model)
    if ollama.status() == READY:
        return ollama
    reason = unavailable_reason()
    if reason is None:
        log.info("Ollama does not answer with %s: embedding with the local model", ollama_model)
        return Local()
    log.info("the local model cannot run here (%s)", reason)
    return ollama


def outlook(mode: str, stored: Pin | None, *, ollama_model: str) -> str:
    """One sentence for an agent on how its searches will run, known without asking Ollama
    or loading a model (it goes into the MCP server's instructions before the first answer)."""
    if mode == NONE:
        return "Search is by keyword only (search by meaning is off: --embedder none)."
    from agent_memory.embedders import local

    if mode == AUTO and stored is not None:  # the pin decides
        mode, ollama_model = stored.provider, stored.model
    reason = local.unavailable_reason()
    by_local = f"the local model {local.MODEL_NAME} ({local.DIMENSION} dimensions, in process)"
    if mode == LOCAL:
        if reason is not None:
            return f"Search is by keyword only: {by_local} cannot run here ({reason})."
        return f"Search is by meaning and keyword, with {by_local}."
    if mode == AUTO and reason is None:
        return (
            f"Search is by meaning and keyword, with Ollama's {ollama_model} when it answers, "
            f"else {by_local}."
        )
    return (
        f"Search is by meaning and keyword when Ollama answers with {ollama_model}, else by "
        f"keyword only (search by meaning without Ollama: pip install '{DISTRIBUTION}[local]')."
    )
