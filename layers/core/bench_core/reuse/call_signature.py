"""The headers that tell an agent a call came through Bench, and from whom.

    X-Bench-Timestamp: 1796284800            (Unix seconds)
    X-Bench-Caller:    alice                 (the calling login)
    X-Bench-Agent:     bob/research-agent    (the agent called)
    X-Bench-Signature: v1=<hex HMAC-SHA256>

The HMAC's key is the agent's invocation secret (shown to its owner once, when the card is first
published or the secret rotated); its message is `v1`, the timestamp, the caller and the agent,
each followed by a newline, then the raw body. None of the three can hold a newline, so no two
calls sign the same message. An agent checks the signature (in constant time) and that the
timestamp is recent; the SDK's `bench.verify_invocation` does both.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

SECRET_PREFIX = "bis_"
VERSION = "v1"


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature(secret: str, timestamp: int, caller: str, agent: str, body: bytes) -> str:
    message = f"{VERSION}\n{timestamp}\n{caller}\n{agent}\n".encode() + body
    return f"{VERSION}=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signed_headers(secret: str, timestamp: int, caller: str, agent: str,
                   body: bytes) -> dict[str, str]:
    return {"X-Bench-Timestamp": str(timestamp), "X-Bench-Caller": caller,
            "X-Bench-Agent": agent,
            "X-Bench-Signature": signature(secret, timestamp, caller, agent, body)}
