"""Cross-site request forgery: every state-changing browser request carries a token a
forging page cannot know, and, where the browser says where it comes from, that is us.

The token is a keyed hash of something only this browser holds: its session id when signed in,
else a random value in its own `bench_csrf` cookie (signing in, starting a sandbox). A page on
another site can make the browser send these cookies but can read neither them nor the token.
SameSite=Lax cookies stop most of this already; the token does not depend on browsers getting
that right.
"""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import urlsplit

from . import signed_tokens as signing

ANON_COOKIE = "bench_csrf"
FIELD = "csrf"
HEADER = "x-csrf-token"
PURPOSE = "csrf"
WEB_SCHEME = {"ws": "http", "wss": "https"}
"""A WebSocket's own URL (ws://) belongs to the site its page came from (http://)."""


def new_binding() -> str:
    """The random value of a browser's `bench_csrf` cookie."""
    return secrets.token_urlsafe(24)


def token(secret: bytes, binding: str) -> str:
    return signing.digest(secret, PURPOSE, binding)


def valid(secret: bytes, binding: str | None, presented: str | None) -> bool:
    if not binding or not presented:
        return False
    return hmac.compare_digest(presented.encode(), token(secret, binding).encode())


def same_origin(origin: str | None, base_url: str) -> bool:
    """Whether an `Origin` header names the site at `base_url`. A missing header passes (not
    every client sends one): the token decides then."""
    if origin is None:
        return True
    ours, theirs = urlsplit(base_url), urlsplit(origin)
    return (WEB_SCHEME.get(theirs.scheme, theirs.scheme), theirs.netloc) == \
        (WEB_SCHEME.get(ours.scheme, ours.scheme), ours.netloc)
