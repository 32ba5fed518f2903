"""Secrets never stored: real-looking (generated, fake) secrets are redacted before a write,
and look-alikes (hashes, UUIDs, prose, code, placeholders) stay exactly as written."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from agent_memory.cli.main import cli
from agent_memory.mcp import server as mcp_server
from agent_memory.service.core import MemoryService
from agent_memory.service.redact import RULES, redact
from agent_memory.service.tokens import Tokens
from agent_memory.storage import open_store
from agent_memory.transfer import gsd, jsonl
from agent_memory.transfer.portable import jsonl_reader
from tests.support.redaction_set import ADVERSARIAL

_RNG = random.Random(18)
ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
URLSAFE = ALNUM + "-_"
DIGITS = string.digits


def fake(alphabet: str, n: int, rng: random.Random = _RNG) -> str:
    """n random characters (fixed seed): shaped like a secret, and none."""
    return "".join(rng.choice(alphabet) for _ in range(n))


def b64url(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


PEM_BODY = "\n".join(fake(ALNUM + "+/", 64) for _ in range(5)) + "\n" + fake(ALNUM, 20) + "=="


def pem(label: str) -> str:
    return f"-----BEGIN {label}-----\n{PEM_BODY}\n-----END {label}-----"


JWT = ".".join(
    [b64url({"alg": "HS256", "typ": "JWT"}), b64url({"sub": "42", "iat": 1}), fake(URLSAFE, 43)]
)

# (a text holding one secret, its kind)
SECRETS = [
    (pem("RSA PRIVATE KEY"), "private-key"),
    (pem("PRIVATE KEY"), "private-key"),
    (pem("OPENSSH PRIVATE KEY"), "private-key"),
    (pem("PGP PRIVATE KEY BLOCK"), "private-key"),
    (
        "-----BEGIN EC PRIVATE KEY-----\\n" + fake(ALNUM, 64) + "\\n-----END EC PRIVATE KEY-----",
        "private-key",
    ),  # a key inside a JSON string, its newlines escaped
    ("-----BEGIN PRIVATE KEY-----\n" + fake(ALNUM, 64) + "\n" + fake(ALNUM, 64), "private-key"),
    ("AKIA" + fake(UPPER, 16), "aws-access-key"),
    ("ASIA" + fake(UPPER, 16), "aws-access-key"),
    ("AIza" + fake(URLSAFE, 35), "google-api-key"),
    ("ghp_" + fake(ALNUM, 36), "github-token"),
    ("gho_" + fake(ALNUM, 36), "github-token"),
    ("ghu_" + fake(ALNUM, 36), "github-token"),
    ("ghs_" + fake(ALNUM, 36), "github-token"),
    ("ghr_" + fake(ALNUM, 36), "github-token"),
    ("github_pat_" + fake(ALNUM, 22) + "_" + fake(ALNUM, 59), "github-token"),
    ("glpat-" + fake(URLSAFE, 20), "gitlab-token"),
    (f"xoxb-{fake(DIGITS, 12)}-{fake(DIGITS, 13)}-{fake(ALNUM, 24)}", "slack-token"),
    ("xoxp-" + "-".join(fake(DIGITS, 12) for _ in range(3)) + "-" + fake(ALNUM, 32), "slack-token"),
    (f"xapp-1-A{fake(UPPER, 10)}-{fake(DIGITS, 13)}-{fake(ALNUM, 64)}", "slack-token"),
    (
        "https://hooks.slack.com/services/T"
        + fake(UPPER, 8)
        + "/B"
        + fake(UPPER, 8)
        + "/"
        + fake(ALNUM, 24),
        "slack-webhook",
    ),
    ("npm_" + fake(ALNUM, 36), "npm-token"),
    ("sk_live_" + fake(ALNUM, 24), "stripe-key"),
    ("sk-" + fake(ALNUM, 20) + "T3BlbkFJ" + fake(ALNUM, 20), "openai-api-key"),
    ("sk-proj-" + fake(URLSAFE, 100) + "T3BlbkFJ" + fake(URLSAFE, 40), "openai-api-key"),
    ("sk-ant-api03-" + fake(URLSAFE, 93) + "AA", "anthropic-api-key"),
    (JWT, "jwt"),
    ("Authorization: Bearer " + fake(ALNUM, 40), "bearer-token"),
    ("postgres://app:" + fake(ALNUM, 16) + "@db.internal:5432/prod", "url-password"),
    ("password=" + fake(ALNUM, 12), "password"),
    ("mysql -u root --password=hunter", "password"),
    ("DB_PASSWORD=hunter2hunter2", "password"),
    ("password: s3cr3t-Value", "password"),
    ("  db_password: Summer2024\n  user: app", "password"),
    ('{"password": "correct horse battery staple"}', "password"),
    ("login with password = 'Tr0ub4dor&3'", "password"),
    ("client_secret=" + fake(ALNUM, 32), "secret"),
    ("aws_secret_access_key = " + fake(ALNUM + "+/", 40), "secret"),
    ("export API_KEY=" + fake(ALNUM, 32), "api-key"),
    ('apiKey: "' + fake(ALNUM, 32) + '"', "api-key"),
    ("curl https://api.example.com/v1?access_token=" + fake(ALNUM, 30) + "&page=2", "token"),
    ("token := `" + fake(ALNUM, 20) + "`", "token"),
    ("'auth_token' => '" + fake(ALNUM, 20) + "'", "token"),
]

# Texts that hold no secret: stored exactly as sent.
LOOK_ALIKES = [
    hashlib.sha1(b"commit").hexdigest(),  # a git SHA
    "fixed in 3f2a9c1, see " + hashlib.sha1(b"x").hexdigest(),
    hashlib.sha256(b"artifact").hexdigest(),
    "sha512: " + hashlib.sha512(b"x").hexdigest(),
    str(uuid.UUID(int=_RNG.getrandbits(128))),
    base64.b64encode(b"ordinary data, nothing secret about it at all " * 3).decode(),
    "A risk-free migration: the task-management disk-backed queue.",
    "We need a password reset flow and a token bucket for rate limits.",
    "token = get_token()",
    "password = os.environ['DB_PASSWORD']",
    'api_key = os.environ.get("API_KEY")',
    "password: ${DB_PASSWORD}",
    "token=$GITHUB_TOKEN",
    "password=<your password here>",
    "password=***",
    "secret: ********",
    "password=",
    'password: ""',
    "token = self.token",
    "api_key = settings.api_key",
    "max_tokens=4096 and tokens: 12",
    "password_hash = bcrypt(pw)",
    "if password == stored: return True",
    "The token: rotate it weekly, the password: never reuse it.",
    "Login failed. Password: incorrect",
    "Token: Expired",
    "secretKeyRef: db-credentials",
    "api_key_id: 1234",
    "token = Error",
    "SQL_COPT_SS_ACCESS_TOKEN = 1256",
    "f(_token=_token, allow_token=False)",
    "BasicAuth(username=username, password=password) and ApiKeyAuth(api_key=key)",
    "def sign(private_key: PKCS7PrivateKeyTypes, data: bytes): ...",
    "styles = {Token: '#cccccc', Comment: '#888'}",
    'the marker is _SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"',
    "e.g. `pass` in `https://user:pass@host:port/path?query#fragment`",
    "AKIA is the prefix of AWS access key ids.",
    "AKIA1234 is too short to be one",
    "ghp_x is a GitHub token prefix; glpat-abc is GitLab's",
    "sk-learn-compatible-estimators-for-everyone",
    "xoxb- tokens belong to bots",
    "eyJhbGciOiJIUzI1NiJ9 alone is only a header",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0MiJ9 has two segments",
    "# Heading\n\n- **bold** item with `code`\n\n| key | value |\n|---|---|\n| a | b |\n",
    "https://example.com/search?q=sqlite+fts5&page=2&sort=desc&utm_source=newsletter&lang=en",
    "-----BEGIN CERTIFICATE-----\nMIIB" + "A" * 60 + "\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----\nMIIB" + "A" * 60 + "\n-----END PUBLIC KEY-----",
    "Bearer tokens are sent in the Authorization header.",
    "https://user@example.com:8080/path@v2",
    "def login(user, password):\n    token = issue(user)\n    return token\n",
]


# Kinds added later draw from their own generator, so the values above stay as they were.
_MORE = random.Random(31)
LETTERS = string.ascii_letters
BASIC = base64.b64encode(b"deploy:Tr0ub4dor&3").decode()
SECRETS += [
    ("SG." + fake(URLSAFE, 22, _MORE) + "." + fake(URLSAFE, 43, _MORE), "sendgrid-api-key"),
    ("hf_" + fake(LETTERS, 34, _MORE), "huggingface-token"),
    ("pypi-AgEIcHlwaS5vcmc" + fake(URLSAFE, 70, _MORE), "pypi-token"),
    ("whsec_" + fake(ALNUM, 32, _MORE), "stripe-key"),
    (f"xoxe-1-{fake(ALNUM, 40, _MORE)}", "slack-token"),
    (f"xoxe.xoxp-1-{fake(ALNUM, 40, _MORE)}", "slack-token"),
    ("Authorization: Basic " + BASIC, "basic-auth"),
    ('{"auths": {"ghcr.io": {"auth": "' + BASIC + '"}}}', "basic-auth"),
    ("curl -u deploy:" + fake(ALNUM, 16, _MORE) + " https://api.example.com", "password"),
]
# Our own tokens (service/tokens.py), from a generator of their own. The first secret reads
# as a dotted name (``ci.Kk1X...``) to the rule of a key named ``token``.
AMT = "amt_ci.Kk1X9yB29o3A1bKoXIY_AvoIsophYSX4gA1SEjYAvEq"
AMT_DASHED = "amt_deploy-bot." + fake(URLSAFE, 42, random.Random(48)) + "-"
SECRETS += [(AMT, "agent-memory-token"), (AMT_DASHED, "agent-memory-token")]
# OAuth's bearer secrets (service/oauth.py): an access token, a refresh token, and the
# one-time code `token approve` prints, which signs in as its token.
OAUTH_ACCESS = "amoa_" + fake(URLSAFE, 43, random.Random(49))
OAUTH_REFRESH = "amor_" + fake(URLSAFE, 43, random.Random(50))
APPROVAL = "K7QP-M3XZ-9HTB"
SECRETS += [
    (OAUTH_ACCESS, "agent-memory-token"),
    (OAUTH_REFRESH, "agent-memory-token"),
    (APPROVAL, "agent-memory-approval-code"),
]


def marker(kind: str) -> str:
    return f"[redacted:{kind}]"


@pytest.mark.parametrize(("secret", "kind"), SECRETS)
def test_each_secret_shape_is_redacted_in_prose(secret, kind):
    text = f"Note for later: {secret}\nthen deploy."
    redacted, kinds = redact(text)
    assert kinds == [kind]
    assert marker(kind) in redacted
    assert redacted.startswith("Note for later: ")
    assert redacted.endswith("\nthen deploy.") or kind == "private-key"


def test_every_kind_in_the_table_has_a_secret_in_the_corpus():
    assert {rule.kind for rule in RULES} == {kind for _, kind in SECRETS}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2hunter2", "password=[redacted:password]"),
        ('"password": "a b c d"', '"password": "[redacted:password]"'),
        ("DB_PASSWORD: hunter22", "DB_PASSWORD: [redacted:password]"),
        ("token=ghp_" + "a1" * 18, "token=[redacted:github-token]"),
        ("postgres://app:pa55word@db/x", "postgres://app:[redacted:url-password]@db/x"),
        (
            "Authorization: Bearer abc123def456ghi789jkl0",
            "Authorization: Bearer [redacted:bearer-token]",
        ),
    ],
)
def test_assignments_keep_the_key_and_replace_the_value(text, expected):
    assert redact(text)[0] == expected


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_stay_untouched(text):
    assert redact(text) == (text, [])


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        (f"the CI token is {AMT}", "the CI token is [redacted:agent-memory-token]"),
        (f"AGENT_MEMORY_TOKEN={AMT}", "AGENT_MEMORY_TOKEN=[redacted:agent-memory-token]"),
        (
            f"export AGENT_MEMORY_TOKEN='{AMT}'",
            "export AGENT_MEMORY_TOKEN='[redacted:agent-memory-token]'",
        ),
        (f"token: {AMT}", "token: [redacted:agent-memory-token]"),
        (f'{{"token": "{AMT_DASHED}"}}', '{"token": "[redacted:agent-memory-token]"}'),
        (
            f"Authorization: Bearer {AMT_DASHED}",
            "Authorization: Bearer [redacted:agent-memory-token]",
        ),
    ],
)
def test_our_own_tokens_are_redacted_wherever_written(text, stored):
    assert redact(text) == (stored, ["agent-memory-token"])


@pytest.mark.parametrize(
    "text",
    [
        "amt_ is the prefix of our tokens: amt_NAME.SECRET",
        "amt_ci.short",
        f"x{AMT}",  # inside a longer word
        AMT + "x",  # a longer secret than ours
    ],
)
def test_what_only_looks_like_our_token_is_kept(text):
    assert redact(text) == (text, [])


@pytest.mark.parametrize(
    "text",
    [
        "amoa_ and amor_ begin OAuth's tokens",
        f"x{OAUTH_ACCESS}",  # inside a longer word
        OAUTH_REFRESH + "x",  # a longer secret than ours
        "make-sure-that the flag is set",  # words of four letters, in lower case
        "DEAD-BEEF",  # two groups
        f"{APPROVAL}-ABCD",  # a longer key than the code
        f"X{APPROVAL}",
        "ABCD-EF1H-JKMN",  # 1 is not among the code's letters
        str(uuid.UUID(int=0x2A3B4C5D6E7F8A9B2C3D4E5F6A7B8C9D)).upper(),
    ],
)
def test_what_only_looks_like_an_oauth_secret_is_kept(text):
    assert redact(text) == (text, [])


def test_the_oauth_secrets_the_daemon_issues_are_redacted_in_what_is_stored(service):
    """Each is a bearer secret: whoever reads it acts as the token that approved it, so a
    read-only token must not find a full token's in a memory."""
    from agent_memory.service.oauth import OAuth, Request

    token = Tokens(service).create("alice")
    oauth = OAuth(service)
    oauth.register("c", {"client_id": "c", "redirect_uris": ["http://127.0.0.1:9/cb"]})
    request = Request("http://127.0.0.1:9/cb", True, "x" * 43, "http://127.0.0.1:1/mcp", [], "s")
    consent, _, _ = oauth.sign_in(oauth.open_request("c", request), token)
    issued = oauth.exchange(oauth.decide(consent, True)[1], "c")
    approval = oauth.approval("alice")
    for secret, kind in (
        (issued.access_token, "agent-memory-token"),
        (issued.refresh_token, "agent-memory-token"),
        (approval, "agent-memory-approval-code"),
    ):
        answer = service.store({"content": f"connect with {secret} today", "type": "PATTERN"})
        assert answer["redacted"] == [kind]
    stored = " ".join(m["content"] for m in service.list({}))
    for secret in (issued.access_token, issued.refresh_token, approval):
        assert secret not in stored


