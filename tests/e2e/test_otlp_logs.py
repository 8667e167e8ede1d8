"""`POST /v1/logs` with the real OpenTelemetry SDK and OTLP/HTTP log exporter: the older
per-message GenAI events (`gen_ai.user.message`, `gen_ai.choice`, ...) emitted inside a chat
span attach to that span's task as input and output, whichever export comes first; the JSON
encoding does the same; records that cannot be attached are named in `partialSuccess`; a run
judged before its content came is judged again when it does, never scored for missing content.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.models import AgentRef
from bench_core.ingest.otlp import parked
from google.protobuf.json_format import MessageToDict
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from tests.conftest import RunningServer, poll

SLUG = "chatty"
MESSAGES = [("gen_ai.system.message", {"content": "You are terse."}),
            ("gen_ai.user.message", {"content": "Capital of Portugal?"}),
            ("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": "Lisbon."}})]


@pytest.fixture
def owner(bench_server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    login = "l" + uuid.uuid4().hex[:10]
    key = bench_server.create_key(login)
    bench_server.showing_content(login, SLUG)  # these tests read content as anyone
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", bench_server.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"X-Bench-Key={key},X-Bench-Agent={SLUG}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    return login, key


def providers(service: str) -> tuple[TracerProvider, InMemorySpanExporter, LoggerProvider,
                                     InMemoryLogRecordExporter]:
    """A tracer and a logger provider for `service`, each keeping what it records in memory."""
    resource = Resource.create({"service.name": service})
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    return tracer_provider, spans, logger_provider, logs


def chat(messages: Sequence[tuple[str, Any]] = MESSAGES
         ) -> tuple[ReadableSpan, list[ReadableLogRecord]]:
    """One chat span that reports tokens, with its content as log events emitted inside it."""
    tracer_provider, spans, logger_provider, logs = providers("ignored-for-header")
    logger = logger_provider.get_logger("chat-app")
    with tracer_provider.get_tracer("chat-app").start_as_current_span(
            "chat gpt-4.1-mini", kind=SpanKind.CLIENT, attributes={
                "gen_ai.operation.name": "chat", "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-4.1-mini", "gen_ai.usage.input_tokens": 100,
                "gen_ai.usage.output_tokens": 5}):
        for name, body in messages:
            logger.emit(LogRecord(event_name=name, body=body,
                                  attributes={"gen_ai.system": "openai"}))
    return spans.get_finished_spans()[0], list(logs.get_finished_logs())


def task_of(server: RunningServer, owner: tuple[str, str], span: ReadableSpan) -> dict[str, Any]:
    """The span's task as its owner sees it (content is hidden from others by default)."""
    login, key = owner
    task_id = f"{span.context.trace_id:032x}-{span.context.span_id:016x}"
    return server.get(f"/api/agents/{login}/{SLUG}/tasks/{task_id}", key)


