"""One software project's memories, and the questions its engineers and agents ask of them.

Why: the other sets each test one thing (paraphrases that share no word, plain-language
keyword questions, rare identifiers). This one is a whole project as an agent would have
stored it over a few months: a parcel-locker delivery platform (Django, PostgreSQL, Celery,
a React Native courier app, lockers on MQTT), its decisions, patterns, errors, todos,
architecture and constraints, long and short, with neighbours on the same topic (three
memories touch the database, two the deploys, three billing). The questions are asked the
ways people ask: full questions, a few keywords, paraphrases that share few words with the
answer, an identifier or an error message pasted as it is. Each names the memory that
answers it (``target``) and any other that answers it as well (``also``).

OFF_TOPIC holds questions this project's memories do not answer, some sharing a word with
them in another sense ("test", "database", "deploy", "migrate", "rotate"): a good page for
them is empty. ONE_PER_TOPIC is a smaller store of one memory per topic, and
ONE_PER_TOPIC_QUERIES the questions answered in it.

Written as a user would, not fitted to any ranking: tests/support/quality.py measures a
search mode on it, bench/quality.py prints every mode's figures.
"""

from __future__ import annotations

from tests.support.semantic_set import Memory, Query

MEMORIES: tuple[Memory, ...] = (
    # DECISION
    Memory(
        "postgres",
        "DECISION",
        "We chose PostgreSQL 15 over MongoDB for orders and lockers: shipments, compartments "
        "and payments are relational and we need transactions across them. Mongo only looked "
        "attractive for the tracking events, which went to a partitioned table instead.",
    ),
    Memory(
        "stripe",
        "DECISION",
        "Payments go through Stripe rather than Adyen. Stripe Billing handles the monthly "
        "merchant subscriptions out of the box and its test mode made the integration quick; "
        "Adyen is only cheaper per transaction above about 2M EUR a month, far from our volume.",
    ),
    Memory(
        "celery-redis",
        "DECISION",
        "Background jobs run on Celery with Redis as the broker. RabbitMQ was considered but "
        "it is one more stateful service to operate, and Redis is already there for caching.",
    ),
    Memory(
        "react-native",
        "DECISION",
        "The courier app is written in React Native so that one team ships both iOS and "
        "Android; native code only for the barcode scanner module.",
    ),
    Memory(
        "mqtt",
        "DECISION",
        "Lockers talk to the backend over MQTT through a managed EMQX broker instead of "
        "polling over HTTP: they sit behind mobile networks that drop often, and MQTT keeps "
        "the session and redelivers with QoS 1.",
    ),
    Memory(
        "monorepo",
        "DECISION",
        "One monorepo holds the backend, the courier app and the infrastructure code; CI runs "
        "only the jobs whose paths changed.",
    ),
    Memory(
        "feature-flags",
        "DECISION",
        "Feature flags live in a self-hosted Unleash. A flag must be deleted within two "
        "sprints after its full rollout; the weekly cleanup lists the stale ones.",
    ),
    Memory(
        "pricing",
        "DECISION",
        "Merchants pay per parcel with volume tiers: 0.90 EUR each up to 1,000 parcels a "
        "month, 0.75 EUR above. Oversized parcels cost double whatever the tier.",
    ),
    # PATTERN
    Memory(
        "migrations",
        "PATTERN",
        "Database migrations follow expand/contract. First add the new column or table "
        "(nullable, no default that rewrites the table), then deploy code that writes both, "
        "backfill in batches, and drop the old column only in a later release. Never rename "
        "a column in one step.",
    ),
    Memory(
        "webhooks",
        "PATTERN",
        "Stripe webhooks are handled idempotently: the event id goes into processed_webhooks "
        "and an event already seen is skipped, because Stripe keeps retrying a delivery for "
        "up to three days.",
    ),
    Memory(
        "outbox",
        "PATTERN",
        "Domain events are written to the outbox table in the same transaction as the change "
        "they describe; a relay task publishes them every second. Never publish to Pub/Sub "
        "straight from a request handler: a rollback would leave an event for nothing.",
    ),
    Memory(
        "api-errors",
        "PATTERN",
        "API errors are RFC 7807 problem+json bodies with a stable code field (LOCKER_FULL, "
        "PARCEL_TOO_LARGE, ...). Clients branch on the code, never on the human message.",
    ),
    Memory(
        "factories",
        "PATTERN",
        "Tests build their objects with factory_boy factories from tests/factories.py. Do not "
        "add JSON fixtures: they rot every time the schema changes.",
    ),
    Memory(
        "celery-retries",
        "PATTERN",
        "A Celery task that calls an outside service uses autoretry_for with "
        "retry_backoff=True and max_retries=5, and must be idempotent: after a worker restart "
        "the same task can run twice.",
    ),
    Memory(
        "code-review",
        "PATTERN",
        "Every pull request needs an approval from the owning team (CODEOWNERS) and green CI. "
        "Changes under infra/ need a second reviewer from the platform team.",
    ),
    Memory(
        "log-context",
        "PATTERN",
        "Log with structlog and bind request_id, courier_id and locker_id at the start of "
        "every request and task, so that one delivery can be followed across services.",
    ),
    Memory(
        "canary",
        "PATTERN",
        "Production deploys go out as a canary with Argo Rollouts: 10% of traffic for 15 "
        "minutes while error rate and latency are compared with the stable version, then 50%, "
        "then everything. A failed analysis rolls the release back by itself.",
    ),
    Memory(
        "rollback",
        "PATTERN",
        "Rolling back by hand: make rollback ENV=prod redeploys the previous Helm release. "
        "Database migrations are never reverted, which is why each one must stay compatible "
        "with the code before it.",
    ),
    Memory(
        "on-call",
        "PATTERN",
        "On-call rotates weekly among the four backend engineers (PagerDuty schedule "
        "backend-primary). The handover note goes to #oncall on Monday morning.",
    ),
    Memory(
        "local-dev",
        "PATTERN",
        "Run the whole stack locally with docker compose up, then make seed: it creates two "
        "merchants, ten lockers and a courier whose login code is always 000000.",
    ),
    Memory(
        "secrets",
        "PATTERN",
        "Secrets are kept in Google Secret Manager and mounted into the pods by the External "
        "Secrets operator. .env files are for local development only and are git-ignored.",
    ),
    # ERROR
    Memory(
        "pgbouncer",
        "ERROR",
        'psycopg raised prepared statement "_pg3_0" does not exist once PgBouncer ran in '
        "transaction pooling mode. Fixed with prepare_threshold=None in the connection "
        "options: server-side prepared statements do not survive transaction pooling.",
    ),
    Memory(
        "dst",
        "ERROR",
        "Pickup slots were one hour off for a week after the switch to summer time, because "
        "slot times were stored as naive local datetimes. We now store UTC and convert with "
        "the locker's zoneinfo when showing them.",
    ),
    Memory(
        "duplicate-sms",
        "ERROR",
        "Customers got their pickup code SMS twice: send_pickup_code was retried after a "
        "worker timeout although Twilio had already sent it. The task now saves the message "
        "id before returning and checks for it first.",
    ),
    Memory(
        "locker-timeout",
        "ERROR",
        "LCK-504 LockerTimeout: the locker did not acknowledge an open-door command within "
        "10 s. Usually a weak mobile signal; the backend retries once, then flags the "
        "compartment for a technician visit.",
    ),
    Memory(
        "label-oom",
        "ERROR",
        "The label worker grew until Kubernetes OOM-killed the pod: WeasyPrint kept a font "
        "cache per rendered PDF. Worker processes now restart after 200 tasks "
        "(worker_max_tasks_per_child).",
    ),
    Memory(
        "rounding",
        "ERROR",
        "Some merchants' monthly invoices were one cent off because VAT was rounded on each "
        "line and then summed. Invoices now round once, on the total, as the tax office "
        "expects.",
    ),
    Memory(
        "sentry-quota",
        "ERROR",
        "A bad release threw on every tracking ping and used up the month's Sentry quota in "
        "two days. Errors from the tracking endpoint are now sampled at 25%, and a spike "
        "protection rule is on.",
    ),
    Memory(
        "flaky-handover",
        "ERROR",
        "test_courier_handover fails about one run in ten on CI: it waits for the locker's "
        "MQTT ack with a fixed sleep. Wait on the ack event instead of sleeping.",
    ),
    # TODO
    Memory(
        "django-upgrade",
        "TODO",
        "Upgrade Django from 4.2 to 5.1 before 4.2's extended support ends; blocked until "
        "django-money releases a compatible version.",
    ),
    Memory(
        "remove-v1",
        "TODO",
        "Remove the legacy /api/v1/ endpoints once ShopCo, the last partner still on them, "
        "has moved to v2 (their deadline is the end of Q3).",
    ),
    Memory(
        "rotate-keys",
        "TODO",
        "Rotate the Google Maps and Twilio API keys: the old agency had them and they were "
        "never changed.",
    ),
    Memory(
        "reports-replica",
        "TODO",
        "Move the merchant reports off the primary database to the read replica: the nightly "
        "export slows down checkout around 2 am.",
    ),
    Memory(
        "sms-fallback",
        "TODO",
        "Add a second SMS provider (MessageBird) for when Twilio is down; the last outage left "
        "3,000 pickup codes unsent.",
    ),
    Memory(
        "accessibility",
        "TODO",
        "Courier app: audit the screen reader labels on the scan and handover screens before "
        "the public tender in March.",
    ),
    # ARCHITECTURE
    Memory(
        "modular-monolith",
        "ARCHITECTURE",
        "The backend is a Django modular monolith: apps for shipments, lockers, billing, "
        "couriers and notifications, each with its own models and a services.py that the "
        "other apps call. An app never imports another app's models.",
    ),
    Memory(
        "pubsub",
        "ARCHITECTURE",
        "Events reach the analytics pipeline through Google Pub/Sub, one topic per aggregate "
        "(shipment-events, locker-events). Consumers must cope with duplicates and with "
        "events arriving out of order.",
    ),
    Memory(
        "gke",
        "ARCHITECTURE",
        "Everything runs on GKE in europe-west3 (Frankfurt): the API, the Celery workers and "
        "the MQTT bridge are separate deployments, configured by the Helm charts in "
        "infra/helm.",
    ),
    Memory(
        "tracking-partitions",
        "ARCHITECTURE",
        "Tracking events are stored in tracking_event, partitioned by month with pg_partman. "
        "Partitions older than 13 months are detached and archived to Cloud Storage.",
    ),
    Memory(
        "auth",
        "ARCHITECTURE",
        "Merchants authenticate with API keys, stored as SHA-256 hashes and shown only once. "
        "Couriers sign in to the app with their phone number and a one-time code, and get a "
        "JWT valid for 12 hours.",
    ),
    Memory(
        "availability-cache",
        "ARCHITECTURE",
        "Locker availability is cached in Redis for 30 seconds per locker; a status message "
        "from the locker over MQTT invalidates its entry at once.",
    ),
    # CONSTRAINT
    Memory(
        "gdpr-retention",
        "CONSTRAINT",
        "GDPR: courier GPS positions are personal data. We keep them 30 days and a nightly job "
        "deletes older ones; customer phone numbers are deleted 90 days after the parcel is "
        "collected.",
    ),
    Memory(
        "eu-only",
        "CONSTRAINT",
        "All customer data stays in the EU: no US region for databases, backups or logs. "
        "Check where a SaaS vendor keeps its data before signing up.",
    ),
    Memory(
        "latency-slo",
        "CONSTRAINT",
        "The public tracking API must answer within 300 ms at p95; slower than that pages the "
        "on-call engineer.",
    ),
    Memory(
        "old-phones",
        "CONSTRAINT",
        "The courier app must keep working on iOS 15 and Android 9: many couriers carry old "
        "company phones.",
    ),
    Memory(
        "no-pii-logs",
        "CONSTRAINT",
        "Never write phone numbers, names or addresses to the logs or to Sentry; log the "
        "customer id. The scrubber in common/logging.py masks what slips through.",
    ),
    Memory(
        "deploy-freeze",
        "CONSTRAINT",
        "No production deploys from Friday 14:00 to Monday 08:00, and none between Black "
        "Friday and Christmas without the CTO's approval.",
    ),
    Memory(
        "connections",
        "CONSTRAINT",
        "Cloud SQL allows 400 connections and each API pod opens up to 10 through PgBouncer: "
        "do not scale the API past 30 pods without raising the pool first.",
    ),
)

