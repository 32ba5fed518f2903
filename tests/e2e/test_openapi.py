"""The live daemon serves its OpenAPI document and honours it (schemathesis)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.openapi import document
from tests.support.rest_daemon import RestDaemon

SCHEMATHESIS_EXAMPLES = 30


def test_the_daemon_serves_the_document(db_path):
    with RestDaemon(db_path) as daemon:
        response = daemon.request("GET", "/openapi.json")
        assert response.status_code == 200
        assert response.headers["Content-Type"].startswith("application/json")
        assert response.json() == document()
        assert daemon.stop() == 0


def test_property_based_run_finds_no_500_and_no_violation(db_path, tmp_path):
    st = Path(sys.executable).with_name("schemathesis")
    command = [str(st)] if st.exists() else [shutil.which("schemathesis") or "schemathesis"]
    with RestDaemon(db_path) as daemon:
        daemon.request("POST", "/api/memories", json={"content": "seed memory", "type": "TODO"})
        proc = subprocess.run(
            [
                *command,
                "run",
                f"{daemon.url}/openapi.json",
                "--checks",
                "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
                "--max-examples",
                str(SCHEMATHESIS_EXAMPLES),
                "--phases",
                "examples,coverage,fuzzing",
                "--seed",
                "1",
                "--generation-deterministic",
                "--request-timeout",
                "30",
                "--report-dir",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
        )
        daemon.stop()
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "500" not in "".join(daemon.stderr_lines)
