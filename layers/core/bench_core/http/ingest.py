"""`POST /ingest`: the original client's wire format (SPEC section 2)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from ..errors import Unauthorized
from ..ingest import decode_body, ingest
from ..log import logger
from ..models import IngestBatch, IngestOutcome, KeyRecord
from ..services import Services
from . import get_services
from .deps import MISSING_KEY, authenticate, presented_key, read_body

router = APIRouter()


def public_base(request: Request, services: Services) -> str:
    return (services.settings.public_url or str(request.base_url)).rstrip("/")


def authenticated_ingest(services: Services, raw_key: str, body: bytes
                         ) -> tuple[KeyRecord, IngestBatch, IngestOutcome]:
    """Key check and store write in one worker-thread hop (each hop costs a context switch)."""
    key = authenticate(services, raw_key)
    batch, outcome = ingest(services.store, key, body, services.settings.limits)
    return key, batch, outcome


@router.post("/ingest")
async def post_ingest(request: Request,
                      services: Services = Depends(get_services)) -> dict[str, Any]:
    raw_key = presented_key(request)
    if raw_key is None:
        raise Unauthorized(MISSING_KEY)
    limits = services.settings.limits
    raw = await read_body(request, limits.max_body_bytes)
    body = decode_body(raw, request.headers.get("content-encoding"), limits.max_body_bytes)
    key, batch, outcome = await run_in_threadpool(authenticated_ingest, services, raw_key, body)
    path = f"{key.login}/{batch.agent_slug}"
    logger.info("batch ingested", extra={"agent": path, "accepted": outcome.accepted,
                                         "duplicates": outcome.duplicates})
    return {"accepted": outcome.accepted, "duplicates": outcome.duplicates, "agent": path,
            "url": f"{public_base(request, services)}/u/{path}"}
