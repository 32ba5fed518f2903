"""A labelled set of memory pairs for the near-duplicate hint of a store.

Each pair is two memories an agent might store in one scope, labelled:

- SAME: the same fact in other words (the hint should name the first when the second is
  stored, so that the agent updates or supersedes instead of adding a copy);
- RELATED: the same topic but a different fact: another value, the opposite decision, a
  neighbouring component (the hint must stay quiet: these are the costly false hints);
- UNRELATED: different topics that share the register of engineering notes.

Written by hand for this purpose, in the style of the memories agents store (decisions,
errors, patterns, constraints, to-dos). bench/near_duplicates.py picks the threshold on it
and reports precision and recall; half of the pairs (the even positions of each list) tune,
the other half check.
"""

from __future__ import annotations

SAME = [
    (
        "We chose PostgreSQL as the primary datastore for the billing service.",
        "The billing service stores its data in PostgreSQL; that was our pick for the main database.",
    ),
    (
        "Always run database migrations before deploying the API.",
        "Deploys of the API must be preceded by running the DB migrations.",
    ),
    (
        "The login page crashes when the password field is empty.",
        "Submitting the login form with no password makes the page crash.",
    ),
    (
        "Use pytest's tmp_path fixture for temporary files in tests.",
        "Tests should create throwaway files under the tmp_path fixture from pytest.",
    ),
    (
        "API responses are cached in Redis for five minutes.",
        "We keep a five-minute Redis cache in front of API responses.",
    ),
    (
        "The mobile app must support iOS 15 and later.",
        "Minimum supported iOS version for the mobile app is 15.",
    ),
    (
        "TODO: add rate limiting to the public search endpoint.",
        "The public search endpoint still needs rate limiting.",
    ),
    (
        "Timestamps are stored as UTC integers (unix seconds) everywhere.",
        "Every timestamp is kept in UTC as integer unix seconds.",
    ),
    (
        "The CI pipeline fails because the Node version in the runner is 16, but the build needs 18.",
        "CI breaks: the runner has Node 16 while our build requires Node 18.",
    ),
    (
        "Frontend state is managed with Redux Toolkit.",
        "We use Redux Toolkit for state management in the frontend.",
    ),
    (
        "Secrets are loaded from environment variables, never committed to the repository.",
        "Never commit secrets to the repo; read them from env vars instead.",
    ),
    (
        "The nightly export job times out after 30 minutes on large tenants.",
        "On big tenants the nightly export hits its 30-minute timeout.",
    ),
    (
        "Use feature flags for every risky change in checkout.",
        "Risky checkout changes always go behind a feature flag.",
    ),
    (
        "The team decided to write new services in Go instead of Java.",
        "New services are to be written in Go rather than Java, per the team's decision.",
    ),
    (
        "Images uploaded by users are resized to 1024 pixels wide before storage.",
        "User image uploads get scaled down to a width of 1024 px before we store them.",
    ),
    (
        "Logging uses structured JSON lines written to stderr.",
        "Logs are structured JSON, one object per line, on stderr.",
    ),
    (
        "Error: the payment webhook returns 401 because the signing secret was rotated.",
        "Payment webhook fails with 401 since the webhook signing secret got rotated.",
    ),
    (
        "Pagination in the REST API is cursor-based, not offset-based.",
        "The REST API paginates with cursors rather than offsets.",
    ),
    (
        "Write the rollout checklist before shipping the new onboarding flow.",
        "TODO: prepare a rollout checklist ahead of releasing the new onboarding flow.",
    ),
    (
        "The search index is rebuilt every night at 2 AM.",
        "Every night at 02:00 we rebuild the search index.",
    ),
    (
        "All public functions need type hints.",
        "Type annotations are required on every public function.",
    ),
    (
        "The staging database is reset every Monday morning.",
        "Each Monday morning the staging DB gets wiped and reset.",
    ),
    (
        "Memory leak in the worker: the image cache is never cleared.",
        "The worker leaks memory because its image cache never gets emptied.",
    ),
    (
        "We deploy to production only from the main branch.",
        "Production deploys happen exclusively from main.",
    ),
    (
        "Customer emails are sent through SendGrid.",
        "SendGrid is the provider we use to send emails to customers.",
    ),
    (
        "The maximum upload size is 25 MB.",
        "Uploads are capped at 25 megabytes.",
    ),
    (
        "Use dependency injection for the repository classes so tests can swap them.",
        "Repository classes are injected as dependencies, which lets tests replace them.",
    ),
    (
        "Flaky test: test_checkout_total fails intermittently because of rounding of floats.",
        "test_checkout_total is flaky; float rounding makes it fail now and then.",
    ),
    (
        "Kubernetes pods for the API get 512 MiB of memory each.",
        "Each API pod in Kubernetes is given a 512 MiB memory limit.",
    ),
    (
        "The design system uses an 8 pixel spacing grid.",
        "Spacing in our design system follows an 8px grid.",
    ),
]

