"""The single-machine server: every router over the embedded adapters, in one process."""

from __future__ import annotations

from fastapi import FastAPI

from .config import Settings
from .http import api, create_app, health, ingest
from .services import Services

ROUTERS = (ingest.router, api.router, health.router)


def create_local_app(settings: Settings | None = None) -> FastAPI:
    services = Services.from_settings(settings or Settings.from_env())
    app = create_app(*ROUTERS, services=services)
    app.router.on_shutdown.append(services.close)
    return app