def test_a_token_the_daemon_issues_is_redacted_in_what_is_stored(service):
    issued = Tokens(service).create("ci", read_only=False)
    for text in (f"token is {issued}", f"AGENT_MEMORY_TOKEN={issued}"):
        answer = service.store({"content": text, "type": "PATTERN"})
        assert answer["redacted"] == ["agent-memory-token"]
    stored = " ".join(m["content"] for m in service.list({}))
    assert issued.split(".")[1] not in stored


def test_several_secrets_are_each_counted():
    text = f"ghp_{'b2' * 18} and ghp_{'c3' * 18} and AKIA{'D' * 16}"
    assert redact(text) == (
        "[redacted:github-token] and [redacted:github-token] and [redacted:aws-access-key]",
        ["aws-access-key", "github-token", "github-token"],
    )


def test_redacting_twice_changes_nothing_more():
    text = "\n\n".join(secret for secret, _ in SECRETS)
    once, kinds = redact(text)
    assert len(kinds) == len(SECRETS)
    assert redact(once) == (once, [])


# -- what is replaced, and what is kept -------------------------------------------------

SHA1 = hashlib.sha1(b"release").hexdigest()
SHA256 = hashlib.sha256(b"release").hexdigest()
UUID = str(uuid.UUID(int=_MORE.getrandbits(128)))
AZURE_KEY = fake(ALNUM + "+/", 86, _MORE) + "=="
AWS_SECRET = "/" + fake(ALNUM + "+/", 39, _MORE)  # base64 that begins like a path


