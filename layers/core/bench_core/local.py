"""The single-machine server: every router over the embedded adapters, in one process, with
the eval and cluster workers running beside it (started and stopped with the app)."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .http import (
    alerts,
    alerts_dashboard,
    annotation_queue,
    api,
    auth,
    badge,
    benchmarks,
    create_app,
    dashboard,
    device,
    embed,
    feedback,
    health,
    ingest,
    insights,
    leaderboard,
    live,
    mcp,
    og,
    otlp,
    pages,
    reuse,
    reuse_dashboard,
    runs,
    sessions,
    simple,
    static,
    trial,
)
from .ingest.group_commit import GroupCommit
from .ports.store import Store
from .runtime.adapters import Services
from .settings import Settings
from .workflows.local import LocalRunner

ROUTERS = (ingest.router, otlp.router, api.router, insights.router, health.router, leaderboard.api_router,
           leaderboard.router, pages.router, badge.router, embed.router, og.router, static.router,
           auth.router, device.api_router, device.router, dashboard.router, trial.router, live.router,
           mcp.router, reuse.router, reuse.invoke_router, reuse_dashboard.router,
           benchmarks.api_router, benchmarks.router, runs.router, runs.api_router, simple.router,
           feedback.api_router, feedback.form_router, alerts.router, alerts_dashboard.router,
           annotation_queue.router, sessions.router, sessions.api_router)


def create_local_app(settings: Settings | None = None, *, store: Store | None = None) -> FastAPI:
    """The app over `settings`' adapters; `store`, when given, instead of the one they name."""
    settings = settings or Settings.from_env()
    services = Services(settings, store) if store is not None else Services.from_settings(settings)
    app = create_app(*ROUTERS, services=services)
    pages.install_error_pages(app)
    workflows = services.workflows
    if isinstance(workflows, LocalRunner):
        app.router.on_startup.append(workflows.start)
        app.router.on_shutdown.append(workflows.stop)
    app.state.group_commit = GroupCommit(services.store.ingest)  # `POST /ingest`'s writes
    app.router.on_shutdown.append(services.close)
    return app


KEEP_ALIVE_S = 5
"""An idle kept-alive connection is closed after this long."""
HEADER_DEADLINE_S = 10.0
"""Time a client has to send a request's headers once it has connected (or its last answer
was sent): a few hundred connections that dribble headers cannot hold the server."""


class DeadlineProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for each request's headers, which uvicorn
    itself does not have (its keep-alive timer stops at the first byte). The body has its own
    deadline (`http.guard`)."""

    _header_timer: asyncio.TimerHandle | None = None
    _awaiting_headers = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_deadline()

    def on_headers_complete(self) -> None:
        self._awaiting_headers = False
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        super().connection_lost(exc)

    def _arm_header_deadline(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._awaiting_headers = True
        self._header_timer = self.loop.call_later(HEADER_DEADLINE_S, self._headers_late)

    def _headers_late(self) -> None:
        self._header_timer = None
        if self._awaiting_headers and not self.transport.is_closing():
            self.transport.close()


def server_config(app: FastAPI, **options: Any) -> uvicorn.Config:
    """How the local server listens (`bench-server serve`, and the tests' servers): header,
    keep-alive and body deadlines; `X-Forwarded-*` left to the app, which trusts only
    BENCH_TRUSTED_PROXIES (uvicorn would trust any loopback peer's)."""
    return uvicorn.Config(app, http=DeadlineProtocol,
                          timeout_keep_alive=KEEP_ALIVE_S, proxy_headers=False,
                          access_log=False, **options)
