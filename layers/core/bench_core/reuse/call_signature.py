"""The headers that tell an agent a call came through Bench, and from whom.

    X-Bench-Timestamp: 1796284800            (Unix seconds)
    X-Bench-Call:      5f0c…                 (the call's id, unique per call)
    X-Bench-Caller:    alice                 (the calling login)
    X-Bench-Agent:     bob/research-agent    (the agent called)
    X-Bench-Path:      /v1/run?x=1           (the path and query the call is sent to)
    X-Bench-Signature: v2=<hex HMAC-SHA256>

The HMAC's key is the agent's invocation secret (shown to its owner once, when the card is first
published or the secret rotated); its message is `v2`, the timestamp, the call id, the caller,
the agent and the path, each followed by a newline, then the raw body. None of them can hold a
newline, so no two calls sign the same message; a recorded call cannot be replayed to another
path, and a receiver that remembers call ids refuses it a second time. An agent checks the
signature (in constant time), that the timestamp is recent and that the call id is new; the
SDK's `bench.verify_invocation` does all three (and still takes the older `v1`, which signed no
call id or path). The headers go to the endpoint's own host only: a redirect elsewhere carries
none of them.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

SECRET_PREFIX = "bis_"
VERSION = "v2"
HEADERS = ("X-Bench-Timestamp", "X-Bench-Call", "X-Bench-Caller", "X-Bench-Agent", "X-Bench-Path",
           "X-Bench-Signature")


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature(secret: str, timestamp: int, call_id: str, caller: str, agent: str, path: str,
              body: bytes) -> str:
    message = f"{VERSION}\n{timestamp}\n{call_id}\n{caller}\n{agent}\n{path}\n".encode() + body
    return f"{VERSION}=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signed_headers(secret: str, timestamp: int, call_id: str, caller: str, agent: str,
                   path: str, body: bytes) -> dict[str, str]:
    """The `HEADERS` of one call to `path` (its path and query, as sent)."""
    values = (str(timestamp), call_id, caller, agent, path,
              signature(secret, timestamp, call_id, caller, agent, path, body))
    return dict(zip(HEADERS, values, strict=True))
