"""Failure insights: `GET /api/agents/{login}/{slug}/insights` (through the privacy gate) and
`POST .../insights/refresh` (the owner asks for the clusters to be recomputed now)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ..accounts.agents import owned_by_key
from ..domain.models import KeyRecord
from ..domain.privacy import Viewer
from ..reads.agents import insights_of
from ..runtime.adapters import Services
from . import services_of
from .api import agent_ref, load_visible
from .deps import current_viewer, require_key

router = APIRouter(prefix="/api")


@router.get("/agents/{login}/{slug}/insights")
def get_insights(login: str, slug: str, viewer: Viewer = Depends(current_viewer),
                 services: Services = Depends(services_of)) -> dict[str, Any]:
    agent = load_visible(services, login, slug, viewer)
    return insights_of(services.store, agent, viewer)


@router.post("/agents/{login}/{slug}/insights/refresh", status_code=202)
async def refresh_insights(login: str, slug: str, key: KeyRecord = Depends(require_key),
                           services: Services = Depends(services_of)) -> JSONResponse:
    """Start a cluster run for the agent and answer at once (202): the new clusters appear at
    GET .../insights when it is done (their `computed_at` moves)."""
    ref = agent_ref(login, slug)
    await run_in_threadpool(owned_by_key, services.store, key, ref,
                            "agent keys may only ingest; use an owner key (bk_...) to refresh insights")
    await run_in_threadpool(services.workflows.start_clusters, [ref])
    return JSONResponse({"status": "started", "agent": ref.path}, status_code=202)
