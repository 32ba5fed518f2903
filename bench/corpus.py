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


# -- A wider corpus for bench/run.py ---------------------------------------------------------
# The templates above repeat twenty subjects, so each of their words is in 5% of all rows:
# at a million memories every question then matches hundreds of thousands of rows. Real
# memories have a long tail of names. These mix areas, parts and technologies with
# Zipf-like frequencies, plus file paths, tickets and numbers, in one template per type.
AREAS = [
    "auth",
    "billing",
    "search",
    "ingest",
    "payments",
    "gateway",
    "scheduler",
    "indexer",
    "notifications",
    "reporting",
    "checkout",
    "inventory",
    "onboarding",
    "analytics",
    "admin",
    "profile",
    "export",
    "importer",
    "sync",
    "mailer",
    "ledger",
    "pricing",
    "catalog",
    "recommendations",
    "audit",
    "sessions",
    "uploads",
    "media",
    "webhooks",
    "tenancy",
    "permissions",
    "metrics",
    "alerts",
    "backups",
    "queueing",
    "routing",
    "geo",
    "invoices",
    "refunds",
    "support",
]
PARTS = [
    "service",
    "worker",
    "client",
    "cache",
    "queue",
    "migration",
    "endpoint",
    "parser",
    "handler",
    "job",
    "pipeline",
    "config",
    "schema",
    "dashboard",
    "exporter",
    "consumer",
    "producer",
    "adapter",
    "middleware",
    "cron",
    "loader",
    "validator",
    "serializer",
    "resolver",
    "controller",
    "repository",
    "gateway",
    "proxy",
    "agent",
]
TECH = [
    "sqlite",
    "postgres",
    "redis",
    "kafka",
    "rabbitmq",
    "grpc",
    "graphql",
    "docker",
    "kubernetes",
    "terraform",
    "nginx",
    "s3",
    "celery",
    "fastapi",
    "flask",
    "django",
    "react",
    "webpack",
    "vite",
    "pytest",
    "jest",
    "maven",
    "gradle",
    "cargo",
    "tokio",
    "elasticsearch",
    "opensearch",
    "clickhouse",
    "duckdb",
    "mongodb",
    "cassandra",
    "etcd",
    "consul",
    "vault",
    "prometheus",
    "grafana",
    "sentry",
    "opentelemetry",
    "jaeger",
    "envoy",
    "istio",
    "helm",
    "argocd",
    "github-actions",
    "jenkins",
    "buildkite",
    "bazel",
    "pnpm",
    "poetry",
    "uv",
    "mypy",
    "ruff",
    "black",
    "protobuf",
    "avro",
    "parquet",
    "airflow",
    "dagster",
    "spark",
    "flink",
    "snowflake",
    "bigquery",
]
PROBLEMS = [
    "a deadlock under load",
    "a memory leak after a day",
    "an off-by-one in pagination",
    "a race on startup",
    "stale reads from the replica",
    "a timezone bug at midnight",
    "duplicate events on retry",
    "a missing index",
    "a slow query on large accounts",
    "TLS handshake failures",
    "connection pool exhaustion",
    "unicode in user names",
    "clock skew between hosts",
    "a thundering herd after deploys",
    "partial writes on crash",
    "an unbounded retry loop",
    "integer overflow in counters",
    "N+1 queries",
    "lock contention",
    "cache stampedes",
]
PRACTICES = [
    "validate the payload",
    "take the advisory lock",
    "check the feature flag",
    "log the request id",
    "batch the writes",
    "set an explicit timeout",
    "retry with jitter",
    "close the cursor",
    "pin the version",
    "normalize the email",
]
EXCEPTIONS = ["TypeError", "KeyError", "TimeoutError", "IntegrityError", "ValueError", "OSError"]


def _zipf(rng: random.Random, items: list[str] | tuple[str, ...]) -> str:
    weights = _ZIPF_WEIGHTS.get(len(items))
    if weights is None:
        weights = _ZIPF_WEIGHTS[len(items)] = [(rank + 1) ** -ZIPF_S for rank in range(len(items))]
    return rng.choices(items, weights=weights)[0]


_ZIPF_WEIGHTS: dict[int, list[float]] = {}
# The most common area is then in about 11% of memories, the most common technology in 17%.
ZIPF_S = 0.7


def developer_memory(rng: random.Random, i: int) -> dict:
    kind = rng.choice(TYPES)
    area, part, tech, other = (
        _zipf(rng, AREAS),
        _zipf(rng, PARTS),
        _zipf(rng, TECH),
        _zipf(rng, TECH),
    )
    problem, reason = rng.choice(PROBLEMS), rng.choice(REASONS)
    path = f"src/{area}/{part}_{rng.randint(1, 400)}.py"
    ticket = f"{area.upper()[:4]}-{rng.randint(100, 9999)}"
    text = {
        "DECISION": f"Decided to use {tech} for the {area} {part} instead of {other} {reason}.",
        "PATTERN": f"In the {area} {part}, always {rng.choice(PRACTICES)} before calling "
        f"{tech} ({path}).",
        "ERROR": f"{rng.choice(EXCEPTIONS)} in {path} when the {area} {part} hits {problem}; "
        f"fixed in {ticket}.",
        "TODO": f"TODO {ticket}: move the {area} {part} from {other} to {tech} after fixing "
        f"{problem}.",
        "ARCHITECTURE": f"The {area} {part} talks to {tech} and keeps its state in {other}; "
        f"see {path}.",
        "CONSTRAINT": f"The {area} {part} must stay on {tech} {reason} "
        f"(limit {rng.randint(2, 64) * 16} per second).",
    }[kind]
    return {
        "content": f"{text} #{i}",
        "type": kind,
        "tags": sorted({area, tech}),
        "scope": _zipf(rng, ("kore-runtime", "billing", "platform", "mobile")),
    }


def developer_memories(n: int, seed: int = 7):
    rng = random.Random(seed)
    for i in range(n):
        yield developer_memory(rng, i)


def two_word_queries(n: int, seed: int = 13) -> list[str]:
    """Alternately a technology with an area ("kafka billing") and an area with a part."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        first, second = (TECH, AREAS) if i % 2 == 0 else (AREAS, PARTS)
        out.append(f"{_zipf(rng, first)} {_zipf(rng, second)}")
    return out


def questions(n: int, seed: int = 17) -> list[str]:
    rng = random.Random(seed)
    forms = [
        "why does the {area} {part} fail with {problem}?",
        "what did we decide about {tech} for the {area} {part}?",
        "how does the {area} {part} use {tech}?",
        "which database does the {area} {part} keep its state in?",
        "what's the rule for calling {tech} from the {area} {part}?",
        "is there a TODO to move the {area} {part} off {tech}?",
    ]
    return [
        rng.choice(forms).format(
            area=_zipf(rng, AREAS),
            part=_zipf(rng, PARTS),
            tech=_zipf(rng, TECH),
            problem=rng.choice(PROBLEMS).split(" ", 1)[1],
        )
        for _ in range(n)
    ]
