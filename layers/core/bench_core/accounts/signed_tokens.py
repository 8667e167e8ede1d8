"""Signed, expiring tokens: `payload.expiry.signature`, HMAC-SHA256 over a purpose, the payload
and the expiry. The purpose is part of what is signed, so a live-feed token can never pass as a
session cookie or an OAuth state, even though one secret signs them all.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import datetime
from typing import Any


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(secret: bytes, purpose: str, payload: str, expires: int) -> str:
    message = f"{purpose}\n{payload}\n{expires}".encode()
    return _b64(hmac.new(secret, message, hashlib.sha256).digest())


def sign(secret: bytes, purpose: str, data: Any, ttl_s: int, *, now: datetime) -> str:
    """A token carrying `data` (JSON) for `purpose`, valid for `ttl_s` seconds from `now`."""
    payload = _b64(json.dumps(data, separators=(",", ":")).encode())
    expires = int(now.timestamp() + ttl_s)
    return f"{payload}.{expires}.{_signature(secret, purpose, payload, expires)}"


def unsign(secret: bytes, purpose: str, token: str, *, now: datetime) -> Any:
    """The data of a token `sign` made for `purpose`, if unexpired `now` and untouched; else None.
    The signature is compared in constant time, before anything else is decoded."""
    parts = token.split(".")
    if len(parts) != 3 or not parts[1].isdigit() or len(token) > 4096:
        return None
    payload, expires_text, signature = parts
    expires = int(expires_text)
    if not hmac.compare_digest(signature, _signature(secret, purpose, payload, expires)):
        return None
    if expires <= now.timestamp():
        return None
    try:
        return json.loads(_unb64(payload))
    except ValueError:
        return None


def digest(secret: bytes, purpose: str, value: str) -> str:
    """A keyed hash of `value` for `purpose` (CSRF tokens)."""
    return _b64(hmac.new(secret, f"{purpose}\n{value}".encode(), hashlib.sha256).digest())
