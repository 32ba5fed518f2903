"""A real HTTP server on 127.0.0.1 that speaks Ollama's /api/tags and /api/embed.

Its embedder is deterministic and built so that paraphrases land close: each word is
mapped through a small synonym table to a concept, each concept to a dense pseudo-random
unit vector seeded by its hash, and the sum normalized. Dense like a real model's vectors,
so that quantizing them to one sign bit per dimension behaves as it would with one. "Which relational database did the team pick" and
"We chose PostgreSQL as our datastore" share no word, but "pick"/"chose" and
"database"/"PostgreSQL"/"datastore" share concepts, so their cosine is high.

Switches, set on the instance while it runs: ``down`` (every request gets 503),
``models`` (what /api/tags lists; a model not listed gets 404 from /api/embed),
``dimension`` (answer vectors of another size), ``hold`` (an Event that /api/embed waits
on before answering: a slow Ollama), ``fail_after`` (embed requests answered before
it starts failing with 503), ``on_embed`` (called inside the request, before the answer),
``answer`` (a JSON value /api/embed sends instead of the vectors: a malformed answer).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import random
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agent_memory.embedders.ollama import Ollama

# How often the server's loop looks for a request to stop: what stopping it waits at most
# (the standard library's half a second, paid by every test that uses the fake).
STOP_POLL_SECS = 0.01

DIMENSION = 768

SYNONYMS = [
    {"database", "datastore", "db", "postgresql", "postgres", "sqlite", "storage", "store"},
    {"chose", "choose", "chosen", "pick", "picked", "select", "selected", "adopt", "adopted"},
    {"bug", "error", "failure", "crash", "crashed", "exception", "fault", "broke", "broken"},
    {"login", "auth", "authentication", "signin", "credentials", "password"},
    {"slow", "latency", "sluggish", "lag", "performance", "speed"},
    {"test", "tests", "pytest", "testing", "suite"},
    {"vector", "vectors", "embedding", "embeddings", "semantic", "meaning"},
    {"deploy", "deployment", "release", "ship", "shipping", "rollout"},
    {"cache", "caching", "memoize", "redis"},
]
STOPWORDS = {
    "a", "an", "and", "are", "as", "did", "do", "does", "for", "in", "is", "it", "of", "on",
    "our", "the", "to", "we", "what", "which", "with", "team", "use", "used", "uses",
}  # fmt: skip
CONCEPT = {word: min(group) for group in SYNONYMS for word in group}


def concepts(text: str) -> list[str]:
    return [CONCEPT.get(w, w) for w in re.findall(r"\w+", text.lower()) if w not in STOPWORDS]


@functools.lru_cache(maxsize=65_536)
def concept_vector(concept: str, dimension: int) -> tuple[float, ...]:
    seed = int.from_bytes(hashlib.sha256(concept.encode()).digest()[:8], "little")
    rng = random.Random(seed)
    return tuple(rng.gauss(0.0, 1.0) for _ in range(dimension))


def embed(text: str, dimension: int = DIMENSION) -> list[float]:
    """The vector of ``text``: its task prefix (``search_query: `` ...) is ignored."""
    text = re.sub(r"^search_(query|document): ", "", text)
    found = concepts(text) or ["<no words>"]  # a wordless text: one fixed vector
    vector = [
        sum(column) for column in zip(*(concept_vector(c, dimension) for c in found), strict=True)
    ]
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


class FakeOllama:
    def __init__(self, models: list[str] | None = None) -> None:
        self.models = ["nomic-embed-text:latest"] if models is None else models
        self.down = False
        self.dimension = DIMENSION
        self.hold: threading.Event | None = None
        self.fail_after: int | None = None
        self.on_embed: Callable[[list[str]], None] | None = None
        self.answer: object = None
        self.requests: list[tuple[str, dict]] = []
        self.embedded: list[str] = []  # every input text /api/embed answered, in order
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, payload: dict) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                fake.requests.append((self.path, {}))
                if fake.down:
                    self._send(503, {"error": "down"})
                elif self.path == "/api/tags":
                    self._send(200, {"models": [{"name": m, "model": m} for m in fake.models]})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append((self.path, payload))
                embeds = sum(1 for path, _ in fake.requests if path == "/api/embed")
                if fake.down or (fake.fail_after is not None and embeds > fake.fail_after):
                    self._send(503, {"error": "down"})
                elif self.path != "/api/embed":
                    self._send(404, {"error": "not found"})
                elif not any(m.startswith(payload.get("model", "")) for m in fake.models):
                    self._send(404, {"error": f"model '{payload.get('model')}' not found"})
                else:
                    texts = payload["input"]
                    texts = texts if isinstance(texts, list) else [texts]
                    if fake.on_embed is not None:
                        fake.on_embed(texts)
                    if fake.hold is not None:
                        fake.hold.wait()
                    if fake.answer is not None:
                        self._send(200, fake.answer)
                        return
                    vectors = [embed(t, fake.dimension) for t in texts]
                    fake.embedded.extend(texts)
                    self._send(200, {"model": payload["model"], "embeddings": vectors})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        serve = functools.partial(self.server.serve_forever, poll_interval=STOP_POLL_SECS)
        self._thread = threading.Thread(target=serve, daemon=True)

    def embed_requests(self) -> int:
        return sum(1 for path, _ in self.requests if path == "/api/embed")

    def __enter__(self) -> FakeOllama:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.hold is not None:
            self.hold.set()
        self.server.shutdown()
        self.server.server_close()


def embedder_for(url: str, model: str = "nomic-embed-text") -> Ollama:
    """Our Ollama embedder pointed at ``url``: no retry window, so tests see each switch of the
    fake at once; timeouts generous enough for the pure-Python fake embedding a batch on a
    busy machine."""
    return Ollama(url, model, connect_timeout=5.0, read_timeout=60.0, retry_after=0.0)