RELATED = [
    (
        "We chose PostgreSQL as the primary datastore for the billing service.",
        "We chose MongoDB as the primary datastore for the analytics service.",
    ),
    (
        "Always run database migrations before deploying the API.",
        "Never run database migrations automatically during an API deploy; a person runs them.",
    ),
    (
        "The login page crashes when the password field is empty.",
        "The signup page crashes when the email field contains a plus sign.",
    ),
    (
        "Use pytest's tmp_path fixture for temporary files in tests.",
        "Use pytest's monkeypatch fixture to set environment variables in tests.",
    ),
    (
        "API responses are cached in Redis for five minutes.",
        "Session data is stored in Redis without expiry.",
    ),
    (
        "The mobile app must support iOS 15 and later.",
        "The mobile app must support Android 10 and later.",
    ),
    (
        "TODO: add rate limiting to the public search endpoint.",
        "Rate limiting on the public search endpoint was removed because it blocked partners.",
    ),
    (
        "Timestamps are stored as UTC integers (unix seconds) everywhere.",
        "Timestamps are shown to users in their local time zone.",
    ),
    (
        "The CI pipeline fails because the Node version in the runner is 16, but the build needs 18.",
        "The CI pipeline fails because the Python version in the runner is 3.9, but the tests need 3.11.",
    ),
    (
        "Frontend state is managed with Redux Toolkit.",
        "We moved frontend state management from Redux to Zustand.",
    ),
    (
        "Secrets are loaded from environment variables, never committed to the repository.",
        "Secrets are loaded from HashiCorp Vault at start-up, not from environment variables.",
    ),
    (
        "The nightly export job times out after 30 minutes on large tenants.",
        "The nightly import job fails on tenants with non-UTF-8 file names.",
    ),
    (
        "Use feature flags for every risky change in checkout.",
        "Remove feature flags from checkout once a change has been fully rolled out for a week.",
    ),
    (
        "The team decided to write new services in Go instead of Java.",
        "The team decided to keep the existing Java services and not rewrite them in Go.",
    ),
    (
        "Images uploaded by users are resized to 1024 pixels wide before storage.",
        "Videos uploaded by users are transcoded to 720p before storage.",
    ),
    (
        "Logging uses structured JSON lines written to stderr.",
        "Metrics are exported in Prometheus format on port 9090.",
    ),
    (
        "Error: the payment webhook returns 401 because the signing secret was rotated.",
        "Error: the payment webhook returns 500 because the order lookup times out.",
    ),
    (
        "Pagination in the REST API is cursor-based, not offset-based.",
        "The GraphQL API uses offset-based pagination with a maximum page size of 100.",
    ),
    (
        "Write the rollout checklist before shipping the new onboarding flow.",
        "The new onboarding flow shipped without a rollout checklist and we had to roll back.",
    ),
    (
        "The search index is rebuilt every night at 2 AM.",
        "The search index is updated incrementally on every write; no nightly rebuild.",
    ),
    (
        "All public functions need type hints.",
        "Private helper functions do not need docstrings.",
    ),
    (
        "The staging database is reset every Monday morning.",
        "The staging database is a copy of production, refreshed monthly.",
    ),
    (
        "Memory leak in the worker: the image cache is never cleared.",
        "The worker crashes with out-of-memory when a PDF is larger than 200 pages.",
    ),
    (
        "We deploy to production only from the main branch.",
        "We deploy to staging from any feature branch.",
    ),
    (
        "Customer emails are sent through SendGrid.",
        "Customer text messages are sent through Twilio.",
    ),
    (
        "The maximum upload size is 25 MB.",
        "The maximum upload size was raised to 100 MB for enterprise customers.",
    ),
    (
        "Use dependency injection for the repository classes so tests can swap them.",
        "Avoid dependency injection frameworks; wire objects by hand in main.",
    ),
    (
        "Flaky test: test_checkout_total fails intermittently because of rounding of floats.",
        "test_checkout_total was fixed by using Decimal for money amounts.",
    ),
    (
        "Kubernetes pods for the API get 512 MiB of memory each.",
        "Kubernetes pods for the worker get 2 GiB of memory each.",
    ),
    (
        "The design system uses an 8 pixel spacing grid.",
        "The design system's base font size is 16 pixels.",
    ),
]

