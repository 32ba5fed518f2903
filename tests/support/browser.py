"""Debian's Chromium, driven by Playwright for Python (never a downloaded browser).

Used by the browser tests and by bench/web_page.py. Where Chromium or Playwright is missing
the tests skip, except in CI (``CI`` set), where they must run: .ci/run installs Chromium and
the test extra brings Playwright.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

CHROMIUM = (
    os.environ.get("AGENT_MEMORY_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
)
# Headless, and nothing that reaches beyond loopback (this machine's network is closed:
# without these Chromium keeps trying Google's hosts).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]


def missing() -> str | None:
    """Why the browser tests cannot run here (None when they can)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[test]')"
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


def launch(playwright):
    """A fresh headless Chromium (Playwright gives it a new empty user-data-dir)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
