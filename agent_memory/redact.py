"""Secrets never stored: high-confidence secret shapes are replaced before a write.

Agents paste keys and tokens into what they remember, and every runtime on the machine,
every export and every team database would then hold them. The service calls
:func:`redact` on a memory's content (store, update, both imports) after validating it and
before embedding or writing it. Only shapes that are secrets with high confidence are
touched, so that prose, code and hashes stay as written: vendor prefixes with their exact
lengths, PEM private key blocks, JWTs, and ``password=``-style assignments whose value is
not a placeholder. Stdlib only: this module is imported on every server's start.
"""

from __future__ import annotations

import re

MARKER = "[redacted:{}]"
# An assignment's value shorter than this is left alone (``token=5``, ``secret: no``).
MIN_VALUE_CHARS = 4


def _assignment(words: str) -> re.Pattern[str]:
    """``KEY=value``, ``KEY: value``, ``"KEY": "value"``, ``KEY := value``, ``'KEY' => 'v'``.

    KEY is an identifier ending in one of ``words`` (any case: ``DB_PASSWORD``,
    ``accessToken``). What is replaced is the group ``value`` (a quoted string) or ``bare``
    (an unquoted run); after ``:`` an unquoted value must end its line or be followed by ``,``
    ``;`` or ``}`` (YAML, not prose such as "the token: rotate it weekly").
    """
    key = rf"(?<![\w.-])(?i:[\w.-]*?(?:{words}))[\"']?[^\S\r\n]*"
    quoted = r"(?P<q>[\"'`])(?P<value>(?:(?!(?P=q))[^\r\n\\])+)(?P=q)"
    bare = r"(?P<bare>[^\s\"'`,;&}]+)(?(colon)(?=[^\S\r\n]*(?:$|[,;}])))"
    return re.compile(
        rf"{key}(?:=>|:=|(?P<colon>:)(?![=:])|=(?!=))[^\S\r\n]*(?:{quoted}|{bare})",
        re.MULTILINE,
    )


# (kind, pattern), applied in this order; a pattern with a group named ``value`` (or
# ``bare``) replaces only that group and keeps the rest (the key, the URL's user).
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----"
            r"(?:(?:[^-]|-(?!----))*?-----END[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:[^\S\r\n]*(?:\r?\n|\\r?\\n)[^\S\r\n]*[A-Za-z0-9+/=]{16,})*)"  # cut short:
            # the base64 lines that follow, up to a blank line
        ),
    ),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{40,})\b")),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("slack-token", re.compile(r"\b(?:xox[abposr]|xapp)-[0-9]+-[A-Za-z0-9-]{10,}")),
    (
        "slack-webhook",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+"),
    ),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("stripe-key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{24,}\b")),
    ("anthropic-api-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{32,}")),
    # sk- then a run of 20+ letters, digits or _ holding a digit and an uppercase letter:
    # not "sk-learn-compatible-estimators", "sk-long_snake_case_name".
    (
        "openai-api-key",
        re.compile(
            r"\bsk-(?:[a-z]+-)?(?=[\w-]*[0-9])(?=[\w-]*[A-Z])[\w-]*?[A-Za-z0-9_]{20,}[\w-]*",
            re.ASCII,
        ),
    ),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.ey[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
    (
        "bearer-token",
        re.compile(r"\b(?i:bearer)[^\S\r\n]+(?P<value>(?=[\w.~+/-]*[0-9])[\w.~+/-]{20,}=*)"),
    ),
    ("url-password", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/:@]+:(?P<value>[^\s/@]+)@")),
    ("password", _assignment(r"password|passwd|passphrase")),
    ("secret", _assignment(r"secret|secret[_-]?(?:access[_-]?)?key|private[_-]?key")),
    ("api-key", _assignment(r"api[_-]?key|access[_-]?key")),
    ("token", _assignment(r"token")),
)
_VALUE_GROUPS = ("value", "bare")
_NOT_SECRETS = frozenset({"null", "none", "nil", "true", "false", "undefined", "required"})
_MASKED = frozenset("*xX.•-_")
_ATTRIBUTE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def placeholder(value: str) -> bool:
    """A value that stands for a secret rather than being one: ``***``, ``<token>``,
    ``${VAR}``, ``$VAR``, ``{name}``, ``%s``, ``os.environ[...]``, ``get_token()``,
    ``settings.token``, ``None``, a marker already written, or a value too short to be one."""
    return (
        len(value) < MIN_VALUE_CHARS
        or value[0] in "$<{%[:"
        or set(value) <= _MASKED
        or value.lower() in _NOT_SECRETS
        or "(" in value
        or "[" in value
        or _ATTRIBUTE.fullmatch(value) is not None
    )


def redact(text: str) -> tuple[str, list[str]]:
    """``text`` with each secret replaced by its marker, and the kinds replaced: one entry
    per secret, in the order of PATTERNS (so ``len`` is how many were redacted)."""
    found: list[str] = []
    for kind, pattern in PATTERNS:
        text = pattern.sub(lambda m, kind=kind: _replaced(m, kind, found), text)
    return text, found


def _replaced(match: re.Match[str], kind: str, found: list[str]) -> str:
    marker = MARKER.format(kind)
    for group in _VALUE_GROUPS:
        if group in match.re.groupindex and match.group(group) is not None:
            value = match.group(group)
            if placeholder(value):
                return match.group(0)
            found.append(kind)
            start, end = match.span(group)
            whole = match.group(0)
            offset = match.start()
            return whole[: start - offset] + marker + whole[end - offset :]
    found.append(kind)
    return marker