# (text, what is stored): the value, or the part of it that is the secret, is replaced
@pytest.mark.parametrize(
    ("text", "stored"),
    [
        # a password may hold & , ) ; and spaces: unquoted, it runs to the end of its line
        ("password=Tr0ub4dor&3", "password=[redacted:password]"),
        ("DB_PASSWORD=ab,cd;ef)gh", "DB_PASSWORD=[redacted:password]"),
        ("PASSPHRASE=correct horse battery staple", "PASSPHRASE=[redacted:password]"),
        ("password = hunter2 (the old one)\nnext", "password = [redacted:password]\nnext"),
        ("password=hunter2hunter2  # prod", "password=[redacted:password]  # prod"),
        # ... except where the format ends it: a URL's query, a connection string, a quote
        (
            "https://api.example.com/v1?access_token=abc123XYZ789def456&page=2",
            "https://api.example.com/v1?access_token=[redacted:token]&page=2",
        ),
        (
            "Server=db;Password=hunter2hunter2;Database=app",
            "Server=db;Password=[redacted:password];Database=app",
        ),
        (
            "Set `DB_PASSWORD=hunter2hunter2` in .env, then run `make`.",
            "Set `DB_PASSWORD=[redacted:password]` in .env, then run `make`.",
        ),
        (
            '- "POSTGRES_PASSWORD=hunter2hunter2"',
            '- "POSTGRES_PASSWORD=[redacted:password]"',
        ),
        # quoted values with escaped quotes and backslashes, and JSON inside a JSON string
        ('{"password": "ab\\"cd\\\\ef"}', '{"password": "[redacted:password]"}'),
        (
            '"{\\"password\\": \\"hunter2hunter2\\", \\"user\\": \\"app\\"}"',
            '"{\\"password\\": \\"[redacted:password]\\", \\"user\\": \\"app\\"}"',
        ),
        (
            '"{\\"password\\":\\"a\\\\\\"b\\\\\\\\c1234\\"}"',
            '"{\\"password\\":\\"[redacted:password]\\"}"',
        ),
        # YAML: the value on the next line
        ("password:\n  hunter2hunter2\nuser: app", "password:\n  [redacted:password]\nuser: app"),
        (
            "password: |\n  hunter2hunter2\nuser: app",
            "password: |\n  [redacted:password]\nuser: app",
        ),
        # URL passwords: an empty user, an @ in the password
        ("redis://:pw@cache:6379/0", "redis://:[redacted:url-password]@cache:6379/0"),
        (
            "postgres://app:p@ss@w0rd@db:5432/prod",
            "postgres://app:[redacted:url-password]@db:5432/prod",
        ),
        # more key names
        ("DB_PASS=hunter2hunter2", "DB_PASS=[redacted:password]"),
        ("SMTP_PASS: hunter2hunter2", "SMTP_PASS: [redacted:password]"),
        ("MYSQL_PWD=hunter2hunter2", "MYSQL_PWD=[redacted:password]"),
        ("dbPass = 'hunter2hunter2'", "dbPass = '[redacted:password]'"),
        (
            f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={AZURE_KEY};"
            "EndpointSuffix=core.windows.net",
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[redacted:api-key];"
            "EndpointSuffix=core.windows.net",
        ),
        ("SECRET_KEY_BASE=" + SHA256 * 2, "SECRET_KEY_BASE=[redacted:secret]"),
        ("JWT_SECRET=keyboard cat", "JWT_SECRET=[redacted:secret]"),
        # HTTP credentials
        (f"Authorization: Basic {BASIC}", "Authorization: Basic [redacted:basic-auth]"),
        (
            f'curl -u "deploy:{BASIC}" https://x.example.com',
            'curl -u "deploy:[redacted:password]" https://x.example.com',
        ),
        (
            "curl --user=deploy:hunter2hunter2 https://x",
            "curl --user=deploy:[redacted:password] https://x",
        ),
        (
            f"//registry.npmjs.org/:_auth={BASIC}",
            "//registry.npmjs.org/:_auth=[redacted:basic-auth]",
        ),
        # the other side of the names kept below: these look generated
        (f"private_key: {AWS_SECRET}", "private_key: [redacted:secret]"),
        ("api_key: Xk9f-2bQz-R7tW", "api_key: [redacted:api-key]"),
        ("password: my-tls-secret", "password: [redacted:password]"),
        # a hash or UUID after a key that names a credential is one
        (f"GITHUB_TOKEN={SHA1}", "GITHUB_TOKEN=[redacted:token]"),
        (f"access_token: {UUID}", "access_token: [redacted:token]"),
        (f"CODECOV_TOKEN={UUID} for uploads", "CODECOV_TOKEN=[redacted:token]"),
        (f"DD_API_KEY={SHA1[:32]}", "DD_API_KEY=[redacted:api-key]"),
        (f"client_secret = '{SHA256}'", "client_secret = '[redacted:secret]'"),
    ],
)
def test_what_is_replaced(text, stored):
    assert redact(text)[0] == stored


