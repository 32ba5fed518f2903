"""The mark for tests that need the local model's weights and engine on this machine."""

from __future__ import annotations

import pytest

from agent_memory.embedders.local import unavailable_reason

REASON = unavailable_reason()
needs_model = pytest.mark.skipif(REASON is not None, reason=f"local model: {REASON}")
