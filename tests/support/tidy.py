"""Memories that say one rule in several ways, for the tidy tests in process and on both
engines."""

from __future__ import annotations

FIRST = "Deploys run the database migrations first, then restart the API"
AGAIN = "Run the database migrations first on deploys; then restart API"


# The same rule said shortly (newest), and two fuller versions that each add their own words.
SHORT = "Run the database migrations first on deploys, then restart the API"
WITH_OPS = "Run the database migrations first on deploys, then restart the API; notify ops"
WITH_OWNER = "Run the database migrations first on deploys, then restart the API; page the owner"
