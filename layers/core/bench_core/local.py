"""The single-machine server: every router over the embedded adapters, in one process, with
the eval and cluster workers running beside it (started and stopped with the app)."""

from __future__ import annotations

from fastapi import FastAPI

from .http import (
    api,
    auth,
    badge,
    benchmarks,
    create_app,
    dashboard,
    device,
    embed,
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
    simple,
    static,
    trial,
)
from .runtime.adapters import Services
from .runtime.config import Settings
from .workflows.local import LocalRunner

ROUTERS = (ingest.router, otlp.router, api.router, insights.router, health.router, leaderboard.api_router,
           leaderboard.router, pages.router, badge.router, embed.router, og.router, static.router,
           auth.router, device.api_router, device.router, dashboard.router, trial.router, live.router,
           mcp.router, reuse.router, reuse.invoke_router, reuse_dashboard.router,
           benchmarks.api_router, benchmarks.router, runs.router, runs.api_router, simple.router)


def create_local_app(settings: Settings | None = None) -> FastAPI:
    services = Services.from_settings(settings or Settings.from_env())
    app = create_app(*ROUTERS, services=services)
    pages.install_error_pages(app)
    workflows = services.workflows
    if isinstance(workflows, LocalRunner):
        app.router.on_startup.append(workflows.start)
        app.router.on_shutdown.append(workflows.stop)
    app.router.on_shutdown.append(services.close)
    return app
