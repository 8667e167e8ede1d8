"""What every answer of every surface gets, in one ASGI layer around the routers:

- a `Host` this deployment answers to, or 421 (`domain.hosts`: DNS rebinding);
- `X-Content-Type-Options: nosniff`; on JSON, `Vary` by the credentials a viewer is built
  from, and `Cache-Control: private, no-store` when the request carried any (the answer is
  that viewer's, never a shared cache's);
- `HEAD` wherever `GET` is served (the GET, without its body);
- a deadline for reading a request body, so a client that stops sending mid-body frees its
  connection (408) instead of holding it for ever.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..domain.errors import BenchError
from ..domain.hosts import allowed_names, host_allowed
from ..settings import Settings

BODY_DEADLINE_S = 30.0
"""Time a client has to send a whole request body: a 5 MB batch at 2 Mbit/s takes 20 s."""
VARY = b"Authorization, X-Bench-Key, Cookie"
PRIVATE = b"private, no-store"
NOSNIFF = (b"x-content-type-options", b"nosniff")
CREDENTIAL_HEADERS = (b"authorization", b"x-bench-key")
SESSION_COOKIE = b"bench_session="


class RequestTimeout(BenchError):
    status = 408


class Guard:
    def __init__(self, app: ASGIApp, settings_of: Callable[[Scope], Settings]) -> None:
        self.app = app
        self.settings_of = settings_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if not self._host_ok(scope, headers):
            await _misdirected(scope, send)
            return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        head = scope["method"] == "HEAD"
        if head:
            scope = {**scope, "method": "GET"}
        await self.app(scope, _with_deadline(receive),
                       _answer(send, head, _has_credentials(headers)))

    def _host_ok(self, scope: Scope, headers: dict[bytes, bytes]) -> bool:
        settings = self.settings_of(scope)
        domain = (scope.get("aws.event") or {}).get("requestContext", {}).get("domainName")
        names = allowed_names(settings.public_url, settings.allowed_hosts, domain)
        return host_allowed(headers.get(b"host", b"").decode("latin-1"), names)


def _has_credentials(headers: dict[bytes, bytes]) -> bool:
    return any(name in headers for name in CREDENTIAL_HEADERS) or \
        SESSION_COOKIE in headers.get(b"cookie", b"")


async def _misdirected(scope: Scope, send: Send) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    body = json.dumps({"error": "misdirected request: this server does not answer to that "
                                "Host (set BENCH_PUBLIC_URL or BENCH_ALLOWED_HOSTS)",
                       "detail": [{"loc": ["header", "host"], "msg": "not an allowed host"}]
                       }).encode()
    await send({"type": "http.response.start", "status": 421,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), NOSNIFF]})
    await send({"type": "http.response.body", "body": body})


def _with_deadline(receive: Receive) -> Receive:
    """`receive` that gives up on a body not complete within BODY_DEADLINE_S."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BODY_DEADLINE_S
    complete = False

    async def receive_in_time() -> Message:
        nonlocal complete
        if complete:
            return await receive()
        try:
            async with asyncio.timeout_at(deadline):  # no task of its own, as `wait_for` makes
                message = await receive()
        except TimeoutError:
            raise RequestTimeout(f"request body not received within {BODY_DEADLINE_S:.0f} s",
                                 headers={"Connection": "close"}) from None
        if message["type"] != "http.request" or not message.get("more_body", False):
            complete = True
        return message

    return receive_in_time


def _answer(send: Send, head: bool, credentials: bool) -> Send:
    async def send_guarded(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = _headers(list(message.get("headers") or []), credentials)
        elif message["type"] == "http.response.body" and head:
            message = {**message, "body": b""}
        await send(message)

    return send_guarded


def _headers(headers: list[Any], credentials: bool) -> list[Any]:
    names = {bytes(k).lower(): i for i, (k, _) in enumerate(headers)}
    if b"x-content-type-options" not in names:
        headers.append(NOSNIFF)
    content_type = headers[names[b"content-type"]][1] if b"content-type" in names else b""
    if bytes(content_type).startswith(b"application/json"):
        if b"vary" in names:
            i = names[b"vary"]
            headers[i] = (b"vary", bytes(headers[i][1]) + b", " + VARY)
        else:
            headers.append((b"vary", VARY))
        if credentials:
            headers = [h for h in headers if bytes(h[0]).lower() != b"cache-control"]
            headers.append((b"cache-control", PRIVATE))
    return headers
