"""Secret redaction's rule table: each kind of secret, the hints that let a text skip it,
its pattern, and the judge of what the pattern matched.

A rule's pattern starts only where the run of characters it consumes begins (never inside
a run another start of it would consume) and consumes runs possessively; every judgment
that needs more than a character class is left to its judge, in Python (redact.py says
why).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from agent_memory.service import oauth, tokens
from agent_memory.service.redact.values import (
    CONTEXT_CHARS,
    Span,
    assigned,
    basic_credentials,
    keyed,
    short,
    template,
)


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

    Written after the prefix, never before it, so that the engine can scan for the
    literal prefix instead of trying the lookbehind at every position.
    """
    return rf"(?<![{chars}].{{{width}}})"


_URLSAFE = "A-Za-z0-9_-"
_WORD_DASH = r"\w-"
_APPROVAL = oauth.APPROVAL_ALPHABET
_GROUP = oauth.APPROVAL_GROUP_LETTERS
_WORD_DOT = r"\w."
_NOT_SPACE = r"\S"


def _caseless(word: str) -> str:
    """``word`` in any case, spelled so that the engine can scan for its first letter
    (an IGNORECASE group gives it nothing to scan for)."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in word)


def _word_began(width: int) -> str:
    """After a key word of ``width`` letters: it begins a word of the key (DB_PASS, dbPass),
    not the middle of one (bypass)."""
    return rf"(?:(?<![A-Za-z0-9].{{{width}}})|(?<=[a-z]P.{{{width - 1}}}))"


def _whole(match: re.Match[str]) -> Span:
    return match.start(), match.end(), True


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
    return match.start("value"), match.end("value"), basic_credentials(match["value"])


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
    secret = at > 0 and colon >= 0 and bool(password) and not template(password)
    return start, end, secret


_CURL = re.compile(r"\bcurl\b")


def _curl_user(match: re.Match[str]) -> Span:
    """``curl -u user:password``: -u is curl's only when curl is on the line before it."""
    text = match.string
    line = text[max(0, match.start() - CONTEXT_CHARS) : match.start()].rpartition("\n")[2]
    value = match["value"]
    secret = bool(_CURL.search(line)) and not short(value) and not template(value)
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
        "agent-memory-token",
        (tokens.PREFIX,),
        re.compile(
            rf"{tokens.PREFIX}{_began(len(tokens.PREFIX))}(?>{tokens.NAME_PATTERN})"
            rf"\.[{_URLSAFE}]{{{tokens.SECRET_CHARS}}}(?![{_URLSAFE}])"
        ),
        _whole,
    ),
    Rule(
        "agent-memory-token",
        (oauth.ACCESS_PREFIX, oauth.REFRESH_PREFIX),
        re.compile(
            rf"(?:{oauth.ACCESS_PREFIX}|{oauth.REFRESH_PREFIX}){_began(len(oauth.ACCESS_PREFIX))}"
            rf"[{_URLSAFE}]{{{oauth.SECRET_CHARS}}}(?![{_URLSAFE}])"
        ),
        _whole,
    ),
    Rule(
        "agent-memory-approval-code",
        ("-",),
        # as `token approve` prints it: groups of its letters in upper case, joined by '-'
        re.compile(
            rf"[{_APPROVAL}]{_began(1, _WORD_DASH)}[{_APPROVAL}]{{{_GROUP - 1}}}"
            rf"(?:-[{_APPROVAL}]{{{_GROUP}}}){{{oauth.APPROVAL_GROUPS - 1}}}(?![{_WORD_DASH}])"
        ),
        _whole,
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
        keyed(
            f"[Pp](?:{_caseless('ass')}(?:{_caseless('word')}|{_caseless('wd')}"
            f"|{_caseless('phrase')}|{_word_began(4)})|{_caseless('wd')}{_word_began(3)})"
        ),
        assigned("password"),
    ),
    Rule(
        "secret",
        ("secret",),
        keyed(
            _caseless("secret")
            + rf"(?:[_-]?(?:{_caseless('access')}[_-]?)?{_caseless('key')}"
            + rf"(?:[_-]?{_caseless('base')})?)?"
        ),
        assigned("secret"),
    ),
    Rule(
        "secret",
        ("private",),
        keyed(rf"{_caseless('private')}[_-]?{_caseless('key')}"),
        assigned("secret"),
    ),
    Rule(
        "api-key",
        ("api", "access", "account"),
        keyed(
            rf"[Aa](?:{_caseless('pi')}|{_caseless('cc')}(?:{_caseless('ess')}|{_caseless('ount')}))"
            rf"[_-]?{_caseless('key')}"
        ),
        assigned("api-key"),
    ),
    Rule("token", ("token",), keyed(_caseless("token")), assigned("token")),
    Rule(
        "basic-auth",
        ("auth",),
        keyed(_caseless("auth") + _began(4, "A-Za-z0-9")),
        assigned("basic-auth", lambda a: basic_credentials(a.value)),
    ),
)
