"""End to end: the real ``agent-memory serve-rest`` over HTTP, beside a real MCP server."""

from __future__ import annotations

import signal
import threading

import anyio
import pytest
import requests
import sqlean
from mcp import Client, StdioServerParameters

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.rest_daemon import RestDaemon
from tests.support.spawned import executable, run_agent_memory, server_env

pytest_plugins = ["tests.support.pg_fixtures"]


def test_startup_line_and_a_round_trip(db_path):
    with RestDaemon(db_path) as daemon:
        assert daemon.host == "127.0.0.1" and daemon.port > 0
        stored = daemon.request(
            "POST", "/api/memories", json={"content": "over HTTP", "type": "TODO"}
        )
        assert (stored.status_code, stored.json()) == (201, {"id": 1})
        found = daemon.request("POST", "/api/search", json={"query": "http"})
        assert [r["id"] for r in found.json()["results"]] == [1]
        health = daemon.request("GET", "/health").json()
        assert health["status"] == "ok" and health["embedder"] == "unreachable"
        assert daemon.stop() == 0
    assert any(
        "sweep:" in line for line in daemon.stderr_lines
    )  # the lifecycle sweep runs here too


def test_ipv6_loopback(db_path):
    with RestDaemon(db_path, addr="[::1]:0") as daemon:
        assert daemon.host == "[::1]"
        assert daemon.request("GET", "/health").status_code == 200
        assert daemon.stop() == 0


def test_dns_rebinding_and_cross_site_requests_are_refused(db_path):
    with RestDaemon(db_path) as daemon:
        rebinding = daemon.request(
            "POST",
            "/api/memories",
            json={"content": "x", "type": "TODO"},
            headers={"Host": f"attacker.example:{daemon.port}"},
        )
        cross_site = daemon.request(
            "GET", "/api/memories", headers={"Origin": "http://attacker.example"}
        )
        assert (rebinding.status_code, cross_site.status_code) == (403, 403)
        assert daemon.request("GET", "/api/memories").json() == []  # nothing was written
        assert daemon.stop() == 0


@pytest.mark.parametrize(
    "addr", ["0.0.0.0:7437", "192.168.1.10:7437", "example.com:80", "[::]:7437"]
)
def test_non_loopback_needs_a_token(db_path, addr):
    proc = run_agent_memory("--db", str(db_path), "serve-rest", "--addr", addr, "--allow-remote")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        f"refusing to bind non-loopback address {addr}: no access token exists; "
        "create one with `agent-memory token create NAME` first"
    )


@pytest.mark.parametrize("addr", ["7437", "localhost", "127.0.0.1:99999", "[::1]7437", ":80"])
def test_malformed_addr_is_a_usage_error(db_path, addr):
    proc = run_agent_memory("--db", str(db_path), "serve-rest", "--addr", addr)
    assert proc.returncode == 2
    assert "--addr" in proc.stderr