def assert_content(task: dict[str, Any]) -> None:
    assert task["input"] == [{"role": "system", "content": "You are terse."},
                             {"role": "user", "content": "Capital of Portugal?"}]
    assert task["output"] == [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": "Lisbon."}}]
    assert task["evidence"]["input_tokens"] == 100


@pytest.mark.parametrize("logs_first", [True, False])
def test_per_message_events_attach_in_either_order(bench_server: RunningServer,
                                                   owner: tuple[str, str], logs_first: bool) -> None:
    span, logs = chat()
    send_logs = lambda: OTLPLogExporter().export(logs).name  # noqa: E731
    send_span = lambda: OTLPSpanExporter().export([span]).name  # noqa: E731
    for send in (send_logs, send_span) if logs_first else (send_span, send_logs):
        assert send() == "SUCCESS"
    assert send_logs() == "SUCCESS"  # a retry attaches nothing twice
    login, _ = owner
    task = task_of(bench_server, owner, span)
    assert_content(task)
    kinds = [e["kind"] for e in task["events"]]
    assert kinds.count("task.content") == 1
    assert bench_server.get(f"/api/agents/{login}/{SLUG}")["runs"] == 1


def otlp_json(logs: Sequence[ReadableLogRecord]) -> dict[str, Any]:
    """The exporter's request in OTLP/HTTP JSON (hex ids, as the OTLP spec has them)."""
    request = MessageToDict(encode_logs(logs), use_integers_for_enums=True)
    for resource_logs in request["resourceLogs"]:
        for scope_logs in resource_logs["scopeLogs"]:
            for record in scope_logs["logRecords"]:
                for name in ("traceId", "spanId"):
                    if name in record:
                        record[name] = base64.b64decode(record[name]).hex()
    return request


def test_json_logs_and_partial_success(bench_server: RunningServer, owner: tuple[str, str]) -> None:
    login, key = owner
    span, logs = chat()
    body = otlp_json(logs)
    orphan = {"timeUnixNano": "1", "eventName": "gen_ai.user.message",
              "body": {"kvlistValue": {"values": [
                  {"key": "content", "value": {"stringValue": "no span"}}]}}}
    plain = {"timeUnixNano": "1", "body": {"stringValue": "an ordinary log line"}}
    body["resourceLogs"][0]["scopeLogs"][0]["logRecords"] += [orphan, plain]
    response = httpx.post(f"{bench_server.url}/v1/logs", json=body, timeout=30,
                          headers={"X-Bench-Key": key, "X-Bench-Agent": SLUG})
    assert response.status_code == 200
    assert response.json() == {"partialSuccess": {
        "rejectedLogRecords": "1",
        "errorMessage": "1 log record(s): a GenAI content event needs the traceId and spanId "
                        "of its span"}}
    assert OTLPSpanExporter().export([span]).name == "SUCCESS"
    assert_content(task_of(bench_server, owner, span))


def test_bad_logs_requests_get_clear_errors(bench_server: RunningServer,
                                            owner: tuple[str, str]) -> None:
    _, key = owner
    url = f"{bench_server.url}/v1/logs"
    assert httpx.post(url, content=b"{}", headers={"content-type": "application/json"}
                      ).status_code == 401
    bad = httpx.post(url, content=b"[1]", headers={"X-Bench-Key": key,
                                                   "content-type": "application/json"})
    assert bad.status_code == 400 and "OTLP JSON logs export" in bad.json()["message"]
    assert httpx.post(url, content=b"x", headers={"X-Bench-Key": key,
                                                  "content-type": "text/plain"}).status_code == 415
    protobuf = httpx.post(url, content=b"\xff\xff", headers={
        "X-Bench-Key": key, "content-type": "application/x-protobuf"})
    assert protobuf.status_code == 400
    assert protobuf.headers["content-type"] == "application/x-protobuf"


def test_a_run_judged_before_its_content_came_is_judged_again(
        bench_server: RunningServer, owner: tuple[str, str]) -> None:
    login, _ = owner
    span, logs = chat()
    assert OTLPSpanExporter().export([span]).name == "SUCCESS"
    first = poll(lambda: task_of(bench_server, owner, span)["eval"],
                 lambda result: result is not None)
    assert (first["status"], first["reason"]) == ("unscored", "no content captured")
    profile = bench_server.get(f"/api/agents/{login}/{SLUG}")
    assert profile["avg_eval_score"] is None
    assert OTLPLogExporter().export(logs).name == "SUCCESS"
    judged = poll(lambda: task_of(bench_server, owner, span)["eval"],
                  lambda result: result["status"] == "scored")
    assert judged["score"] > 0.5


def test_parked_content_is_bounded_per_agent_and_hour(bench_server: RunningServer,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    store = bench_server.store
    ref = AgentRef("p" + uuid.uuid4().hex[:10], SLUG)
    monkeypatch.setattr(parked, "MAX_PARKED_PER_HOUR", 2)
    span, logs = chat()
    from bench_core.ingest.otlp.content import group_content
    from bench_core.ingest.otlp.log_decode import decode_logs

    [content], _ = group_content(decode_logs(encode_logs(logs).SerializeToString(), "protobuf"))
    event = content.event(32 * 1024, SYSTEM_CLOCK.now())
    assert event is not None
    assert parked.park(store, ref, "t-1", event) is None
    assert parked.park(store, ref, "t-1", event) is None  # the same event again: kept once
    assert parked.park(store, ref, "t-2", event) == parked.FULL
    waiting = parked.waiting(store, ref, ["t-1", "t-2"])
    assert [e.id for e in waiting["t-1"]] == [event.id] and "t-2" not in waiting
    parked.release(store, ref, ["t-1"])
    assert parked.waiting(store, ref, ["t-1"]) == {}


def test_protobuf_partial_success_is_an_export_logs_service_response(
        bench_server: RunningServer, owner: tuple[str, str]) -> None:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
        ExportLogsServiceRequest,
        ExportLogsServiceResponse,
    )

    _, key = owner
    _, logs = chat()
    request = encode_logs(logs)
    orphan = request.resource_logs[0].scope_logs[0].log_records.add()
    orphan.event_name = "gen_ai.user.message"
    orphan.body.string_value = "no span"
    assert isinstance(request, ExportLogsServiceRequest)
    response = httpx.post(f"{bench_server.url}/v1/logs", content=request.SerializeToString(),
                          headers={"X-Bench-Key": key, "X-Bench-Agent": SLUG,
                                   "content-type": "application/x-protobuf"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-protobuf"
    answer = ExportLogsServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_log_records == 1
    assert "traceId and spanId" in answer.partial_success.error_message