GHP = "ghp_" + fake(ALNUM, 36, _MORE)
AKIA = "AKIA" + fake(UPPER, 16, _MORE)
SK_ANT = "sk-ant-api03-" + fake(URLSAFE, 93, _MORE) + "AA"


# A token written as a URL's user: its own marker, listed once (the url-password rule
# does not read the marker's colon as the user's end); x-oauth-basic is GitHub's filler.
@pytest.mark.parametrize(
    ("text", "stored", "kinds"),
    [
        (
            f"https://{GHP}@github.com/o/r.git",
            "https://[redacted:github-token]@github.com/o/r.git",
            ["github-token"],
        ),
        (
            f"https://{GHP}:x-oauth-basic@github.com/o/r.git",
            "https://[redacted:github-token]:x-oauth-basic@github.com/o/r.git",
            ["github-token"],
        ),
        (f"https://{AKIA}@host/x", "https://[redacted:aws-access-key]@host/x", ["aws-access-key"]),
        (
            f"https://{SK_ANT}@api.example.com/v1",
            "https://[redacted:anthropic-api-key]@api.example.com/v1",
            ["anthropic-api-key"],
        ),
        (
            f"https://{GHP}:hunter2hunter2@host/x",
            "https://[redacted:github-token]:[redacted:url-password]@host/x",
            ["github-token", "url-password"],
        ),
    ],
)
def test_a_token_as_a_url_user_is_redacted_once(text, stored, kinds):
    assert redact(text) == (stored, kinds)