UNRELATED = [
    (
        "We chose PostgreSQL as the primary datastore for the billing service.",
        "The design system uses an 8 pixel spacing grid.",
    ),
    (
        "Always run database migrations before deploying the API.",
        "Customer emails are sent through SendGrid.",
    ),
    (
        "The login page crashes when the password field is empty.",
        "Timestamps are stored as UTC integers (unix seconds) everywhere.",
    ),
    (
        "Use pytest's tmp_path fixture for temporary files in tests.",
        "Kubernetes pods for the API get 512 MiB of memory each.",
    ),
    (
        "API responses are cached in Redis for five minutes.",
        "The mobile app must support iOS 15 and later.",
    ),
    (
        "TODO: add rate limiting to the public search endpoint.",
        "Frontend state is managed with Redux Toolkit.",
    ),
    (
        "The CI pipeline fails because the Node version in the runner is 16, but the build needs 18.",
        "Images uploaded by users are resized to 1024 pixels wide before storage.",
    ),
    (
        "Secrets are loaded from environment variables, never committed to the repository.",
        "The nightly export job times out after 30 minutes on large tenants.",
    ),
    (
        "Use feature flags for every risky change in checkout.",
        "Logging uses structured JSON lines written to stderr.",
    ),
    (
        "The team decided to write new services in Go instead of Java.",
        "The maximum upload size is 25 MB.",
    ),
    (
        "Error: the payment webhook returns 401 because the signing secret was rotated.",
        "The staging database is reset every Monday morning.",
    ),
    (
        "Pagination in the REST API is cursor-based, not offset-based.",
        "Memory leak in the worker: the image cache is never cleared.",
    ),
    (
        "Write the rollout checklist before shipping the new onboarding flow.",
        "All public functions need type hints.",
    ),
    (
        "The search index is rebuilt every night at 2 AM.",
        "Use dependency injection for the repository classes so tests can swap them.",
    ),
    (
        "We deploy to production only from the main branch.",
        "Flaky test: test_checkout_total fails intermittently because of rounding of floats.",
    ),
    (
        "Customer text messages are sent through Twilio.",
        "The GraphQL API uses offset-based pagination with a maximum page size of 100.",
    ),
    (
        "Session data is stored in Redis without expiry.",
        "The signup page crashes when the email field contains a plus sign.",
    ),
    (
        "Metrics are exported in Prometheus format on port 9090.",
        "We moved frontend state management from Redux to Zustand.",
    ),
    (
        "Private helper functions do not need docstrings.",
        "Videos uploaded by users are transcoded to 720p before storage.",
    ),
    (
        "The worker crashes with out-of-memory when a PDF is larger than 200 pages.",
        "The mobile app must support Android 10 and later.",
    ),
]

LABELS = ("same", "related", "unrelated")


def pairs() -> list[tuple[str, str, str]]:
    """Every pair as (label, first, second), in list order."""
    return [
        (label, a, b)
        for label, group in zip(LABELS, (SAME, RELATED, UNRELATED), strict=True)
        for a, b in group
    ]


def halves() -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """(tune, check): the even and the odd positions of each list."""
    tune, check = [], []
    for label, group in zip(LABELS, (SAME, RELATED, UNRELATED), strict=True):
        for i, (a, b) in enumerate(group):
            (tune if i % 2 == 0 else check).append((label, a, b))
    return tune, check
