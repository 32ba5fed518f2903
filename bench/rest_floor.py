"""The REST floor: a do-nothing Flask app under waitress, with agent-memory's routes for the bench.

    .venv/bin/python -m bench.rest_floor PORT

It parses each JSON body and answers as agent-memory would for a store or an empty search,
with the same waitress thread count; whatever it costs is the price of Flask, waitress and
Python on this machine, and bench_rest.py reads agent-memory's figures against it.
"""

from __future__ import annotations

import sys

from flask import Flask, jsonify, request
from waitress.server import create_server

from agent_memory.http.server import REST_THREADS

app = Flask(__name__)


@app.post("/api/memories")
def store():
    request.get_json()
    return jsonify(id=1), 201


@app.post("/api/search")
def search():
    request.get_json()
    return jsonify(search_mode="keyword", results=[])


if __name__ == "__main__":
    server = create_server(app, host="127.0.0.1", port=int(sys.argv[1]), threads=REST_THREADS)
    print(f"REST listening on 127.0.0.1:{server.effective_port}", file=sys.stderr, flush=True)
    server.run()
