"""The JSON twin of the owner's annotation queue (`reads.annotation_queue`; the page is
`dashboard.py`'s): `GET /api/agents/{login}/{slug}/queue`, for the owner's session or owner
key; anyone else, an agent key included, is told the agent is not found."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from ..domain.privacy import Viewer
from ..reads.annotation_queue import annotation_queue
from ..runtime.adapters import Services
from . import services_of
from .api import agent_ref
from .deps import current_viewer

router = APIRouter(prefix="/api")


@router.get("/agents/{login}/{slug}/queue")
def get_queue(login: str, slug: str, viewer: Viewer = Depends(current_viewer),
              services: Services = Depends(services_of)) -> dict[str, Any]:
    """The runs to look at next, in order, each with why (`unsure`, `disagreed`, `unlooked`)
    and where to send its verdict."""
    return annotation_queue(services.store, agent_ref(login, slug), viewer)
