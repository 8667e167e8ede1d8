"""The live feed over WebSockets: `/live/{login}/{slug}` (one agent) and `/live/{login}` (every
agent of an owner, for the owner's dashboard) on the local server, and `GET /live-token`,
which tells a page where to connect: here, or on AWS the WebSocket API with a short-lived
signed token in the query (browsers cannot set headers on a WebSocket, and the API's domain
never sees this site's cookies).

A WebSocket is authorised before it is accepted, by the live feed's use case
(`reads/live_feed.py` `admit`: the profile page's rule); a handshake from another site's page
is refused outright (cookies ride along on cross-site WebSocket handshakes, so the Origin
header is checked).
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ..accounts import csrf
from ..accounts.live_grants import KEY, key_grant, session_grant
from ..accounts.live_tokens import issue
from ..domain.errors import NotFound, Unauthorized
from ..domain.live import Channel
from ..domain.privacy import ANONYMOUS, Viewer
from ..live.local import POLICY_VIOLATION, LocalTransport, Subscriber
from ..runtime.adapters import Services
from . import get_services, public_base, services_of
from .browser import NO_STORE
from .deps import authenticate, presented_key
from .session_cookie import session_of

router = APIRouter()



async def _viewer(connection: Request | WebSocket, services: Services
                  ) -> tuple[Viewer, str | None]:
    """Who is watching, from a key (scripts can send headers on a WebSocket) or the session
    cookie, and the grant that closes the connection when it ends (`live_grants`)."""
    raw = presented_key(connection)  # type: ignore[arg-type]
    if raw is not None:
        record = await run_in_threadpool(authenticate, services, raw)
        return Viewer.of_key(record), key_grant(record)
    session = await session_of(connection, services)
    if session is None:
        return ANONYMOUS, None
    return Viewer(session.login), session_grant(session)


@router.get("/live-token")
async def live_token(request: Request, channel: str,
                     services: Services = Depends(services_of)) -> JSONResponse:
    """Where the page's script connects for `channel` (`login/slug` or `login`), if the viewer
    may watch it; 404 otherwise, as for the profile of a private agent."""
    try:
        wanted = Channel.parse(channel)
    except ValueError as exc:
        raise NotFound("no such feed") from exc
    viewer, grant = await _viewer(request, services)
    if await run_in_threadpool(services.live.admit, wanted, viewer) is None:
        raise NotFound("no such feed")
    live = services.settings.live
    if live.url:
        if viewer.agent_slug is not None:  # a token names a login, not one agent of it
            raise NotFound("no such feed: watch with a session or an owner key")
        secret = await run_in_threadpool(services.secrets.session_key)
        token = issue(secret, wanted, viewer.login, grant, now=services.clock.now())
        query = urlencode({"channel": wanted.name, "token": token})
        return JSONResponse({"url": f"{live.url}?{query}"}, headers=NO_STORE)
    base = public_base(request, services)
    scheme = "wss" if base.startswith("https://") else "ws"
    return JSONResponse({"url": f"{scheme}://{base.split('://', 1)[1]}/live/{wanted.name}"},
                        headers=NO_STORE)


@router.websocket("/live/{login}")
async def owner_feed(websocket: WebSocket, login: str) -> None:
    await _serve(websocket, login)


@router.websocket("/live/{login}/{slug}")
async def agent_feed(websocket: WebSocket, login: str, slug: str) -> None:
    await _serve(websocket, f"{login}/{slug}")


async def _serve(websocket: WebSocket, name: str) -> None:
    services: Services = get_services(websocket)  # type: ignore[arg-type]
    transport = services.live_transport
    try:
        channel = Channel.parse(name)
    except ValueError:
        await websocket.close(code=POLICY_VIOLATION)
        return
    base = public_base(websocket, services)
    try:
        viewer, grant = await _viewer(websocket, services)
    except Unauthorized:
        await websocket.close(code=POLICY_VIOLATION)
        return
    admission = await run_in_threadpool(services.live.admit, channel, viewer)
    if (not isinstance(transport, LocalTransport) or not _origin_allowed(websocket, base, grant)
            or admission is None):
        await websocket.close(code=POLICY_VIOLATION)
        return
    subscriber = transport.subscribe(channel, viewer, grant)
    try:
        await websocket.accept()
        await websocket.send_text(await run_in_threadpool(admission.hello))
        await _pump(websocket, subscriber)
    finally:
        transport.unsubscribe(subscriber)


def _origin_allowed(websocket: WebSocket, base: str, grant: str | None) -> bool:
    """A browser's handshake carries cookies to any site, so it must come from this one; a
    script that sends a key sends no cookie and may have no Origin at all."""
    origin = websocket.headers.get("origin")
    if origin is None and grant is not None and grant.startswith(KEY):
        return True
    return csrf.same_origin(origin, base)


async def _pump(websocket: WebSocket, subscriber: Subscriber) -> None:
    """Send what the feed queues until either side closes. The client sends nothing but
    pings; reading is how its close is noticed, which stops the sending at once."""
    sender = asyncio.current_task()
    client_gone = False

    async def drain_incoming() -> None:
        nonlocal client_gone
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                await websocket.receive_text()
        client_gone = True
        if sender is not None:
            sender.cancel()

    reader = asyncio.create_task(drain_incoming())
    try:
        while (message := await subscriber.queue.get()) is not None:
            await websocket.send_text(message)
        await websocket.close(code=subscriber.close_code or POLICY_VIOLATION)
    except (WebSocketDisconnect, RuntimeError):
        return
    except asyncio.CancelledError:
        if not client_gone or sender is None:
            raise
        sender.uncancel()  # our own cancel, from the reader: a normal end, not a cancellation
    finally:
        reader.cancel()
