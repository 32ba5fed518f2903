"""Texts that make a careless pattern rescan the rest of the text from every start
(quadratic time), for the test that redaction stays correct on them; the rules in
service/redact/rules.py are written so that their time stays linear in the text."""

from __future__ import annotations

# Each unit, repeated: one or more per rule of agent_memory/service/redact/__init__.py, including its literal
# start.
ADVERSARIAL = [
    "sk-",
    "sk-aA1-",
    "-eyJ",
    "eyJaaaaaaaa.ey",
    "token:",
    "token: x ",
    "api_key:",
    "password=",
    "password:\n ",
    'secret="',
    '"password": "\\',
    '\\"token\\": \\"',
    "private_key=",
    "a&token=",
    ";Password=a",
    "`password=",
    "auth:",
    "-ghp_a",
    "github_pat_",
    "amt_a.",
    "amt_a",
    "amoa_",
    "amor_a-",
    "K7QP-",
    "K7QP-M3XZ-9HT",
    "glpat-",
    "xoxb-1-",
    "xoxe.xoxb-",
    "https://hooks.slack.com/",
    "Bearer a/1",
    "Basic ",
    "://",
    "://a:",
    "a://b:c@",
    "curl -u a:",
    "-----BEGIN PRIVATE KEY-----",
    "-----BEGIN A",
    "SG.",
    "hf_",
    "pypi-",
    "whsec_",
    "sk_live_",
    "AKIA",
]
# Prose of the same length holding no secret: the time to compare against.
ORDINARY = (
    "We chose SQLite; the password reset flow uses a token bucket. Set api_key from "
    "settings.api_key, see https://docs.example.com/auth, and send Bearer tokens.\n"
)
