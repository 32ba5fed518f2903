"""The pages a person sees while an MCP client asks for access (transports.mcp.oauth), and
their routes (:class:`Pages`, over service.oauth): the sign-in (an access token, or a
one-time code from ``agent-memory token approve``), the consent (the client's name, where
its codes go, and what it will be allowed: exactly the token's rights), and the page of a
sign-in that has ended.

Plain HTML with no script. Every text a client chose (its name) or a person typed is
escaped. The answers carry headers that keep a browser from doing anything else: a
Content-Security-Policy allowing only the page's own style (by its hash), no framing (a
consent page in another site's frame could be clicked through), nothing cached, and a
referrer policy that keeps the page's address (the sign-in id) to this origin. The forms
post back here; the consent's answer is a redirect to the client, so the policy names no
``form-action`` (browsers apply it to that redirect too).
"""

from __future__ import annotations

import base64
import hashlib
import html
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
from mcp.server.auth.provider import construct_redirect_uri
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from agent_memory.service import oauth as service_oauth
from agent_memory.service.oauth import OAuth
from agent_memory.service.tokens import Grant, Unauthorized

SIGN_IN_PATH = "/authorize/sign-in"
CONSENT_PATH = "/authorize/consent"
CSS = (
    "body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f5f5f4;color:#1c1917}"
    "main{max-width:34rem;margin:4rem auto;padding:2rem;background:#fff;border-radius:8px;"
    "box-shadow:0 1px 3px #0002}h1{font-size:1.4rem;margin-top:0}"
    "code{background:#f5f5f4;padding:0 .25rem;border-radius:3px}"
    "label{display:block;margin:1rem 0 .25rem}input[type=password]{width:100%;"
    "box-sizing:border-box;padding:.5rem;font:inherit}button{font:inherit;padding:.5rem 1.25rem;"
    "margin:1rem .5rem 0 0;cursor:pointer}#allow{background:#1d4ed8;color:#fff;border:0;"
    "border-radius:4px}.error{color:#b91c1c;min-height:1.5rem}.note{color:#57534e;"
    "font-size:.9rem}"
)
_CSS_HASH = base64.b64encode(hashlib.sha256(CSS.encode()).digest()).decode()
POLICY = (
    f"default-src 'none'; style-src 'sha256-{_CSS_HASH}'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    text = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{body}</main></body></html>"
    )
    return HTMLResponse(text, status_code=status, headers=HEADERS)


def client_name(client: dict[str, Any]) -> str:
    """How the pages name a client: the name it registered, else its id."""
    return str(client.get("client_name") or f"the client {client.get('client_id', '')}")


def destination(redirect_uri: str) -> str:
    """Where a client's codes go, as a person reads it: scheme and host of its redirect URI."""
    parts = urlsplit(redirect_uri)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else f"{parts.scheme}:"


def sign_in(
    client: dict[str, Any], redirect_uri: str, request_id: str, error: str = "", status: int = 200
) -> HTMLResponse:
    name = html.escape(client_name(client))
    body = (
        f'<h1>Connect <span id="client">{name}</span> to agent-memory</h1>'
        f"<p>{name} asks to use this memory server over MCP. Its answers go to "
        f'<code id="destination">{html.escape(destination(redirect_uri))}</code>.</p>'
        f'<form method="post" action="{SIGN_IN_PATH}">'
        f'<input type="hidden" name="request" value="{html.escape(request_id)}">'
        '<label for="credential">Sign in with one of your access tokens, or with a one-time '
        "code from <code>agent-memory token approve NAME</code>:</label>"
        '<input id="credential" name="credential" type="password" autocomplete="off" '
        "required autofocus>"
        f'<p class="error" id="error" role="alert">{html.escape(error)}</p>'
        '<button type="submit" id="sign-in">Continue</button></form>'
        '<p class="note">You will see what the client may do before you allow it.</p>'
    )
    return _page(f"Connect {client_name(client)}", body, status)