def test_plain_http_off_loopback_warns_and_allow_remote_takes_any_host(db_path):
    token = run_agent_memory("--db", str(db_path), "token", "create", "team").stdout.strip()
    with RestDaemon(db_path, "--allow-remote", addr="0.0.0.0:0") as daemon:
        warning = "".join(daemon.stderr_lines)
        assert "WARNING" in warning and "TLS proxy" in warning and "0.0.0.0" in warning
        response = daemon.session.get(
            f"http://127.0.0.1:{daemon.port}/api/stats",
            headers={"Host": "memory.lan", "Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200
        assert daemon.stop() == 0


@pytest.mark.parametrize(
    ("signum", "sigint_ignored"),
    [(signal.SIGTERM, False), (signal.SIGINT, False), (signal.SIGINT, True)],
    ids=["SIGTERM", "Ctrl-C", "Ctrl-C, started in the background"],
)
def test_stopping_finishes_the_request_in_flight(db_path, signum, sigint_ignored):
    with RestDaemon(db_path, log_level="debug", sigint_ignored=sigint_ignored) as daemon:
        blocker = sqlean.connect(str(db_path), isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # the daemon's store will wait for this lock
        answer = {}
        thread = threading.Thread(
            target=lambda: answer.update(
                r=daemon.request(
                    "POST", "/api/memories", json={"content": "in flight", "type": "TODO"}
                )
            )
        )
        thread.start()
        daemon.read_stderr_until("request POST /api/memories")  # it is inside the daemon now
        daemon.terminate(signum)
        blocker.execute("COMMIT")
        blocker.close()
        thread.join(timeout=60)
        assert (answer["r"].status_code, answer["r"].json()) == (201, {"id": 1})
        assert daemon.stop() == 0, "".join(daemon.stderr_lines)
    conn = sqlean.connect(str(db_path))
    assert conn.execute("SELECT content FROM memories").fetchall() == [("in flight",)]
    conn.close()


def test_rest_and_mcp_share_one_file(location):
    with RestDaemon(location) as daemon:
        params = StdioServerParameters(
            command=executable(), args=["--db", str(location), "serve"], env=server_env()
        )

        async def main():
            async with Client(params) as mcp:
                daemon.request(
                    "POST", "/api/memories", json={"content": "stored over REST", "type": "PATTERN"}
                )
                seen_by_mcp = await mcp.call_tool("memory_search", {"query": "REST"})
                await mcp.call_tool(
                    "memory_store", {"content": "stored over MCP", "type": "PATTERN"}
                )
                seen_by_rest = daemon.request("POST", "/api/search", json={"query": "MCP"}).json()
                return seen_by_mcp, seen_by_rest

        seen_by_mcp, seen_by_rest = anyio.run(main)
        assert [r["content"] for r in seen_by_mcp.structured_content["results"]] == [
            "stored over REST"
        ]
        assert [r["content"] for r in seen_by_rest["results"]] == ["stored over MCP"]
        both = daemon.request("POST", "/api/search", json={"query": "stored"}).json()
        assert len(both["results"]) == 2
        assert daemon.stop() == 0
    # A PostgreSQL URL's password never reaches the log.
    assert not any("password" in line for line in daemon.stderr_lines)


def test_costly_searches_do_not_starve_the_daemon(db_path):
    # Issue 18: four ~600-byte searches held all four REST threads for seconds and /health
    # waited. Now the costly shapes are refused before they run, and any search stops at
    # service.SEARCH_BUDGET_SECS, so /health is answered while they are in flight.
    service = MemoryService(open_store(db_path))
    with service.db.bulk():
        for i in range(3_000):
            service.store({"content": f"the memo {i} of the many", "type": "TODO"})
    service.close()
    near = "NEAR(" + " ".join(["the"] * 10) + ")"
    queries = [
        " OR ".join(["m*"] * 500),
        "NEAR(" + " ".join(["the"] * 200) + ")",
        '"' + " ".join(["the"] * 2000) + '"',
        " OR ".join([near] * 30),  # the costliest shape allowed: answered or out of time
    ]
    with RestDaemon(db_path) as daemon:
        answers: dict[int, requests.Response] = {}

        def search(i: int) -> None:
            answers[i] = requests.post(
                daemon.url + "/api/search", json={"query": queries[i]}, timeout=60
            )

        threads = [threading.Thread(target=search, args=(i,)) for i in range(len(queries))]
        for thread in threads:
            thread.start()
        assert daemon.request("GET", "/health").json()["status"] == "ok"
        for thread in threads:
            thread.join(timeout=60)
        statuses = [answers[i].status_code for i in range(len(queries))]
        assert statuses[:3] == [400, 400, 400]
        assert all("query is too expensive" in answers[i].json()["error"] for i in range(3))
        assert statuses[3] == 200 or "query is too expensive" in answers[3].json()["error"]
        assert daemon.stop() == 0


def test_a_stopped_daemon_has_written_the_uses_of_its_searches(db_path):
    """A REST search's uses wait in memory (service/uses.py); SIGTERM writes them."""
    with RestDaemon(db_path) as daemon:
        daemon.request("POST", "/api/memories", json={"content": "used twice", "type": "TODO"})
        for _ in range(2):
            assert daemon.request("POST", "/api/search", json={"query": "used"}).status_code == 200
        daemon.terminate(signal.SIGTERM)
        assert daemon.stop() == 0
    conn = sqlean.connect(str(db_path))
    assert conn.execute("SELECT access_count FROM memories").fetchall() == [(2,)]
    conn.close()