QUERIES: tuple[Query, ...] = (
    # full questions
    Query("how do we handle database migrations?", "migrations"),
    Query("why did we pick stripe", "stripe"),
    Query("why Postgres and not Mongo?", "postgres"),
    Query("what happens if Stripe sends the same webhook twice?", "webhooks"),
    Query("how do I roll back a bad release?", "rollback", also=("canary",)),
    Query("can I deploy on a Friday afternoon?", "deploy-freeze"),
    Query("how does a new version reach production?", "canary"),
    Query("how long do we keep courier locations?", "gdpr-retention"),
    Query("can we use an analytics vendor hosted in the US?", "eu-only"),
    Query("what is the latency target for the tracking API?", "latency-slo"),
    Query("is it ok to log the customer's phone number?", "no-pii-logs"),
    Query("when can we delete the old v1 API?", "remove-v1"),
    Query("what happens when Twilio is down?", "sms-fallback"),
    Query("can the billing app import the shipment models directly?", "modular-monolith"),
    Query("how do the lockers talk to the server?", "mqtt"),
    Query("how are old tracking events archived?", "tracking-partitions"),
    Query("how long is a courier's login token valid?", "auth"),
    Query("how should I publish a domain event from a view?", "outbox"),
    Query("should I add JSON fixtures for my tests?", "factories"),
    Query("who has to approve a change to the helm charts?", "code-review"),
    Query("how many API pods can we run?", "connections"),
    Query("where do production secrets live?", "secrets"),
    Query("what do merchants pay per parcel?", "pricing"),
    Query("how do I log in as a courier on my machine?", "local-dev"),
    Query("why not RabbitMQ?", "celery-redis"),
    # a few keywords
    Query("sentry quota", "sentry-quota"),
    Query("django upgrade", "django-upgrade"),
    Query("api keys rotation", "rotate-keys"),
    Query("feature flag cleanup", "feature-flags"),
    Query("error response format", "api-errors"),
    Query("celery task retries", "celery-retries"),
    Query("on-call handover", "on-call"),
    Query("react native", "react-native"),
    Query("monorepo ci", "monorepo"),
    # paraphrases that share few words with the answer
    Query("pickup times shifted by an hour after the clocks changed", "dst"),
    Query("customers receive the same code by text message twice", "duplicate-sms"),
    Query("invoice totals wrong by a cent", "rounding"),
    Query("pdf printing container keeps running out of RAM", "label-oom"),
    Query("nightly reporting slows down the shop", "reports-replica"),
    Query("oldest phones the delivery app still supports", "old-phones"),
    Query("is the courier app usable by blind people?", "accessibility"),
    Query("which cloud region are we in?", "gke"),
    Query("how fresh is the free compartment count?", "availability-cache"),
    Query("how do I trace one parcel across every service in the logs?", "log-context"),
    Query("where does the analytics team get its events from?", "pubsub"),
    # an identifier or an error message, pasted
    Query("LCK-504", "locker-timeout"),
    Query("worker_max_tasks_per_child", "label-oom"),
    Query("test_courier_handover", "flaky-handover"),
    Query("prepared statement does not exist", "pgbouncer"),
    Query("LOCKER_FULL", "api-errors"),
)

