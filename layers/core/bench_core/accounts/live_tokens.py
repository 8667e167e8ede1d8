"""Live-feed tokens: how a page tells API Gateway's `$connect` who is watching what.

A browser cannot set headers on a WebSocket, and the WebSocket API's domain never sees this
site's session cookie, so the page fetches a token (`GET /live-token`, where the cookie is seen)
and puts it in the connection URL. It names the channel and the viewer, is signed with the
session secret for this purpose alone, and lives five minutes: long enough to connect, too short
to be worth stealing from a log. Reconnecting fetches a new one.
"""

from __future__ import annotations

from datetime import datetime

from ..domain.live import Channel
from . import signed_tokens

PURPOSE = "live"
TTL_S = 300


def issue(secret: bytes, channel: Channel, viewer: str | None, grant: str | None = None, *,
          now: datetime) -> str:
    """A token for `viewer` to watch `channel`, naming the grant (`live_grants`) that allowed
    it, so that the connection closes when that session or key ends."""
    return signed_tokens.sign(secret, PURPOSE, {"c": channel.name, "v": viewer, "g": grant},
                              TTL_S, now=now)


def read(secret: bytes, token: str, channel: Channel, *, now: datetime
         ) -> tuple[str | None, str | None]:
    """The signed-in viewer a valid token for `channel` names, and its grant; (None, None) for
    an anonymous token, a token for another channel, or anything forged or expired."""
    data = signed_tokens.unsign(secret, PURPOSE, token, now=now)
    if not isinstance(data, dict) or data.get("c") != channel.name:
        return None, None
    viewer, grant = data.get("v"), data.get("g")
    if not isinstance(viewer, str):
        return None, None
    return viewer, grant if isinstance(grant, str) else None


def viewer_of(secret: bytes, token: str, channel: Channel, *, now: datetime) -> str | None:
    """The viewer `read` finds in the token."""
    return read(secret, token, channel, now=now)[0]
