"""Which redirect URIs an OAuth client may register, and which of them an authorization
request may name (transports.mcp.oauth uses both).

A redirect URI receives the person's browser and the code: it must be https, http on
loopback, or an app's own scheme (RFC 8252), never one that would run or read something in
the browser, never with a fragment, and never with a user name before its host, which would
disguise the host the sign-in and consent pages show. A request names one the client
registered, exactly, but for the port of a loopback one (RFC 8252: a native client listens
on the port the system gives it at the time).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

# Loopback hosts, as a URL's hostname reads them.
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
# Schemes never taken as a redirect URI: they would run or read something in the browser.
FORBIDDEN_SCHEMES = frozenset(
    {"javascript", "data", "vbscript", "file", "about", "blob", "filesystem"}
)


def refusal_of(uri: str) -> str | None:
    """Why a redirect URI cannot be registered (None: it can)."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if parts.fragment:
        return f"redirect URI {uri!r} has a fragment"
    if "@" in parts.netloc:  # the consent page names the host: a user part would disguise it
        return f"redirect URI {uri!r} has a user name before its host"
    if scheme in FORBIDDEN_SCHEMES:
        return f"redirect URI {uri!r} uses the scheme {scheme!r}"
    if scheme == "http" and (parts.hostname or "") not in LOOPBACK_HOSTS:
        return f"redirect URI {uri!r} is plain http off loopback (use https)"
    if scheme in ("http", "https") and not parts.hostname:
        return f"redirect URI {uri!r} has no host"
    return None


def loopback_at_any_port(uri: str) -> str | None:
    """A loopback redirect URI with its port left out (None: not one): what two such URIs
    must share to match (RFC 8252 lets a native client listen on any port)."""
    parts = urlsplit(uri)
    host = parts.hostname or ""
    if parts.scheme != "http" or host not in LOOPBACK_HOSTS:
        return None
    return parts._replace(netloc=f"[{host}]" if ":" in host else host).geturl()


class Registered(OAuthClientInformationFull):
    """A client as /authorize checks its redirect URI: one it registered, exactly, but for
    the port of a loopback one, which may be any (the client takes the port the system
    gives it at the time; the code still goes to that machine only, and PKCE binds it)."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        asked = None if redirect_uri is None else loopback_at_any_port(str(redirect_uri))
        registered = {loopback_at_any_port(str(uri)) for uri in self.redirect_uris or []}
        if asked is not None and asked in registered:
            return redirect_uri  # type: ignore[return-value]
        return super().validate_redirect_uri(redirect_uri)