OFF_TOPIC: tuple[str, ...] = (
    "how do I test a car battery with a multimeter",
    "a free database of stock photos",
    "when do swallows migrate south for the winter",
    "how to deploy a parachute safely",
    "how do I rotate the tires on my car",
    "what is a good recipe for banana bread",
    "who won the football world cup in 2018",
    "what should I pack for a week of hiking in the alps",
    "how many calories are in an avocado",
    "tips for learning to play the guitar",
    "what time do supermarkets close on sunday",
    "how do I ask my landlord to fix the heating",
)

# A smaller store: one memory for each topic, and the questions it answers.
ONE_PER_TOPIC: tuple[str, ...] = (
    "postgres",
    "stripe",
    "canary",
    "mqtt",
    "sentry-quota",
    "gdpr-retention",
    "old-phones",
    "factories",
    "django-upgrade",
    "auth",
    "availability-cache",
    "outbox",
    "on-call",
    "pricing",
    "secrets",
    "log-context",
)
ONE_PER_TOPIC_QUERIES: tuple[Query, ...] = tuple(q for q in QUERIES if q.target in ONE_PER_TOPIC)

# The tags an agent would give these memories: a few, mostly the topic.
TAGS: dict[str, tuple[str, ...]] = {
    "postgres": ("database", "postgres"),
    "stripe": ("billing", "stripe", "payments"),
    "celery-redis": ("celery", "redis", "jobs"),
    "react-native": ("courier-app", "mobile"),
    "mqtt": ("lockers", "mqtt"),
    "monorepo": ("repository", "ci"),
    "feature-flags": ("feature-flags", "unleash"),
    "pricing": ("billing", "pricing"),
    "migrations": ("database", "migrations"),
    "webhooks": ("billing", "stripe", "webhooks"),
    "outbox": ("events", "outbox"),
    "api-errors": ("api", "errors"),
    "factories": ("testing",),
    "celery-retries": ("celery", "jobs"),
    "code-review": ("process", "review"),
    "log-context": ("logging", "observability"),
    "canary": ("deploy", "argo"),
    "rollback": ("deploy", "helm"),
    "on-call": ("process", "on-call"),
    "local-dev": ("dev-setup",),
    "secrets": ("security", "secrets"),
    "pgbouncer": ("database", "pgbouncer"),
    "dst": ("time", "bug"),
    "duplicate-sms": ("sms", "celery", "bug"),
    "locker-timeout": ("lockers", "mqtt"),
    "label-oom": ("labels", "memory", "kubernetes"),
    "rounding": ("billing", "invoices", "bug"),
    "sentry-quota": ("sentry", "observability"),
    "flaky-handover": ("testing", "ci", "flaky"),
    "django-upgrade": ("django", "upgrade"),
    "remove-v1": ("api", "partners"),
    "rotate-keys": ("security", "api-keys"),
    "reports-replica": ("database", "reports"),
    "sms-fallback": ("sms", "twilio"),
    "accessibility": ("courier-app", "accessibility"),
    "modular-monolith": ("backend", "django"),
    "pubsub": ("events", "analytics"),
    "gke": ("infrastructure", "kubernetes"),
    "tracking-partitions": ("database", "tracking"),
    "auth": ("auth", "security"),
    "availability-cache": ("redis", "lockers", "cache"),
    "gdpr-retention": ("gdpr", "privacy"),
    "eu-only": ("gdpr", "vendors"),
    "latency-slo": ("performance", "slo"),
    "old-phones": ("courier-app", "mobile"),
    "no-pii-logs": ("privacy", "logging"),
    "deploy-freeze": ("deploy", "process"),
    "connections": ("database", "pgbouncer", "kubernetes"),
}
