"""`POST /ingest`: the original client's wire format (SPEC section 2)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from ..ingest import decode_body, ingest
from ..log import logger
from ..models import KeyRecord
from ..services import Services
from . import get_services
from .deps import read_body, require_key

router = APIRouter()


def public_base(request: Request, services: Services) -> str:
    return (services.settings.public_url or str(request.base_url)).rstrip("/")


@router.post("/ingest")
async def post_ingest(request: Request, key: KeyRecord = Depends(require_key),
                      services: Services = Depends(get_services)) -> dict[str, Any]:
    limits = services.settings.limits
    raw = await read_body(request, limits.max_body_bytes)
    body = decode_body(raw, request.headers.get("content-encoding"), limits.max_body_bytes)
    batch, outcome = await run_in_threadpool(ingest, services.store, key, body, limits)
    path = f"{key.login}/{batch.agent_slug}"
    logger.info("batch ingested", extra={"agent": path, "accepted": outcome.accepted,
                                         "duplicates": outcome.duplicates})
    return {"accepted": outcome.accepted, "duplicates": outcome.duplicates, "agent": path,
            "url": f"{public_base(request, services)}/u/{path}"}
