"""Embedders: the seam (base.py) and the providers that register with it.

A provider is a module of this package that defines ``PROVIDER`` (a ``base.Provider``):
Ollama over HTTP (ollama.py) and a model in this process (local.py). Adding one is adding its
module; ``--embedder`` offers every registered name. ``choose`` is the one place that
decides which provider serves a database; nothing here loads a model or opens a connection
until a text is embedded.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil

from agent_memory.contract.models import Pin
from agent_memory.embedders.base import READY, Embedder, Provider
from agent_memory.settings import Settings

log = logging.getLogger(__name__)

AUTO, NONE = "auto", "none"


def _discover() -> dict[str, Provider]:
    found: list[Provider] = []
    for info in pkgutil.iter_modules(__path__):
        provider = getattr(importlib.import_module(f"{__name__}.{info.name}"), "PROVIDER", None)
        if isinstance(provider, Provider):
            found.append(provider)
    return {p.name: p for p in sorted(found, key=lambda p: (p.auto_rank, p.name))}


PROVIDERS = _discover()
MODES = (AUTO, *PROVIDERS, NONE)


def choose(mode: str, stored: Pin | None, settings: Settings) -> Embedder | None:
    """The embedder for a database pinned to ``stored`` (None: no vector yet).

    ``none``: keyword search only. A provider's name: that provider, whatever the pin (a
    database pinned to another stays keyword-only until ``reembed``). ``auto``: a pinned
    database's own provider and model (when it is not there, searches are keyword-only,
    never another model's vectors); an unpinned one takes the first provider that is ready,
    in rank order, else the first (keyword-only until it answers).
    """
    if mode == NONE:
        return None
    if mode != AUTO:
        return PROVIDERS[mode].make(settings, None)
    if stored is not None:
        return PROVIDERS[stored.provider].make(settings, stored.model)
    candidates = list(PROVIDERS.values())
    for provider in candidates:
        reason = provider.blocked()
        if reason is not None:
            log.info("the %s embedder cannot run here (%s)", provider.name, reason)
            continue
        embedder = provider.make(settings, None)
        if embedder.status() == READY:
            return embedder
        log.info("%s is not ready: trying the next embedder", embedder.describe())
    return candidates[0].make(settings, None)


def outlook(mode: str, stored: Pin | None, settings: Settings) -> str:
    """One sentence for an agent on how its searches will run, known without asking a
    server or loading a model (it goes into the MCP server's instructions before the first
    answer)."""
    if mode == NONE:
        return "Search is by keyword only (search by meaning is off: --embedder none)."
    model = None
    if mode == AUTO and stored is not None:  # the pin decides
        mode, model = stored.provider, stored.model
    if mode != AUTO:
        provider = PROVIDERS[mode]
        reason = provider.blocked()
        if reason is not None:
            phrase = provider.outlook(settings, model)
            return f"Search is by keyword only: {phrase} cannot run here ({reason})."
        return _with([provider], settings, model)
    runnable = [p for p in PROVIDERS.values() if p.blocked() is None]
    return _with(runnable or list(PROVIDERS.values())[:1], settings, None)


def _with(providers: list[Provider], settings: Settings, model: str | None) -> str:
    phrases = [p.outlook(settings, model) for p in providers]
    first = providers[0]
    if len(providers) == 1 and not first.needs_server:
        return f"Search is by meaning and keyword, with {phrases[0]}."
    if len(providers) == 1:
        return (
            f"Search is by meaning and keyword when {phrases[0]} answers, else by keyword only"
            f"{_hint()}."
        )
    return (
        f"Search is by meaning and keyword, with {phrases[0]} when it answers, else "
        f"{' else '.join(phrases[1:])}."
    )


def _hint() -> str:
    from agent_memory import DISTRIBUTION

    return f" (search by meaning without a server: pip install '{DISTRIBUTION}[local]')"
