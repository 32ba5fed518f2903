"""Secrets never stored: high-confidence secret shapes are replaced before a write.

Agents paste keys and tokens into what they remember, and every runtime on the machine,
every export and every team database would then hold them. The service calls
:func:`redact` on every text field of a memory (store, update, both imports) after
validating it and before embedding or writing it. Only shapes that are secrets with high
confidence are touched, so that prose, code and hashes stay as written: vendor prefixes
with their lengths, PEM private key blocks, JWTs, HTTP credentials, URL passwords, and the
values of keys named for a secret (``password=``, ``api_key:``) that look like one.

Linear time, whatever the text. A rule's pattern starts only where the run of characters
it consumes begins (never inside a run another start of it would consume), consumes runs
possessively (no backtracking into them), and leaves every judgment that needs more than
a character class (lengths, mixed case, what a value looks like) to Python on what it
matched. So a start fails within its own run, or matches; a match is judged once, and the
scan resumes after what its judge read. Stdlib only: imported on every server's start.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable
from typing import NamedTuple

MARKER = "[redacted:{}]"
# An assignment's value shorter than this is left alone (``token=5``, ``secret: no``).
MIN_VALUE_CHARS = 4
# ... and a value of digits only shorter than this (``SQL_COPT_SS_ACCESS_TOKEN = 1256``).
MIN_SECRET_DIGITS = 8
# How far back from a match a rule reads its context: the whole key (``GITHUB_`` of
# ``GITHUB_TOKEN``), the character that opens it, ``curl`` before ``-u``. A bound, so
# that the work per match stays constant.
CONTEXT_CHARS = 128

Span = tuple[int, int, bool]  # (start, end, is a secret): what a rule read, and its verdict


class Rule(NamedTuple):
    """``pattern`` runs only on a text that holds one of ``hints`` (lowercase; looked for
    in the text in lowercase), which every match holds: most texts hold none, and a
    substring check costs far less than a scan. ``judge`` says what a match read and
    whether it is a secret; the scan resumes after what was read."""

    kind: str
    hints: tuple[str, ...]
    pattern: re.Pattern[str]
    judge: Callable[[re.Match[str]], Span]


def _began(width: int, chars: str = r"\w") -> str:
    """Placed after a literal prefix of ``width`` characters: the prefix is not preceded by
    one of ``chars`` (the characters of the run the rule consumes).

    Written after the prefix so that the engine can scan for the literal: 30 to 50 times
    faster on a large text (15 ms against 0.4 s per MB and pattern).
    """
    return rf"(?<![{chars}].{{{width}}})"


_URLSAFE = "A-Za-z0-9_-"
_WORD_DOT = r"\w."
_NOT_SPACE = r"\S"


def _caseless(word: str) -> str:
    """``word`` in any case, spelled so that the engine can scan for its first letter
    (an IGNORECASE group gives it nothing to scan for: 5 to 10 times slower)."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in word)


def _word_began(width: int) -> str:
    """After a key word of ``width`` letters: it begins a word of the key (DB_PASS, dbPass),
    not the middle of one (bypass)."""
    return rf"(?:(?<![A-Za-z0-9].{{{width}}})|(?<=[a-z]P.{{{width - 1}}}))"


def _whole(match: re.Match[str]) -> Span:
    return match.start(), match.end(), True


# -- values: what stands for a secret, names one, or is prose or code -------------------

