"""The fast tier: in process, no PostgreSQL (its conftest refuses a test that spawns or
connects); run it with `.venv/bin/pytest tests/unit --no-cov`."""
