"""Failure insights: `GET /api/agents/{login}/{slug}/insights` (through the privacy gate) and
`POST .../insights/refresh` (the owner asks for the clusters to be recomputed now)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ..domain.errors import Forbidden, NotFound
from ..domain.models import KeyRecord
from ..domain.privacy import Viewer, insights_view
from ..runtime.adapters import Services
from . import services_of
from .api import agent_ref, load_visible
from .deps import current_viewer, require_key

router = APIRouter(prefix="/api")


@router.get("/agents/{login}/{slug}/insights")
def get_insights(login: str, slug: str, viewer: Viewer = Depends(current_viewer),
                 services: Services = Depends(services_of)) -> dict[str, Any]:
    agent = load_visible(services, login, slug, viewer)
    return insights_view(services.store.get_insights(agent.ref), agent, viewer)


@router.post("/agents/{login}/{slug}/insights/refresh", status_code=202)
async def refresh_insights(login: str, slug: str, key: KeyRecord = Depends(require_key),
                           services: Services = Depends(services_of)) -> JSONResponse:
    """Start a cluster run for the agent and answer at once (202): the new clusters appear at
    GET .../insights when it is done (their `computed_at` moves)."""
    ref = agent_ref(login, slug)
    if key.login != ref.login or await run_in_threadpool(services.store.get_agent, ref) is None:
        raise NotFound("agent not found")
    if key.agent_slug is not None:
        raise Forbidden("agent keys may only ingest; use an owner key (bk_...) to refresh insights")
    await run_in_threadpool(services.workflows.start_clusters, [ref])
    return JSONResponse({"status": "started", "agent": ref.path}, status_code=202)
