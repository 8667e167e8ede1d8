"""An agent's regression alerts as JSON for its owner, `GET /api/agents/{login}/{slug}/alerts`
with the owner's key (`alerts/owner.py`): the alerts (unresolved first, then newest first), where
they go, and the webhook's secret. The dashboard's page is `http/alerts_dashboard.py`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from ..alerts import owner
from ..domain.models import KeyRecord
from ..domain.privacy import Viewer, owner_only
from ..runtime.adapters import Services
from . import public_base, services_of
from .api import agent_ref
from .deps import require_key

router = APIRouter(prefix="/api")


@router.get("/agents/{login}/{slug}/alerts")
def get_alerts(request: Request, login: str, slug: str, key: KeyRecord = Depends(require_key),
               services: Services = Depends(services_of)) -> dict[str, Any]:
    ref = agent_ref(login, slug)
    agent = owner_only(services.store.agents.get_agent(ref), Viewer.of_key(key),
                       "an agent key may not read its alerts: use an owner key")
    return owner.owner_alerts(services, agent, public_base(request, services))
