"""The WebSocket API's routes on AWS (`functions/live`): `$connect` authorises and records the
connection under the owner it watches (with a TTL), `$disconnect` forgets it, `$default`
answers the page's keep-alive pings. Who may watch is the live feed's use case's decision
(`reads/live_feed.py` `admit`); pushing is the push function's (`lambdas/live_push.py`).

`$connect` takes `?channel=login/slug` (or `login`) and who is watching from, in order: a
live-feed token (`tokens.py`; what pages use), or the session cookie when the handshake comes
from this site's own origin (only possible when the WebSocket API shares its domain); anyone else
is anonymous. A refusal is a 403, which API Gateway turns into a failed handshake.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from ..accounts import sessions
from ..accounts.csrf import same_origin
from ..accounts.live_grants import session_grant
from ..accounts.live_tokens import read
from ..accounts.secrets import SecretUnavailable
from ..domain.live import Channel, LiveConnection
from ..domain.models import iso
from ..domain.privacy import Viewer
from ..log import logger
from .handler import ServicesHandler

CONNECTION_TTL = timedelta(hours=2)
"""API Gateway closes every WebSocket after two hours; a record outliving that is stale."""
OK = {"statusCode": 200}
FORBIDDEN = {"statusCode": 403}
PONG = json.dumps({"type": "pong"})


class WebSocketRoutes(ServicesHandler):
    """The Lambda handler."""

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        context_ = event["requestContext"]
        route, connection_id = context_["routeKey"], context_["connectionId"]
        if route == "$connect":
            return self.connect(event, connection_id)
        if route == "$disconnect":
            self.services.store.accounts.remove_connection(connection_id)
            return OK
        return self.message(event.get("body"))

    def connect(self, event: dict[str, Any], connection_id: str) -> dict[str, Any]:
        params = event.get("queryStringParameters") or {}
        try:
            channel = Channel.parse(str(params.get("channel", "")))
        except ValueError:
            return FORBIDDEN
        login, grant = self.viewer(event, params, channel)
        viewer = Viewer(login)
        if self.services.live.admit(channel, viewer) is None:
            logger.info("live connection refused", extra={"channel": channel.name})
            return FORBIDDEN
        self.services.store.accounts.add_connection(LiveConnection(
            connection_id, channel.login, channel.slug, viewer.login,
            iso(self.services.clock.now() + CONNECTION_TTL), grant))
        return OK

    def viewer(self, event: dict[str, Any], params: dict[str, Any], channel: Channel
               ) -> tuple[str | None, str | None]:
        """Who is watching and the grant that says so (`live_grants`); (None, None): anyone."""
        try:
            secret = self.services.secrets.session_key()
        except SecretUnavailable:
            logger.exception("live connections are anonymous: no session secret")
            return None, None
        if params.get("token"):
            return read(secret, str(params["token"]), channel, now=self.services.clock.now())
        headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
        cookie = _cookie(headers.get("cookie", ""), sessions.COOKIE)
        public_url = self.services.settings.public_url
        if cookie and public_url and headers.get("origin") and same_origin(headers["origin"],
                                                                           public_url):
            session = sessions.load(self.services.store, secret, cookie)
            if session is not None:
                return session.login, session_grant(session)
        return None, None

    def message(self, body: str | None) -> dict[str, Any]:
        try:
            action = json.loads(body or "{}").get("action")
        except (ValueError, AttributeError):
            action = None
        if action == "ping":
            return {"statusCode": 200, "body": PONG}
        return {"statusCode": 400,
                "body": json.dumps({"error": "this feed only sends; the only message it takes is "
                                             '{"action": "ping"}', "detail": []})}


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None