# Values after a key named for a secret that are not secrets: the memory keeps its fact.
@pytest.mark.parametrize(
    "text",
    [
        "private_key: /etc/ssl/private/server.key",
        "ssl_private_key = ~/.ssh/id_ed25519",
        'private_key: "C:\\Users\\Deploy\\keys\\server.pem"',
        "private_key_path: certs/server.key and private_key: certs/server.key",
        "PWD=/home/app/project",
        "api_key: X-Api-Key",
        "api_key = 'X-API-KEY'",
        "secret: my-tls-secret",
        "secret: db-credentials-v2",
        "AccessKey: app.signing.key",
        f"token: {SHA1}",
        f"token = {UUID}",
        f"Resume with the session token: {UUID} after a restart.",
        f"csrf_token: {SHA256}",
        f'"nextPageToken": "{UUID}"',
        "fixed in token: 3f2a9c1",
        "token: 12 left after the retry",
        '"upgrade_token": "upgrades", "type_token": "string"',
        '_UNICODE_TOKEN = "dbapiunicode"',
        '{"password": "string", "privateKey": "string"}',  # Swagger's example body
        "auth: basic",
        "auth=ldap",
        "Authorization: Basic realm=app",
        "curl -u $USER:$TOKEN https://x.example.com",
        "docker run -u 1000:1000 app && git push -u origin main",
        "bypass=disabled; compass: north",
        "PASSPHRASE: correct horse battery staple",  # after a colon, words are prose
        "def login(password: str, token: str = None) -> bool:",
        # code and docs, as found in installed packages
        "    token: str | None = None,",
        "def decrypt(self, token: bytes | str, ttl: int | None = None) -> bytes:",
        "private_key: Ed25519PrivateKey | Ed448PrivateKey",
        ":param token: the token returned by :meth:`set`",
        "our_role: If you're implementing a client, pass :data:`h11.CLIENT`. If",
        'if request.token_type_hint == "refresh_token":  # pragma: no cover',
        "refresh_token = await self.provider.load_refresh_token(client, request.token)",
        'cparams["attrs_before"] = {SQL_COPT_SS_ACCESS_TOKEN: token_struct}',
        'conn = "DRIVER={SQL Server};SERVER=dagger;UID=user;PWD=password"',
        'query = PASSWORD.sub(r"\\1password=***", parts.query)',
        'unknown resource "file:///etc/passwd": expected memory://recent',
        "  - apiKey: requires 'api_key'\\n",
        "login(user=user, password=password)",
        "requests.post(url, json={'password': pw, 'user': user})",
    ],
)
def test_what_is_kept(text):
    assert redact(text) == (text, [])


