"""Secret redaction: what a value after a key named for a secret is (a placeholder, a
path, a name, code, prose, or a secret), and where that value begins and ends.

The rules of redact_rules.py that read ``KEY = value`` are built here (:func:`keyed`) and
judged here (:func:`assigned`). Every scan consumes runs possessively and reads at most
CONTEXT_CHARS back, so the work per match stays bounded (see redact.py).
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable
from typing import NamedTuple

# An assignment's value shorter than this is left alone (``token=5``, ``secret: no``).
MIN_VALUE_CHARS = 4
# ... and a value of digits only shorter than this (``SQL_COPT_SS_ACCESS_TOKEN = 1256``).
MIN_SECRET_DIGITS = 8
# How far back from a match a rule reads its context: the whole key (``GITHUB_`` of
# ``GITHUB_TOKEN``), the character that opens it, ``curl`` before ``-u``. A bound, so
# that the work per match stays constant.
CONTEXT_CHARS = 128

Span = tuple[int, int, bool]  # (start, end, is a secret): what a rule read, and its verdict


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


def template(value: str) -> bool:
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


def short(value: str) -> bool:
    return len(value) < MIN_VALUE_CHARS or (value.isdigit() and len(value) < MIN_SECRET_DIGITS)


def basic_credentials(value: str) -> bool:
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
    if short(value) or "[redacted:" in value:
        return True
    if a.quoted:
        return template(value) or _names(kind, a.key, value)
    word = _FIRST_WORD.match(value).group()  # type: ignore[union-attr]
    rest = value[len(word) :]
    if not word or template(word) or _code_word(word) or _code(word, rest, a):
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


def assigned(
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


def keyed(words: str) -> re.Pattern[str]:
    """``KEY=value``, ``KEY: value``, ``"KEY": "value"``, ``KEY := value``, ``'KEY' => 'v'``,
    where KEY is an identifier ending in ``words`` (``DB_PASSWORD``, ``accessToken``)."""
    return re.compile(rf"(?P<key>{words}){_SEPARATOR}")
