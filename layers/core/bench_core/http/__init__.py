"""FastAPI routers by surface, and the app factory every entry point uses.

A Lambda function mounts only the routers it serves; the local server mounts them all.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.requests import HTTPConnection
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from ..domain.errors import BenchError
from ..log import logger
from ..runtime import snapstart
from ..runtime.adapters import Services
from ..settings import Settings
from .guard import Guard


def create_app(*routers: APIRouter, services: Services | None = None) -> FastAPI:
    """An app serving `routers`. Without `services` they are built from the environment on the
    first request, so importing a Lambda module stays cheap."""
    app = FastAPI(title="Bench", docs_url=None, redoc_url=None, openapi_url="/api/openapi.json")
    app.state.services = services
    if services is None:  # built from this environment: never shared through a snapshot
        snapstart.on_restore(lambda: setattr(app.state, "services", None))
    for router in routers:
        app.include_router(router)
    app.add_exception_handler(BenchError, _bench_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    app.add_exception_handler(Exception, _unexpected_error)
    app.add_middleware(Guard, settings_of=_settings_of)
    app.add_middleware(CorrelationId)
    return app


def get_services(request: Request) -> Services:
    services: Services | None = request.app.state.services
    if services is None:
        services = request.app.state.services = Services.from_settings(Settings.from_env())
    return services


def _settings_of(scope: Scope) -> Settings:
    """The settings of the app a request (or WebSocket) reached, for `guard.Guard`."""
    return get_services(HTTPConnection(scope)).settings  # type: ignore[arg-type]


async def services_of(request: Request) -> Services:
    """`get_services` as every route's dependency: FastAPI runs a plain-function dependency in
    a worker thread, a hop that costs more than the lookup itself."""
    return get_services(request)


def public_base(connection: HTTPConnection, services: Services) -> str:
    """Where this server is reached from outside (`BENCH_PUBLIC_URL`, else the request's own
    base), without a trailing slash: for links, redirects and same-origin checks."""
    return (services.settings.public_url or str(connection.base_url)).rstrip("/")


def error_response(status: int, message: str, detail: list[Any] | None = None,
                   headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "detail": detail or []}, status_code=status,
                        headers=headers)


async def _bench_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, BenchError)
    return error_response(exc.status, exc.message, exc.detail, exc.headers)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    detail = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
    return error_response(422, "invalid request", detail)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = "not found" if exc.status_code == 404 else str(exc.detail)
    return error_response(exc.status_code, message, headers=exc.headers)


async def _client_gone(request: Request, exc: Exception) -> Response:
    """A client that went away mid-request: nobody reads the answer, nothing is wrong here."""
    logger.info("client disconnected", extra={"path": request.url.path})
    return Response(status_code=400)


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    logger.exception("unhandled error", extra={"path": request.url.path})
    return error_response(500, "internal error")


class CorrelationId:
    """Tags every log line of a request with its id (from `X-Request-Id` or fresh) and echoes
    the id back, so a client's report can be matched to the server's logs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        incoming = dict(scope.get("headers") or []).get(b"x-request-id", b"").decode("latin-1")
        request_id = incoming[:64] if incoming.isprintable() and incoming else uuid.uuid4().hex
        logger.thread_safe_append_keys(correlation_id=request_id)

        async def send_with_id(message: Any) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", []).append((b"x-request-id", request_id.encode()))
            await send(message)

        await self.app(scope, receive, send_with_id)
