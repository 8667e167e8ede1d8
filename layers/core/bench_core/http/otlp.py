"""`POST /v1/traces` and `POST /v1/logs`: OTLP/HTTP exports (SPEC section 3), the paths an
OpenTelemetry exporter appends to `OTEL_EXPORTER_OTLP_ENDPOINT`.

Every answer, errors included, is in the request's encoding with its Content-Type (see
`otlp.encode`); a media type that is neither OTLP JSON nor protobuf gets 415 as JSON.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TypeVar

from fastapi import APIRouter, BackgroundTasks, Depends, Request, Response
from starlette.concurrency import run_in_threadpool

from ..domain.errors import BenchError, Unauthorized
from ..domain.feedback import SpanVerdict
from ..domain.models import AgentRef, KeyRecord
from ..domain.privacy import Viewer
from ..evals.feedback import record_span_verdicts
from ..ingest.otlp import ExportResult, UnsupportedMediaType, encoding_of, export_traces
from ..ingest.otlp.encode import export_response, logs_response, status_body
from ..ingest.otlp.logs import LogsResult, export_logs
from ..ingest.pipeline import Later
from ..ingest.wire import decode_body
from ..log import logger
from ..runtime import lambda_instrumentation
from ..runtime.adapters import Services
from . import services_of
from .deps import MISSING_KEY, authenticate_sender, presented_key, read_body

router = APIRouter()
JSON = "application/json"
Result = TypeVar("Result")


async def _export(request: Request, background: BackgroundTasks, services: Services,
                  export: Callable[..., Result], answer: Callable[[Result, str], bytes]) -> Response:
    """Check the media type and key, read and decode the body, run `export` in a worker
    thread, and answer with what `answer` makes of its result in the request's encoding (or
    with the error, in that encoding too)."""
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

        def authenticated() -> Result:
            key = authenticate_sender(services, raw_key)
            return export(services, key, body, encoding, request.headers.get("x-bench-agent"),
                          later=background.add_task)

        result = await run_in_threadpool(authenticated)
    except BenchError as exc:
        lambda_instrumentation.count("BatchesRejected")
        return Response(status_body(exc.status, exc.message, encoding or "json"),
                        status_code=exc.status, headers=exc.headers,
                        media_type=content_type if encoding else JSON)
    return Response(answer(result, encoding), media_type=content_type)


@router.post("/v1/traces")
async def post_traces(request: Request, background: BackgroundTasks,
                      services: Services = Depends(services_of)) -> Response:
    return await _export(request, background, services, _traces_and_verdicts, _traces_answer)


def _keep_verdicts(services: Services, key: KeyRecord,
                   evaluations: dict[str, list[SpanVerdict]]) -> tuple[int, dict[str, int]]:
    """An export's evaluation events' verdicts kept as feedback on their spans' runs
    (`evals.feedback.record_span_verdicts`): how many, and why the others were not."""
    kept, refused = 0, Counter[str]()
    for slug, verdicts in evaluations.items():
        count, why = record_span_verdicts(services.store, AgentRef(key.login, slug),
                                          Viewer.of_key(key), verdicts)
        kept += count
        refused.update(why)
    return kept, dict(refused)


def _traces_and_verdicts(services: Services, key: KeyRecord, body: bytes, encoding: str,
                         agent_header: str | None, *, later: Later) -> ExportResult:
    result = export_traces(services, key, body, encoding, agent_header, later=later)
    result.feedback, refused = _keep_verdicts(services, key, result.evaluations)
    for reason, count in refused.items():
        result.warn(reason, count)
    return result


def _logs_and_verdicts(services: Services, key: KeyRecord, body: bytes, encoding: str,
                       agent_header: str | None, *, later: Later) -> LogsResult:
    result = export_logs(services, key, body, encoding, agent_header, later=later)
    result.feedback, refused = _keep_verdicts(services, key, result.evaluations)
    for reason, count in refused.items():
        result.reject(reason, count)
    return result


@router.post("/v1/logs")
async def post_logs(request: Request, background: BackgroundTasks,
                    services: Services = Depends(services_of)) -> Response:
    return await _export(request, background, services, _logs_and_verdicts, _logs_answer)


def _traces_answer(result: ExportResult, encoding: str) -> bytes:
    accepted = sum(outcome.accepted for _, outcome in result.outcomes)
    lambda_instrumentation.count("EventsIngested", accepted)
    lambda_instrumentation.count("SpansIngested", result.spans)
    logger.info("spans ingested", extra={"spans": result.spans, "rejected": result.rejected,
                                         "accepted_events": accepted,
                                         "agents": [ref.path for ref, _ in result.outcomes]})
    return export_response(result, encoding)


def _logs_answer(result: LogsResult, encoding: str) -> bytes:
    lambda_instrumentation.count("LogRecordsIngested", result.records)
    logger.info("log records ingested", extra={
        "records": result.records, "rejected": result.rejected, "attached": result.attached,
        "parked": result.parked, "feedback": result.feedback, "agents": [ref.path for ref, _ in result.outcomes]})
    return logs_response(result, encoding)
