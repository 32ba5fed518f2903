"""Seeded, realistic developer memories and the queries the bench asks of them."""

from __future__ import annotations

import random

TYPES = ["DECISION", "PATTERN", "ERROR", "TODO", "ARCHITECTURE", "CONSTRAINT"]
SUBJECTS = [
    "the sqlite-vec index",
    "the REST daemon",
    "the Maven release",
    "the auth token refresh",
    "the CI cache",
    "the FTS5 tokenizer",
    "the Gradle build",
    "the Kafka consumer",
    "the Postgres migration",
    "the retry policy",
    "the embedding backfill",
    "the config loader",
    "the rate limiter",
    "the docker image",
    "the websocket gateway",
    "the billing export",
    "the feature flags",
    "the search ranking",
    "the session store",
    "the log pipeline",
]
VERBS = [
    "must use",
    "was switched to",
    "fails when it meets",
    "should be replaced by",
    "depends on",
    "is cached in",
    "times out against",
    "is rebuilt from",
    "is pinned to",
    "was split from",
    "now validates",
    "stopped supporting",
]
OBJECTS = [
    "WAL mode with a busy timeout",
    "exponential backoff with jitter",
    "a read replica",
    "io.github.unityinflow as the group id",
    "the nomic-embed-text model",
    "UTC timestamps",
    "a single writer connection",
    "signed URLs that expire after an hour",
    "JSON lines",
    "the staging cluster",
    "an LRU of 512 entries",
    "HTTP/2 keep-alive",
    "an advisory lock",
    "a schema version check",
    "the old OAuth client",
    "batched inserts of 1000 rows",
]
REASONS = [
    "because the old path lost writes under load",
    "after the outage on Tuesday",
    "so that agents on every runtime agree",
    "to keep p99 latency under 50 ms",
    "as the security review asked",
    "until the vendor fixes their bug",
    "since tests were flaky on CI",
    "to stay offline-first",
]
KEYWORDS = [
    "sqlite",
    "maven",
    "retry",
    "cache",
    "tokenizer",
    "kafka",
    "backoff",
    "schema",
    "websocket",
    "billing",
    "embedding",
    "timeout",
    "replica",
    "oauth",
    "docker",
    "ranking",
]
QUESTIONS = [
    "what did we decide about the maven release?",
    "why does the kafka consumer time out?",
    "which embedding model is pinned?",
    "how is the rate limiter configured?",
    "what's the retry policy for the REST daemon?",
    "do we use WAL mode with sqlite-vec?",
    "why was the auth token refresh switched?",
    "where is the session store cached?",
]


def memories(n: int, seed: int = 7):
    rng = random.Random(seed)
    for i in range(n):
        text = (
            f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
            f"{rng.choice(REASONS)} (note {i})."
        )
        yield {
            "content": text,
            "type": rng.choice(TYPES),
            "tags": rng.sample(KEYWORDS, 2),
            "scope": rng.choice(["kore-runtime", "billing", None]),
        }


def queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(KEYWORDS) if i % 2 == 0 else rng.choice(QUESTIONS) for i in range(n)]
