"""`POST /ingest`: the original client's wire format (SPEC section 2)."""

from __future__ import annotations

from contextlib import nullcontext

from fastapi import APIRouter, BackgroundTasks, Depends, Request
from starlette.responses import JSONResponse

from ..domain.errors import BenchError, Unauthorized
from ..ingest.group_commit import GroupCommit
from ..ingest.pipeline import settle, stage_batch, stored
from ..ingest.wire import decode_body, dropped_fields
from ..log import logger
from ..runtime import lambda_instrumentation
from ..runtime.adapters import Services
from . import public_base, services_of
from .deps import MISSING_KEY, authenticate_sender, presented_key, read_body

router = APIRouter()


@router.post("/ingest")
async def post_ingest(request: Request, background: BackgroundTasks,
                      services: Services = Depends(services_of)) -> JSONResponse:
    """A batch stored, or refused (bad key, body or field) and counted as the
    `BatchesRejected` metric (here rather than by a dependency of the router, whose exit
    stack cost each batch more than the count)."""
    try:
        return await _ingest(request, background, services)
    except BenchError:
        lambda_instrumentation.count("BatchesRejected")
        raise


async def _ingest(request: Request, background: BackgroundTasks,
                  services: Services) -> JSONResponse:
    raw_key = presented_key(request)
    if raw_key is None:
        raise Unauthorized(MISSING_KEY)
    limits = services.settings.limits
    group: GroupCommit | None = getattr(request.app.state, "group_commit", None)
    with group.arriving() if group is not None else nullcontext():
        raw = await read_body(request, limits.max_body_bytes)
    body = decode_body(raw, request.headers.get("content-encoding"), limits.max_body_bytes)
    # Parsed and cleaned on the event loop, not a worker thread: the work is CPU under the GIL
    # either way, and the hop cost 1.5 ms of CPU per batch of 50 (tests/perf/ingest.py, side by
    # side). The local server writes it with the batches that came with it, in one
    # transaction (`ingest/group_commit.py`), and answers once that has committed; Lambda,
    # one request at a time, writes it here.
    key = authenticate_sender(services, raw_key)
    batch, staged = stage_batch(services, key, body)
    outcome = settle(services, staged, stored(services, staged.write) if group is None
                     else await group.write(staged.write),
                     later=background.add_task)
    lambda_instrumentation.count("EventsIngested", outcome.accepted)
    path = f"{key.login}/{batch.agent_slug}"
    logger.info("batch ingested", extra={"agent": path, "accepted": outcome.accepted,
                                         "duplicates": outcome.duplicates})
    # A response, not a dict: FastAPI would validate and re-encode a dict on the hot path.
    answer = {"accepted": outcome.accepted, "duplicates": outcome.duplicates, "agent": path,
              "url": f"{public_base(request, services)}/u/{path}"}
    if dropped := dropped_fields(batch):
        answer["dropped"] = dropped
    return JSONResponse(answer, background=background)