def rights(grant: Grant) -> list[str]:
    """What a grant lets a client do, in words: exactly the token's rights."""
    what = (
        "read memories, never change them (read-only)"
        if grant.read_only
        else "read, store, change and forget memories"
    )
    where = "in every scope" if grant.scope is None else f"only in the scope {grant.scope}"
    return [what, where]


def consent(
    client: dict[str, Any], redirect_uri: str, grant: Grant, consent_id: str
) -> HTMLResponse:
    name = html.escape(client_name(client))
    items = "".join(f"<li>{html.escape(line)}</li>" for line in rights(grant))
    token = html.escape(grant.name)
    body = (
        f'<h1>Allow <span id="client">{name}</span>?</h1>'
        f'<p>Signed in with the token <b id="token">{token}</b>. {name} will be able to:</p>'
        f'<ul id="rights">{items}</ul>'
        f"<p>It acts as the token {token}, with its rights and no more: revoking that token "
        f"(<code>agent-memory token revoke {token}</code>) ends this access too. Its answers "
        f"go to <code>{html.escape(destination(redirect_uri))}</code>.</p>"
        f'<form method="post" action="{CONSENT_PATH}">'
        f'<input type="hidden" name="consent" value="{html.escape(consent_id)}">'
        '<button type="submit" name="decision" value="allow" id="allow">Allow</button>'
        '<button type="submit" name="decision" value="deny" id="deny">Deny</button></form>'
    )
    return _page(f"Allow {client_name(client)}?", body)


def ended(message: str, status: int = 400) -> HTMLResponse:
    body = (
        '<h1>This sign-in has ended</h1><p id="message">'
        f"{html.escape(message)}. Start again from your MCP client.</p>"
    )
    return _page("Sign-in ended", body, status)


class Pages:
    """The sign-in and consent pages of one issuer."""

    def __init__(self, oauth: OAuth, issuer: str) -> None:
        self.oauth = oauth
        self.issuer = issuer

    async def sign_in(self, request: Request) -> Response:
        if request.method == "GET":
            request_id = request.query_params.get("request", "")
            flight = await anyio.to_thread.run_sync(self.oauth.waiting, request_id)
            if flight is None:
                return ended("This sign-in has expired or was used already")
            return sign_in(flight.client, flight.request.redirect_uri, request_id)
        form = await request.form()
        request_id, credential = form_text(form, "request"), form_text(form, "credential")
        try:
            consent_id, flight, grant = await anyio.to_thread.run_sync(
                self.oauth.sign_in, request_id, credential
            )
        except service_oauth.Ended:
            return ended("This sign-in has expired or was used already")
        except Unauthorized:
            flight = await anyio.to_thread.run_sync(self.oauth.waiting, request_id)
            if flight is None:
                return ended("This sign-in has expired or was used already")
            wrong = "That token or code is wrong, expired or revoked."
            return sign_in(flight.client, flight.request.redirect_uri, request_id, wrong, 401)
        return consent(flight.client, flight.request.redirect_uri, grant, consent_id)

    async def consent(self, request: Request) -> Response:
        form = await request.form()
        allow = form_text(form, "decision") == "allow"
        try:
            flight, code = await anyio.to_thread.run_sync(
                self.oauth.decide, form_text(form, "consent"), allow
            )
        except service_oauth.Ended:
            return ended("This sign-in has expired or was used already")
        except Unauthorized:
            return ended("The token you signed in with was revoked meanwhile", 401)
        # the answer names its issuer (RFC 9207): a client that talks to several servers
        # knows which one answered, and cannot be made to send this code to another
        answer = {"state": flight.request.state, "iss": self.issuer}
        if code is None:
            answer |= {"error": "access_denied", "error_description": "the person denied access"}
        else:
            answer |= {"code": code}
        target = construct_redirect_uri(flight.request.redirect_uri, **answer)
        return RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})


def form_text(form: Any, name: str) -> str:
    """A posted form's text field (empty when missing, or a file)."""
    value = form.get(name)
    return value if isinstance(value, str) else ""