# Words that are not secrets: values of code and config, and the examples of docs
# (``https://user:password@host``, ``password=password``, Swagger's ``"string"``).
_NOT_SECRETS = frozenset(
    {"null", "none", "nil", "true", "false", "undefined", "required", "string"}
    | {"password", "passwd", "pass", "passphrase", "secret", "token", "apikey", "api_key"}
    | {"x-oauth-basic"}  # GitHub's password beside a token written as a URL's user
)
_COLOR = re.compile(r"#[0-9A-Fa-f]{3,8}")
_MASKED = frozenset("*xX.•-_")
_NAME = re.compile(r"[^\W\d]+")  # letters and _, no digit
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_ATTRIBUTE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
# The first word of an unquoted value, and what follows it in code: a name passed on
# (``f(token=tok, x=1)``, ``(pw)``, ``pw;``), an annotation (``token: str | None,``,
# ``key: KeyType = None``), an expression (``tok if tok else None``, ``await load(x)``).
_FIRST_WORD = re.compile(r"[^\s,;)}\]\"'`]*+")
_PASSED = re.compile(r"[,;)}\]](?:\s|[,;)}\]]|$)|,[A-Za-z_]\w*=")
_ANNOTATED = re.compile(r"[ \t]*+[,)\]}=|]")
_EXPRESSION = re.compile(r"[ \t]*+(?:$|[^\w\s]|(?:if|or|and|else|is|in|not|for)\b)")
_KEYWORDS = frozenset({"await", "yield", "lambda", "new", "not", "typeof"})
_CALL = re.compile(r"[A-Za-z_][\w.]*\(")
# Prose after a colon: words and numbers apart, between any punctuation ("Password:
# incorrect", "the token: rotate it weekly", "token: 12 left", ":param token: see
# :meth:`set`"). A piece mixing letters and digits (hunter2) is not prose.
_PROSE = re.compile(r"[\W_]*+(?:[^\W\d_]++|\d++)(?:[\W_]++(?:[^\W\d_]++|\d++))*+[\W_]*+")
# A path or a file name: where a secret is kept, not the secret. Segments read as names
# (lowercase, Capitalized or camelCase words and digits): a random base64 value that
# happens to begin with "/" does not.
_SEGMENT = r"(?:(?:[A-Z]?[a-z0-9_.@-]++| )++|[A-Z_.-]++)"
_PATH = re.compile(
    rf"(?:~|\.{{1,2}})?/(?:{_SEGMENT}(?:/{_SEGMENT})*+)?/?"
    rf"|[A-Za-z]:[\\/](?:{_SEGMENT}(?:[\\/]{_SEGMENT})*+)?[\\/]?"
    rf"|(?:{_SEGMENT}/)*+[\w.-]+\."
    r"(?:key|pem|crt|cer|der|p8|p12|pfx|jks|keystore|pub|gpg|asc|json|ya?ml|toml|env|ini|conf|txt)"
)
# A name made of words: a header (X-Api-Key), a Kubernetes secret (my-tls-secret,
# db-credentials-v2), a config entry (app.signing.key). Generated secrets mix cases and
# digits inside their pieces; these pieces are words, short tags (v2, k8s) or numbers.
_PIECE = r"(?>(?:(?:[A-Z]?[a-z]+|[A-Z]+)[0-9]{0,2}|[0-9]{1,4}|[a-z0-9]{1,3})(?=[-_.]|\Z))"
_WORDS = re.compile(rf"{_PIECE}(?:[-_.]{_PIECE})++")
# One word (a constant's name, an enum value): after a key for an API key or a token,
# whose values are always generated.
_WORD = re.compile(r"[A-Z]?[a-z]{1,23}|[A-Z]{1,24}")
# A hash or a UUID: after a key that does not name a credential (``token``, ``csrf_token``,
# ``next_page_token``), an id rather than a secret.
_ID = re.compile(
    r"[0-9a-f]{7,}+|[0-9A-F]{7,}+"
    r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_CREDENTIAL_TOKEN = re.compile(
    r"(?i:access|auth|api|bearer|refresh|session|secret|private|personal|oauth|bot)"
    r"[_.-]?(?i:token)$|[A-Z0-9_]+_TOKEN$"
)
_BASE64 = re.compile(r"[A-Za-z0-9+/]{8,}+={0,2}")


def _template(value: str) -> bool:
    """A value that stands for a secret: ``***``, ``<token>``, ``${VAR}``, ``$VAR``,
    ``{name}``, ``%s``, ``None``, ``#ffcc00``, a doc's ``password``, a marker already
    written."""
    return (
        value[:1] in "$<{%[:"
        or set(value) <= _MASKED
        or value.lower() in _NOT_SECRETS
        or "[redacted:" in value
        or _COLOR.fullmatch(value) is not None
    )


def _code_word(word: str) -> bool:
    """A word of code: ``os.environ[...]``, ``get_token()``, ``settings.token``."""
    return "(" in word or "[" in word or _ATTRIBUTE.fullmatch(word) is not None


def _short(value: str) -> bool:
    return len(value) < MIN_VALUE_CHARS or (value.isdigit() and len(value) < MIN_SECRET_DIGITS)


def _basic_credentials(value: str) -> bool:
    """Base64 of ``user:password`` (HTTP Basic, Docker's and npm's ``auth``)."""
    if _BASE64.fullmatch(value) is None:
        return False
    try:
        decoded = binascii.a2b_base64(value + "=" * (-len(value) % 4), strict_mode=True)
        text = decoded.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return text.isprintable() and ":" in text and not text.endswith(":")


class _Value(NamedTuple):
    start: int
    end: int
    quoted: bool


class _Assignment(NamedTuple):
    """A key named for a secret, its separator, and the value after it."""

    key: str
    colon: bool
    spaced: bool  # whitespace between the separator and the value
    value: str
    quoted: bool


def _kept(kind: str, a: _Assignment) -> bool:
    """The value stands for a secret, names one, or is code or prose, not a secret: for
    every key, placeholders, code and after a colon prose; then :func:`_names`, on a
    quoted value or an unquoted one's first word."""
    value = a.value
    if _short(value) or "[redacted:" in value:
        return True
    if a.quoted:
        return _template(value) or _names(kind, a.key, value)
    word = _FIRST_WORD.match(value).group()  # type: ignore[union-attr]
    rest = value[len(word) :]
    if not word or _template(word) or _code_word(word) or _code(word, rest, a):
        return True
    if a.colon and (_NAME.fullmatch(value) or (rest and _PROSE.fullmatch(value))):
        return True
    return _names(kind, a.key, word)


def _names(kind: str, key: str, value: str) -> bool:
    """A value that names a secret or something else, by what the key says it is.

    For every key, a path. The key decides how much more the value must show: a password
    is chosen by a person, so nothing else; a secret is most often generated, so a name
    made of several words is a reference (a Kubernetes secret, a header); API keys and
    tokens are always generated, so one word is a name too; and ``token`` names many
    things that are not credentials (a CSRF, page or cache token), so after a key that
    does not name a credential (``auth_token``, ``GITHUB_TOKEN`` do) a hash or a UUID is
    an id.
    """
    if _PATH.fullmatch(value):
        return True
    if kind == "password":
        return False
    if _WORDS.fullmatch(value) or (kind in ("api-key", "token") and _WORD.fullmatch(value)):
        return True
    return kind == "token" and not _CREDENTIAL_TOKEN.search(key) and bool(_ID.fullmatch(value))


def _code(word: str, rest: str, a: _Assignment) -> bool:
    """The first word is code: after ``:`` a type annotation (``private_key: KeyType,``),
    after ``=`` a name passed on or assigned (``f(token=tok, x)``, ``token = Error``,
    ``_token=_token``)."""
    if a.colon:
        typed = _NAME.fullmatch(word) or word[:1].isupper()
        return bool(typed and _IDENTIFIER.fullmatch(word) and _ANNOTATED.match(rest))
    if a.spaced and (word in _KEYWORDS or _CALL.search(rest)):
        return True
    if not _NAME.fullmatch(word):
        return False
    if _PASSED.match(rest) or (a.spaced and _EXPRESSION.match(rest)):
        return True
    return not rest.strip() and (not word.isalpha() or not word.islower())


# -- assignments: KEY = value ------------------------------------------------------------

# After the key: its closing quote (``"password":``, ``\"password\":`` in a JSON string
# inside JSON), then ``=``, ``:``, ``:=`` or ``=>``. A colon follows an unquoted key at
# once (``pass :meth:`x``` is prose).
_SEPARATOR = r"(?P<close>\\?[\"'])?(?P<space>[ \t]*+)(?P<sep>=>|:=|:(?![=:])|=(?!=))[ \t]*+"
_QUOTED = {
    '"': re.compile(r'"((?:[^"\\\r\n]++|\\.)*+)"?'),
    "'": re.compile(r"'((?:[^'\\\r\n]++|\\.)*+)'?"),
    "`": re.compile(r"`([^`\r\n]*+)`?"),
    # \"value\" in a JSON string: \\\" is an escaped quote inside it, \" its end
    "\\": re.compile(r'\\"((?:[^\\\r\n]++|\\\\\\.|\\[^"\r\n])*+)(?:\\")?'),
}
# An unquoted value runs to the end of its line (a literal \n in a JSON string ends it
# too); inside a quoted string or code span, to its closing quote; in a URL's query, to
# the next parameter; in a ;-separated connection string, to the next ;.
_TO_LINE_END = re.compile(r"(?:[^\r\n\\]++|\\(?![rn]))*+")
_TO_QUOTE = {q: re.compile(rf"(?:[^\r\n\\{q}]++|\\(?![rn]))*+") for q in "\"'`"}
_IN_QUERY = re.compile(r"[^\s&#\"'<>]*+")
_IN_LIST = re.compile(r"[^\r\n;\"']*+")
_COMMENT = re.compile(r"[ \t]#")
# A YAML key whose value is on the next line, indented (plain, or after | or >), unless
# that line is another key, a list item or a comment.
_NEXT_LINE = re.compile(
    r"(?:[|>][+-]?[0-9]?)?[ \t]*+\r?\n[ \t]++(?![-#]|[\w\"'.-]++[ \t]*+:(?:\s|$))"
)
_KEY_HEAD = re.compile(r"[\w.-]*+")


def _key_start(text: str, at: int) -> int:
    """Where the identifier ending at ``at`` begins (at most CONTEXT_CHARS back)."""
    before = text[max(0, at - CONTEXT_CHARS) : at]
    return at - _KEY_HEAD.match(before[::-1]).end()  # type: ignore[union-attr]


def _value(text: str, match: re.Match[str], head: int) -> _Value | None:
    """The value after a key's separator (the key's identifier begins at ``head``), or
    None when there is none."""
    at = match.end()
    opener = text[head - 1 : head] if head else ""
    if opener in ("/", "\\") or (match["sep"] == ":" and match["space"] and not match["close"]):
        return None  # a path (/etc/passwd), or not a key
    if match["sep"] == ":" and (below := _NEXT_LINE.match(text, at)):
        at = below.end()
    first = text[at : at + 1]
    quote = "\\" if text.startswith('\\"', at) else first if first in "\"'`" else ""
    if quote:
        found = _QUOTED[quote].match(text, at)
        assert found is not None
        return _Value(found.start(1), found.end(1), True)
    if first in ("", "\r", "\n") or (first == "#" and text[at - 1] in " \t"):
        return None  # nothing, or a comment
    if match["close"] is None and opener in _TO_QUOTE:
        scan = _TO_QUOTE[opener]
    elif opener in ("?", "&"):
        scan = _IN_QUERY
    elif text[max(0, head - CONTEXT_CHARS) : head].rstrip().endswith(";"):
        scan = _IN_LIST
    else:
        scan = _TO_LINE_END
    end = scan.match(text, at).end()  # type: ignore[union-attr]
    comment = _COMMENT.search(text, at, end)
    if comment:
        end = comment.start()
    while end > at and text[end - 1] in " \t":
        end -= 1
    return _Value(at, end, False)


def _assigned(
    kind: str, secret: Callable[[_Assignment], bool] | None = None
) -> Callable[[re.Match[str]], Span]:
    """The judge of a key's value: the value's span and whether it is a secret (by
    ``secret``, or else by :func:`_kept`)."""

    def judge(match: re.Match[str]) -> Span:
        text = match.string
        head = _key_start(text, match.start("key"))
        found = _value(text, match, head)
        if found is None:
            return match.start(), match.end(), False
        value = text[found.start : found.end]
        spaced = text[found.start - 1].isspace()
        if not value:
            return found.start, found.end, False
        key = text[head : match.end("key")]
        assignment = _Assignment(key, match["sep"] == ":", spaced, value, found.quoted)
        verdict = secret(assignment) if secret else not _kept(kind, assignment)
        return found.start, found.end, verdict

    return judge


def _keyed(words: str) -> re.Pattern[str]:
    """``KEY=value``, ``KEY: value``, ``"KEY": "value"``, ``KEY := value``, ``'KEY' => 'v'``,
    where KEY is an identifier ending in ``words`` (``DB_PASSWORD``, ``accessToken``)."""
    return re.compile(rf"(?P<key>{words}){_SEPARATOR}")


# -- rules with a value to check ---------------------------------------------------------

_RUN_20 = re.compile(r"[A-Za-z0-9_]{20}")


def _openai(match: re.Match[str]) -> Span:
    """sk- then a run of 20+ letters, digits or _, in a word holding a digit and an
    uppercase letter: not "sk-learn-compatible-estimators", "sk-long_snake_case_name"."""
    body = match.group()[3:]
    secret = (
        any(c.isdigit() for c in body)
        and any(c.isupper() for c in body)
        and _RUN_20.search(body) is not None
    )
    return match.start(), match.end(), secret


def _mixed_case(match: re.Match[str]) -> Span:
    run = match.group()
    return match.start(), match.end(), run.lower() != run and run.upper() != run


def _bearer(match: re.Match[str]) -> Span:
    value = match["value"]
    secret = len(value) >= 20 and any(c.isdigit() for c in value)
    return match.start("value"), match.end("value"), secret


def _basic(match: re.Match[str]) -> Span:
    return match.start("value"), match.end("value"), _basic_credentials(match["value"])


_MARKER_WRITTEN = re.compile(r"\[redacted:[a-z-]++\]")


def _url_password(match: re.Match[str]) -> Span:
    """scheme://user:password@host: the password runs to the last @ before the host (it
    may hold @), and the user may be empty (redis://:password@host). A user already
    redacted (a token written as the user) is one piece: its marker's colon does not end
    it."""
    authority = match["authority"]
    at = authority.rfind("@")
    userinfo = _MARKER_WRITTEN.sub(lambda m: "_" * len(m.group()), authority[: max(at, 0)])
    colon = userinfo.find(":")
    start = match.start("authority") + colon + 1
    end = match.start("authority") + at
    password = authority[colon + 1 : at]
    secret = at > 0 and colon >= 0 and bool(password) and not _template(password)
    return start, end, secret


_CURL = re.compile(r"\bcurl\b")


def _curl_user(match: re.Match[str]) -> Span:
    """``curl -u user:password``: -u is curl's only when curl is on the line before it."""
    text = match.string
    line = text[max(0, match.start() - CONTEXT_CHARS) : match.start()].rpartition("\n")[2]
    value = match["value"]
    secret = bool(_CURL.search(line)) and not _short(value) and not _template(value)
    return match.start("value"), match.end("value"), secret


# Applied in this order; one entry per secret in ``redact``'s answer, in this order.
RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        ("private key",),
        re.compile(
            r"-----BEGIN[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----"
            r"(?:(?:[^-]|-(?!----))*?-----END[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----"
            # cut short: the base64 lines that follow, up to a blank line
            r"|(?:[^\S\r\n]*(?:\r?\n|\\r?\\n)[^\S\r\n]*[A-Za-z0-9+/=]{16,}+)+)"
        ),
        _whole,
    ),
    Rule(
        "aws-access-key",
        ("akia", "asia", "abia", "acca"),
        re.compile(rf"(?:AKIA|ASIA|ABIA|ACCA){_began(4)}[A-Z0-9]{{16}}\b"),
        _whole,
    ),
    Rule(
        "google-api-key",
        ("aiza",),
        re.compile(rf"AIza{_began(4)}[{_URLSAFE}]{{35}}(?![{_URLSAFE}])"),
        _whole,
    ),
    Rule(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(
            rf"gh[pousr]_{_began(4)}[A-Za-z0-9]{{36,}}+(?!\w)"
            rf"|github_pat_{_began(11)}[A-Za-z0-9_]{{40,}}+(?!\w)"
        ),
        _whole,
    ),
    Rule(
        "gitlab-token",
        ("glpat-",),
        re.compile(rf"glpat-{_began(6, _URLSAFE)}[{_URLSAFE}]{{20,}}+"),
        _whole,
    ),
    Rule(
        "slack-token",
        ("xox", "xapp-"),
        re.compile(
            rf"(?:xox[abeoprs]|xapp){_began(4, _WORD_DOT)}(?:\.xox[abeoprs])?"
            r"-[0-9]++-[A-Za-z0-9-]{10,}+"
        ),
        _whole,
    ),
    Rule(
        "slack-webhook",
        ("hooks.slack.com",),
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]++"),
        _whole,
    ),
    Rule("npm-token", ("npm_",), re.compile(rf"npm_{_began(4)}[A-Za-z0-9]{{36}}(?!\w)"), _whole),
    Rule(
        "pypi-token",
        ("pypi-",),
        re.compile(rf"pypi-{_began(5, _URLSAFE)}AgEIcHlwaS5vcmc[{_URLSAFE}]{{50,}}+"),
        _whole,
    ),
    Rule(
        "sendgrid-api-key",
        ("sg.",),
        re.compile(
            rf"SG\.{_began(3, '.' + _URLSAFE)}[{_URLSAFE}]{{22}}\.[{_URLSAFE}]{{43}}"
            rf"(?![{_URLSAFE}])"
        ),
        _whole,
    ),
    Rule(
        "huggingface-token",
        ("hf_",),
        re.compile(rf"hf_{_began(3)}[A-Za-z0-9]{{34,}}+(?!\w)"),
        _mixed_case,
    ),
    Rule(
        "stripe-key",
        ("k_live_", "k_test_"),
        re.compile(rf"[sr]k_(?:live|test)_{_began(8)}[A-Za-z0-9]{{24,}}+(?!\w)"),
        _whole,
    ),
    Rule(
        "stripe-key",
        ("whsec_",),
        re.compile(rf"whsec_{_began(6)}[A-Za-z0-9]{{32,}}+(?!\w)"),
        _whole,
    ),
    Rule(
        "anthropic-api-key",
        ("sk-ant-",),
        re.compile(rf"sk-ant-{_began(7, _URLSAFE)}[{_URLSAFE}]{{32,}}+"),
        _whole,
    ),
    Rule(
        "openai-api-key",
        ("sk-",),
        re.compile(rf"sk-{_began(3, _URLSAFE)}[{_URLSAFE}]++"),
        _openai,
    ),
    Rule(
        "jwt",
        ("eyj",),
        re.compile(
            rf"eyJ{_began(3, _URLSAFE)}[{_URLSAFE}]{{8,}}+\.ey[{_URLSAFE}]{{8,}}+"
            rf"\.[{_URLSAFE}]*+"
        ),
        _whole,
    ),
    Rule(
        "bearer-token",
        ("bearer",),
        re.compile(rf"(?:Bearer|bearer|BEARER){_began(6)}[ \t]++(?P<value>[\w.~+/-]++=*+)"),
        _bearer,
    ),
    Rule(
        "basic-auth",
        ("basic",),
        re.compile(rf"(?:Basic|basic|BASIC){_began(5)}[ \t]++(?P<value>[A-Za-z0-9+/]++=*+)"),
        _basic,
    ),
    Rule(
        "url-password",
        ("://",),
        re.compile(r"://(?P<authority>[^\s/?#\"'`<>]++)"),
        _url_password,
    ),
    Rule(
        "password",
        ("curl",),
        re.compile(
            rf"-{_began(1, _NOT_SPACE)}(?:u|-user)(?:[ \t]++|=)?+(?P<q>[\"'])?[^\s:\"']*+:"
            r"(?P<value>(?(q)[^\"'\r\n]*+|[^\s\"'`]*+))"
        ),
        _curl_user,
    ),
    Rule(
        "password",
        ("pass", "pwd"),
        # password, passwd, passphrase ending any key (DB_PASSWORD, userPassword); pass and
        # pwd only as a word of the key (DB_PASS, MYSQL_PWD, dbPass; not bypass, compass)
        _keyed(
            f"[Pp](?:{_caseless('ass')}(?:{_caseless('word')}|{_caseless('wd')}"
            f"|{_caseless('phrase')}|{_word_began(4)})|{_caseless('wd')}{_word_began(3)})"
        ),
        _assigned("password"),
    ),
    Rule(
        "secret",
        ("secret",),
        _keyed(
            _caseless("secret")
            + rf"(?:[_-]?(?:{_caseless('access')}[_-]?)?{_caseless('key')}"
            + rf"(?:[_-]?{_caseless('base')})?)?"
        ),
        _assigned("secret"),
    ),
    Rule(
        "secret",
        ("private",),
        _keyed(rf"{_caseless('private')}[_-]?{_caseless('key')}"),
        _assigned("secret"),
    ),
    Rule(
        "api-key",
        ("api", "access", "account"),
        _keyed(
            rf"[Aa](?:{_caseless('pi')}|{_caseless('cc')}(?:{_caseless('ess')}|{_caseless('ount')}))"
            rf"[_-]?{_caseless('key')}"
        ),
        _assigned("api-key"),
    ),
    Rule("token", ("token",), _keyed(_caseless("token")), _assigned("token")),
    Rule(
        "basic-auth",
        ("auth",),
        _keyed(_caseless("auth") + _began(4, "A-Za-z0-9")),
        _assigned("basic-auth", lambda a: _basic_credentials(a.value)),
    ),
)


def redact(text: str) -> tuple[str, list[str]]:
    """``text`` with each secret replaced by its marker, and the kinds replaced: one entry
    per secret, in the order of RULES (so ``len`` is how many were redacted)."""
    found: list[str] = []
    folded = text.lower()  # for the hints: a marker written never makes a pattern match
    for rule in RULES:
        if any(hint in folded for hint in rule.hints):
            text = _apply(rule, text, found)
    return text, found


def _apply(rule: Rule, text: str, found: list[str]) -> str:
    """One rule over the whole text: each match judged once, and the scan resumed after
    what its judge read (a value is never searched again for the rule's start)."""
    marker = MARKER.format(rule.kind)
    pieces: list[str] = []
    copied = position = 0
    search = rule.pattern.search
    while (match := search(text, position)) is not None:
        start, end, secret = rule.judge(match)
        if secret:
            pieces += (text[copied:start], marker)
            copied = end
            found.append(rule.kind)
        position = max(end, match.end())
    if not pieces:
        return text
    pieces.append(text[copied:])
    return "".join(pieces)
