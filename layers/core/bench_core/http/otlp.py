"""`POST /v1/traces`: OTLP/HTTP trace export (SPEC section 3), the path an OpenTelemetry
exporter appends to `OTEL_EXPORTER_OTLP_ENDPOINT`.

Every answer, errors included, is in the request's encoding with its Content-Type (see
`otlp.encode`); a media type that is neither OTLP JSON nor protobuf gets 415 as JSON.
"""

from __future__ import annotations

from fastapi import APIRouter, BackgroundTasks, Depends, Request, Response
from starlette.concurrency import run_in_threadpool

from ..domain.errors import BenchError, Unauthorized
from ..ingest.otlp import ExportResult, UnsupportedMediaType, encoding_of, export_traces
from ..ingest.otlp.encode import export_response, status_body
from ..ingest.wire import decode_body
from ..runtime import lambda_instrumentation
from ..runtime.adapters import Services
from ..runtime.log import logger
from . import services_of
from .deps import MISSING_KEY, authenticate, presented_key, read_body

router = APIRouter()
JSON = "application/json"


def authenticated_export(services: Services, raw_key: str, body: bytes, encoding: str,
                         agent: str | None, background: BackgroundTasks) -> ExportResult:
    """Key check, decoding and store writes in one worker-thread hop; the live push waits in
    `background` for the answer."""
    key = authenticate(services, raw_key)
    return export_traces(services, key, body, encoding, agent, later=background.add_task)


@router.post("/v1/traces")
async def post_traces(request: Request, background: BackgroundTasks,
                      services: Services = Depends(services_of)) -> Response:
    content_type = request.headers.get("content-type") or JSON
    encoding = encoding_of(content_type)
    try:
        if encoding is None:
            raise UnsupportedMediaType(
                f"unsupported Content-Type {content_type!r}: send application/x-protobuf or "
                "application/json (OTLP/HTTP)")
        raw_key = presented_key(request)
        if raw_key is None:
            raise Unauthorized(MISSING_KEY)
        limit = services.settings.limits.max_body_bytes
        body = decode_body(await read_body(request, limit),
                           request.headers.get("content-encoding"), limit)
        result = await run_in_threadpool(authenticated_export, services, raw_key, body, encoding,
                                         request.headers.get("x-bench-agent"), background)
    except BenchError as exc:
        lambda_instrumentation.count("BatchesRejected")
        return Response(status_body(exc.status, exc.message, encoding or "json"),
                        status_code=exc.status, headers=exc.headers,
                        media_type=content_type if encoding else JSON)
    accepted = sum(outcome.accepted for _, outcome in result.outcomes)
    lambda_instrumentation.count("EventsIngested", accepted)
    lambda_instrumentation.count("SpansIngested", result.spans)
    logger.info("spans ingested", extra={"spans": result.spans, "rejected": result.rejected,
                                         "accepted_events": accepted,
                                         "agents": [ref.path for ref, _ in result.outcomes]})
    return Response(export_response(result, encoding), media_type=content_type)
