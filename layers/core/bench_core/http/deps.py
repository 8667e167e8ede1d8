"""Request dependencies: services, the caller's key, the viewer, the bounded body."""

from __future__ import annotations

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from ..accounts import api_keys, key_rate
from ..domain.errors import PayloadTooLarge, Unauthorized
from ..domain.hosts import client_address
from ..domain.models import KeyRecord
from ..domain.privacy import ANONYMOUS, Viewer
from ..runtime.adapters import Services
from . import services_of
from .session_cookie import session_of

MISSING_KEY = "missing API key: send it as X-Bench-Key or Authorization: Bearer"


def presented_key(request: Request) -> str | None:
    raw = request.headers.get("x-bench-key")
    if raw is None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        raw = token.strip() if scheme.lower() == "bearer" else None
    return raw.strip() if raw else None


def authenticate(services: Services, raw: str) -> KeyRecord:
    """The live key record for `raw` (`accounts.api_keys.authenticate`)."""
    return api_keys.authenticate(services.store, raw)


def authenticate_sender(services: Services, raw: str) -> KeyRecord:
    """`authenticate`, then count the request against the key's share of the ingest routes
    (`accounts.key_rate`: 429 past it)."""
    key = authenticate(services, raw)
    key_rate.take_request(services.store, key, services.settings.limits.key_requests_per_s)
    return key


async def require_key(request: Request, services: Services = Depends(services_of)) -> KeyRecord:
    raw = presented_key(request)
    if raw is None:
        raise Unauthorized(MISSING_KEY)
    return await run_in_threadpool(authenticate, services, raw)


async def current_viewer(request: Request, services: Services = Depends(services_of)) -> Viewer:
    """Anonymous unless the request carries a valid key (a bad key is an error, not anonymity)
    or a browser session (a stale or forged cookie is simply signed out)."""
    raw = presented_key(request)
    if raw is None:
        session = await session_of(request, services)
        return ANONYMOUS if session is None else Viewer(login=session.login)
    record = await run_in_threadpool(authenticate, services, raw)
    return Viewer.of_key(record)


def client_of(request: Request, services: Services) -> str:
    """The client's address for rate limits: the socket's peer (API Gateway's source IP under
    Lambda), or what a trusted proxy says it forwarded for (`domain.hosts`)."""
    peer = request.client.host if request.client else None
    return client_address(peer, request.headers.get("x-forwarded-for"),
                          services.settings.trusted_proxies)


async def read_body(request: Request, limit: int) -> bytes:
    """The raw body, refusing more than `limit` bytes without reading them all."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body over {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"request body over {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)

