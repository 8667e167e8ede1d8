"""`GET /healthz`: liveness plus a cheap store round trip."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from .. import __version__
from ..runtime.adapters import Services
from . import services_of

router = APIRouter()


@router.get("/healthz")
def healthz(services: Services = Depends(services_of)) -> dict[str, Any]:
    services.check_store()
    return {"status": "ok", "version": __version__, "store": services.settings.store}
