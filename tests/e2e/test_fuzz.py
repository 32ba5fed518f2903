"""Fuzzing the stdio door of the real ``serve``: garbage never kills the server, and the lines
the SDK's parser refuses are answered."""

from __future__ import annotations

import json
import queue
import subprocess
import threading

from tests.support.spawned import executable, server_env


def raw_session(db_path, lines: list[bytes], awaited: set[int]) -> tuple[dict, list, str, int]:
    """Send ``lines`` after the handshake and a last memory_list (id 999); keep stdin open
    until the ``awaited`` ids (and 999) are answered, since EOF ends the session. Returns
    the answers by id, those with id null (in order), stderr and the exit code."""
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "0"},
        },
    }
    ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    last = call_line(999, "memory_list", {})
    proc = subprocess.Popen(
        [executable(), "--log-level", "warning", "--db", str(db_path), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
    )
    answers: queue.Queue = queue.Queue()
    threading.Thread(
        target=lambda: [answers.put(line) for line in proc.stdout], daemon=True
    ).start()
    for line in [json.dumps(hello).encode() + b"\n", json.dumps(ready).encode() + b"\n"]:
        proc.stdin.write(line)
    proc.stdin.flush()
    by_id, nulls = {}, []

    def keep(answer):
        if answer.get("id") is None:
            nulls.append(answer)
        else:
            by_id[answer["id"]] = answer

    waiting = {0}
    for batch in ([*lines, last], []):
        for line in batch:
            proc.stdin.write(line)
        proc.stdin.flush()
        waiting |= awaited | {999} if batch else set()
        while not waiting <= set(by_id):
            keep(json.loads(answers.get(timeout=60)))
    proc.stdin.close()
    for line in proc.stdout:
        keep(json.loads(line))
    code = proc.wait(timeout=60)
    return by_id, nulls, proc.stderr.read().decode(errors="replace"), code


def call_line(i: int, tool: str, args) -> bytes:
    request = {"jsonrpc": "2.0", "id": i, "method": "tools/call"}
    request["params"] = {"name": tool, "arguments": args}
    return json.dumps(request).encode() + b"\n"


def test_raw_stdio_garbage_never_kills_the_server(db_path):
    deep = {"content": "x", "type": "TODO", "tags": []}
    depth = 5_000
    lines = [
        b"this is not json\n",
        b"\xff\xfe\x00 invalid utf-8\n",
        b"{}\n",
        b'{"jsonrpc": "2.0", "id": 1}\n',
        call_line(2, "memory_store", {**deep, "tags": "NESTED"}).replace(
            b'"NESTED"', b"[" * depth + b'"bottom"' + b"]" * depth
        ),
        call_line(3, "memory_store", {**deep, "content": "x" * (2 * 1024 * 1024)}),
        call_line(4, "memory_store", {**deep, "content": "nul \x00 inside"}),
        call_line(5, "memory_search", {"query": '"unbalanced AND ('}),
        call_line(6, "no_such_tool", {}),
        call_line(7, "memory_forget", {"id": 2**80}),
        b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": "nope"}\n',
    ]
    by_id, nulls, stderr, code = raw_session(db_path, lines, awaited={3, 4, 5, 6, 7})
    assert code == 0, stderr
    assert "Traceback" not in stderr
    assert by_id[0]["result"]["serverInfo"]
    # A line that is not JSON, or nested too deeply to parse (id 2), is answered -32700 with
    # id null; the SDK drops a request of the wrong shape ({}, no method, params not an
    # object) without an answer. The server goes on serving.
    assert [(a["error"]["code"], a["error"]["message"]) for a in nulls] == [
        (-32700, "Parse error: the line is not JSON"),
        (-32700, "Parse error: the line is not JSON"),
        (-32700, "Parse error: the line is nested too deeply"),
    ]
    for request_id in (1, 2, 8):
        assert request_id not in by_id
    for request_id in (3, 4, 6, 7):
        assert by_id[request_id]["error"]["code"] in (-32602, -32600), by_id[request_id]
    assert by_id[3]["error"]["message"].startswith("invalid argument: content must be at most")
    assert by_id[4]["error"]["message"].startswith(
        "invalid argument: content must not contain NUL characters"
    )
    assert by_id[5]["result"]["structuredContent"]["search_mode"] == "keyword"
    listed = by_id[999]["result"]["structuredContent"]["memories"]
    assert listed == []  # nothing was written
    assert all(a.get("error", {}).get("code") != -32603 for a in by_id.values())


def test_raw_stdio_answers_the_lines_the_sdk_parser_refuses(db_path):
    """pydantic's JSON parser refuses a lone surrogate escape and an integer of 4,301+
    digits, and the SDK then drops the line: the client would wait for its timeout."""
    digits = b"9" * 5000
    lines = [
        call_line(1, "memory_store", {"content": "a\ud800b", "type": "TODO"}),
        call_line(2, "memory_store", {"content": "x", "type": "TODO", "tags": ["\udc00"]}),
        call_line(3, "memory_search", {"query": "x", "tag": "a\ud800b"}),
        call_line(4, "memory_forget", {"id": 0}).replace(b'"id": 0', b'"id": ' + digits),
        call_line(5, "memory_list", {"limit": 0}).replace(b'"limit": 0', b'"limit": -' + digits),
        call_line(6, "memory_link", {"from_id": 1, "to_id": 2, "kind": "a\ud800b"}),
        call_line(7, "memory_update", {"id": 1, "a\ud800b": 1}),
        call_line(8, "memory_\ud800", {}),
        call_line(9, "memory_list", {}).replace(b"9", b'"\\ud800"', 1),  # the id itself
        b"{not json\n",
        b"   \n",  # a blank line is no message: no answer
    ]
    by_id, nulls, stderr, code = raw_session(db_path, lines, awaited=set(range(1, 9)))
    assert code == 0, stderr
    assert "Traceback" not in stderr
    errors = {
        i: (a["error"]["code"], a["error"]["message"]) for i, a in by_id.items() if "error" in a
    }
    unicode = "must be valid Unicode text (got a lone surrogate at index"
    ids = f"between {-(2**63)} and {2**63 - 1}"
    assert errors == {
        1: (-32602, f"invalid argument: content {unicode} 1)"),
        2: (-32602, f"invalid argument: each tag {unicode} 0 in tag 0)"),
        3: (-32602, f"invalid argument: tag {unicode} 1)"),
        4: (-32602, f"invalid argument: id must be {ids} (got an integer of 5000 digits)"),
        5: (
            -32602,
            "invalid argument: limit must be between 1 and 200 (got an integer of 5000 digits)",
        ),
        6: (-32602, f"invalid argument: kind {unicode} 1)"),
        8: (-32602, "unknown tool: memory_\\ud800"),
    }
    assert by_id[7]["result"]["isError"] is True
    assert "unknown field `a\\ud800b`" in by_id[7]["result"]["content"][0]["text"]
    assert [(a["error"]["code"], a["error"]["message"]) for a in nulls] == [
        (
            -32600,
            "Invalid Request: id and method must be valid Unicode text (got a lone surrogate)",
        ),
        (-32700, "Parse error: the line is not JSON"),
    ]
    assert by_id[999]["result"]["structuredContent"] == {"memories": []}  # nothing written