# -- adversarial texts: each unit repeated (tests/support/redaction_set.py) -----------------
ADVERSARIAL_CHARS = 16_000


@pytest.mark.parametrize("unit", ADVERSARIAL)
def test_an_adversarial_text_redacts_to_a_fixed_point(unit):
    text = unit * (ADVERSARIAL_CHARS // len(unit)) + " x"
    redacted, _ = redact(text)
    assert redact(redacted) == (redacted, [])


# -- through the service: store, update, both imports -------------------------------------

GITHUB = "ghp_" + fake(ALNUM, 36)


def test_store_answers_what_was_redacted_and_stores_only_markers(service, raw):
    answer = service.store({"content": f"deploy with {GITHUB}", "type": "PATTERN"})
    assert answer == {"id": answer["id"], "redacted": ["github-token"]}
    (content,) = raw.execute("SELECT content FROM memories").fetchone()
    assert content == "deploy with [redacted:github-token]"
    assert service.search({"query": "ghp"})["results"] == []


def test_store_without_a_secret_answers_as_before(service):
    assert service.store({"content": "ordinary prose", "type": "PATTERN"}) == {"id": 1}


def test_the_size_limit_applies_to_the_content_as_sent(db_path):
    svc = MemoryService(open_store(db_path), max_content_bytes=40)
    try:
        with pytest.raises(Exception, match="at most 40 bytes"):
            svc.store({"content": "x " + GITHUB, "type": "PATTERN"})  # 42 bytes, 25 redacted
    finally:
        svc.close()


def test_update_redacts_new_content_and_says_so(service, raw):
    memory_id = service.store({"content": "first", "type": "PATTERN"})["id"]
    answer = service.update({"id": memory_id, "content": f"now {GITHUB}"})
    assert answer["content"] == "now [redacted:github-token]"
    assert answer["redacted"] == ["github-token"]
    assert "redacted" not in service.update({"id": memory_id, "tags": ["a"]})


def test_redact_off_stores_the_text_as_sent(db_path):
    svc = MemoryService(open_store(db_path), redact=False)
    try:
        assert svc.store({"content": GITHUB, "type": "PATTERN"}) == {"id": 1}
        assert svc.list({})[0]["content"] == GITHUB
    finally:
        svc.close()


def export_file(tmp_path, contents: list[str]):
    path = tmp_path / "in.jsonl"
    header = jsonl.header(
        exported_at=0,
        embedding_model="nomic-embed-text",
        embedding_dim=768,
        schema_version=1,
        agent_memory_version="0.1.0",
        exported_rows=len(contents),
        exported_links=0,
    )
    lines = [header] + [
        {
            "record": "memory",
            "key": i,
            "type": "PATTERN",
            "content": c,
            "tags": [],
            "source": None,
            "scope": None,
            "created_at": 1,
            "last_accessed": 1,
            "access_count": 0,
            "expires_at": None,
        }
        for i, c in enumerate(contents, start=1)
    ]
    path.write_text("".join(jsonl.line(x) for x in lines), encoding="utf-8")
    return path


def checked(path):
    reader = jsonl_reader(path)
    reader.check()
    return reader


def test_jsonl_import_redacts_counts_and_stays_idempotent(service, tmp_path):
    path = export_file(tmp_path, [f"a {GITHUB} and AKIA{'Q' * 16}", "plain", f"b {GITHUB}"])
    report = service.import_jsonl(checked(path))
    assert report["imported"] == 3
    assert (report["secrets redacted"], report["memories redacted"]) == (3, 2)
    contents = sorted(m["content"] for m in service.list({}))
    assert contents == [
        "a [redacted:github-token] and [redacted:aws-access-key]",
        "b [redacted:github-token]",
        "plain",
    ]
    again = service.import_jsonl(checked(path))  # the duplicate check sees the redacted text
    assert (again["imported"], again["skipped duplicates"]) == (0, 3)
    assert "secrets redacted" not in again


def test_gsd_import_redacts_and_stays_idempotent(service):
    parsed = gsd.parse(f"## Decisions\n- Use the bot token {GITHUB} for CI\n- Plain one\n")
    report = service.import_gsd(parsed.items, parsed.malformed, "proj")
    assert (report["imported"], report["secrets redacted"], report["memories redacted"]) == (
        2,
        1,
        1,
    )
    assert any("[redacted:github-token]" in m["content"] for m in service.list({}))
    again = service.import_gsd(parsed.items, parsed.malformed, "proj")
    assert (again["imported"], again["skipped duplicates"]) == (0, 2)


def test_memory_store_over_mcp_reports_the_redaction(service):
    async def main():
        async with Client(mcp_server.build_server(service)) as client:
            return await client.call_tool(
                "memory_store", {"content": f"key {GITHUB}", "type": "PATTERN"}
            )

    result = anyio.run(main)
    assert result.structured_content["redacted"] == ["github-token"]
    assert service.list({})[0]["content"] == "key [redacted:github-token]"


@pytest.mark.parametrize(
    ("args", "env", "stored", "line"),
    [
        ([], {}, "[redacted:github-token]", "secrets redacted: 1 in 1 memory\n"),
        (["--redact", "off"], {}, GITHUB, None),
        ([], {"AGENT_MEMORY_REDACT": "off"}, GITHUB, None),
    ],
)
def test_cli_redact_flag_and_env(tmp_path, args, env, stored, line):
    path = export_file(tmp_path, [GITHUB])
    db_path = tmp_path / "m.db"
    result = CliRunner().invoke(
        cli, ["--db", str(db_path), *args, "import", "--from", "jsonl", str(path)], env=env
    )
    assert result.exit_code == 0, result.output
    assert (line in result.stdout) if line else ("secrets redacted" not in result.stdout)
    svc = MemoryService(open_store(db_path))
    try:
        assert svc.list({})[0]["content"] == stored
    finally:
        svc.close()


def test_cli_redact_flag_takes_only_on_or_off():
    result = CliRunner().invoke(cli, ["--redact", "maybe", "serve"])
    assert result.exit_code == 2
