"""Everyday questions about a small project's memories, asked as a person or an agent asks.

Why: an implicit AND of every word finds nothing for a question with one word its answer
lacks ("which port is busy"), and an OR of every word lets "how", "we" and "the" pull in
distractors. Each question below shares at least
one informative word (after stemming) with its target and lacks at least one of its other
words there, as real questions do; a few are the short keyword queries the memory_protocol
prompt recommends ("token expiry"). tests/engines/test_everyday_set.py asks them in keyword mode.
"""

from __future__ import annotations

from tests.support.semantic_set import Memory, Query

MEMORIES: tuple[Memory, ...] = (
    Memory(
        "database",
        "DECISION",
        "We picked PostgreSQL as the database of the billing service because we need row-level locks and "
        "the team already runs it in production.",
    ),
    Memory(
        "port",
        "ERROR",
        "The dev server fails to start when port 8080 is busy; another app holds it, so we "
        "moved the server to 8081.",
    ),
    Memory(
        "token",
        "CONSTRAINT",
        "Auth tokens expire after 15 minutes; the client must refresh them before expiry or "
        "the API answers 401.",
    ),
    Memory(
        "timezone",
        "PATTERN",
        "Store every timestamp in UTC and convert to the user's time zone only when displaying it.",
    ),
    Memory(
        "deploy",
        "PATTERN",
        "Deploys go out through the GitHub Actions workflow on a tag; never deploy from a laptop.",
    ),
    Memory(
        "tests",
        "PATTERN",
        "Run the test suite with pytest -x -q; the slow end-to-end tests are marked and "
        "skipped by default.",
    ),
    Memory(
        "cache",
        "ARCHITECTURE",
        "Redis caches the product catalogue for ten minutes; we invalidate it whenever a "
        "price changes.",
    ),
    Memory(
        "logging",
        "DECISION",
        "Logs are JSON lines on stderr, so the container platform can collect them; we do "
        "not write log files.",
    ),
    Memory(
        "migration",
        "TODO",
        "Write the migration that adds the invoices.currency column before the euro release.",
    ),
    Memory(
        "flaky",
        "ERROR",
        "The checkout test is flaky on CI because it depends on the wall clock; freeze the "
        "time with a fixture.",
    ),
    Memory(
        "secrets",
        "CONSTRAINT",
        "Secrets live in the vault; we never commit API keys or passwords to the repository.",
    ),
    Memory(
        "frontend",
        "DECISION",
        "The frontend uses React with TypeScript; we chose it over Vue because the team knows it.",
    ),
    Memory(
        "retry",
        "PATTERN",
        "Calls to the payment provider retry three times with exponential backoff and jitter.",
    ),
    Memory(
        "memory-leak",
        "ERROR",
        "The worker leaked memory because the image thumbnails were kept in a global dict; "
        "we bounded it with an LRU.",
    ),
    Memory(
        "release",
        "TODO",
        "Tag the 2.4 release after the changelog is reviewed and the docs are published.",
    ),
    Memory(
        "python",
        "CONSTRAINT",
        "The service must run on Python 3.11 or newer; the old 3.9 hosts are being retired.",
    ),
    Memory(
        "queue",
        "ARCHITECTURE",
        "Emails are sent by a background queue worker so that a slow mail server never "
        "blocks a web request.",
    ),
    Memory(
        "rate-limit",
        "CONSTRAINT",
        "The public API allows 100 requests a minute per key; above that it answers 429.",
    ),
)

QUERIES: tuple[Query, ...] = (
    Query("which port is busy", "port"),
    Query("which port is busy?", "port"),
    Query("why does the dev server not start", "port"),
    Query("token expiry", "token"),
    Query("when do tokens expire", "token"),
    Query("time zones", "timezone"),
    Query("how do we handle time zones?", "timezone"),
    Query("database choice", "database"),
    Query("which database did we pick and why", "database"),
    Query("what did we pick for billing", "database"),
    Query("how do we deploy to production", "deploy"),
    Query("how do I run the tests", "tests"),
    Query("slow tests", "tests"),
    Query("how long is the catalogue cached", "cache"),
    Query("redis cache invalidation", "cache"),
    Query("where do the logs go", "logging"),
    Query("log files", "logging"),
    Query("currency migration", "migration"),
    Query("what is left before the euro release", "migration"),
    Query("why is the checkout test flaky", "flaky"),
    Query("flaky CI", "flaky"),
    Query("where are the secrets kept", "secrets"),
    Query("can I commit the api keys", "secrets"),
    Query("which frontend framework do we use", "frontend"),
    Query("react or vue", "frontend"),
    Query("payment retries", "retry"),
    Query("what backoff do payment calls use", "retry"),
    Query("worker memory leak", "memory-leak"),
    Query("thumbnails using too much memory", "memory-leak"),
    Query("what must happen before the release is tagged", "release"),
    Query("changelog review", "release"),
    Query("which python version is required", "python"),
    Query("how are emails sent", "queue"),
    Query("mail server slow", "queue"),
    Query("api rate limit", "rate-limit"),
    Query("what does 429 mean", "rate-limit"),
)

# The tags an agent would give these memories ("a few tags", as the memory_protocol prompt
# asks): mostly the topic, often a word the content does not say. How much a tag hit weighs
# is chosen on them (docs/search.md).
TAGS: dict[str, tuple[str, ...]] = {
    "database": ("database", "postgres", "billing"),
    "port": ("dev-server", "networking"),
    "token": ("auth", "api"),
    "timezone": ("datetime", "utc"),
    "deploy": ("ci", "deploy"),
    "tests": ("testing", "pytest"),
    "cache": ("redis", "performance"),
    "logging": ("logging", "observability"),
    "migration": ("database", "billing"),
    "flaky": ("testing", "ci"),
    "secrets": ("security",),
    "frontend": ("frontend", "react"),
    "retry": ("payments", "resilience"),
    "memory-leak": ("worker", "performance"),
    "release": ("release", "docs"),
    "python": ("python", "infrastructure"),
    "queue": ("email", "worker"),
    "rate-limit": ("api", "limits"),
}
