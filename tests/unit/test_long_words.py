"""Words at PostgreSQL's lexeme limit: an engine error is logged cut short, so nothing of the
word reaches the log."""

from __future__ import annotations

import pytest

from agent_memory.contract.errors import StorageFault
from agent_memory.storage import faults


def test_an_engine_error_is_logged_cut_short():
    """An engine's message may quote a value (a word, a parameter): only its start is kept."""

    @faults.guard((ValueError,))
    def failing() -> None:
        raise ValueError("word is too long in tsquery: " + "x" * 5000)

    with pytest.raises(StorageFault) as caught:
        failing()
    assert caught.value.detail.startswith("word is too long in tsquery: xxx")
    assert len(caught.value.detail) <= faults.MAX_DETAIL_CHARS + 1
    assert caught.value.detail.endswith("…")
