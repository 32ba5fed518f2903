"""The peers' files imported into PostgreSQL: the same round trip as on SQLite."""

from __future__ import annotations

import pytest

from tests.support.peers import CASES, check_round_trip

pytest_plugins = ["tests.support.pg_fixtures"]


@pytest.mark.parametrize("source", CASES)
def test_a_peers_own_file_round_trips_on_postgresql(pg_url, source):
    check_round_trip(pg_url, source)
