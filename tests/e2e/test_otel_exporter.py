"""The real OpenTelemetry SDK and OTLP/HTTP exporter, configured the way users do (environment
variables), exporting GenAI spans to a real Bench server: an agent invocation with a chat call
and a failing tool call.

The Python exporter speaks protobuf only; the JSON case posts the exporter's own request in the
OTLP/HTTP JSON encoding (the proto3 JSON mapping with hex ids, as the OTLP spec defines it).
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator, Sequence

import httpx
import pytest
from bench_core.domain.models import AgentRef, TaskState
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from tests.conftest import RunningServer

CHAT_COST = (2000 * 0.4 + 150 * 1.6) / 1e6
"""gpt-4.1-mini at $0.40 in / $1.60 out per million tokens."""
NAMES = ("invoke_agent trip-planner", "chat gpt-4.1-mini", "execute_tool book_flight")


@pytest.fixture
def login() -> str:
    return "x" + uuid.uuid4().hex[:10]


@pytest.fixture
def exporter_env(bench_server: RunningServer, login: str,
                 monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """What a user puts in the environment: the endpoint (the exporter appends /v1/traces),
    the key and the agent as headers, gzip."""
    key = bench_server.create_key(login)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", bench_server.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"X-Bench-Key={key},X-Bench-Agent=trip-planner")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    yield key


def record_trip() -> list[ReadableSpan]:
    """Run an instrumented agent with the real SDK; its spans, in the order they ended."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "ignored-for-header"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("trip-planner", "1.0")
    with tracer.start_as_current_span(NAMES[0], attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Trip Planner",
            "gen_ai.conversation.id": "conv-7"}):
        with tracer.start_as_current_span(NAMES[1], kind=SpanKind.CLIENT, attributes={
                "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4.1-mini",
                "gen_ai.response.model": "gpt-4.1-mini-2025-04-14",
                "gen_ai.usage.input_tokens": 2000, "gen_ai.usage.output_tokens": 150,
                "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", '
                                         '"content": "Fly me to Lisbon"}]}]'}):
            pass
        try:
            with tracer.start_as_current_span(NAMES[2], attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "book_flight",
                    "gen_ai.tool.call.arguments": '{"to": "LIS"}'}):
                raise TimeoutError("airline API timed out")
        except TimeoutError:
            pass
    provider.shutdown()
    return list(memory.get_finished_spans())


def tasks(server: RunningServer, login: str, spans: Sequence[ReadableSpan]
          ) -> dict[str, TaskState | None]:
    ref = AgentRef(login, "trip-planner")
    return {s.name: server.store.ingest.get_task(
        ref, f"{s.context.trace_id:032x}-{s.context.span_id:016x}") for s in spans}


def assert_trip(server: RunningServer, login: str, spans: Sequence[ReadableSpan]) -> None:
    found = tasks(server, login, spans)
    root, chat, tool = (found[name] for name in NAMES)
    assert (root.parent_task_id, chat.parent_task_id, tool.parent_task_id) == (
        None, root.task_id, root.task_id)
    assert (root.status, chat.status, tool.status) == ("success", "success", "failed")
    assert tool.output == "TimeoutError: airline API timed out"
    assert tool.input == {"to": "LIS"}
    assert chat.input[0]["parts"][0]["content"] == "Fly me to Lisbon"
    assert (chat.evidence.input_tokens, chat.evidence.output_tokens) == (2000, 150)
    assert chat.evidence.cost_usd == pytest.approx(CHAT_COST)
    assert root.evidence.cost_usd == pytest.approx(CHAT_COST)
    assert root.metadata["attributes"]["gen_ai.conversation.id"] == "conv-7"
    profile = server.get(f"/api/agents/{login}/trip-planner")
    assert (profile["runs"], profile["successes"], profile["failures"]) == (1, 1, 0)
    assert profile["evidence_cost_usd_total"] == pytest.approx(CHAT_COST)
    assert profile["cost_usd_total"] == 0.0


def test_the_protobuf_exporter_delivers_an_agent_run(bench_server: RunningServer, login: str,
                                                     exporter_env: str) -> None:
    spans = record_trip()
    assert OTLPSpanExporter().export(spans) == SpanExportResult.SUCCESS
    assert_trip(bench_server, login, spans)


@pytest.mark.parametrize("parent_first", [True, False])
def test_spans_exported_in_several_batches_and_out_of_order(
        bench_server: RunningServer, login: str, exporter_env: str, parent_first: bool) -> None:
    spans = record_trip()
    root = [s for s in spans if s.parent is None]
    children = [s for s in spans if s.parent is not None]
    exporter = OTLPSpanExporter()
    for batch in ([root, children] if parent_first else [children[1:], root, children[:1]]):
        assert exporter.export(batch) == SpanExportResult.SUCCESS
    exporter.export(spans)  # a retry of everything changes nothing
    assert_trip(bench_server, login, spans)


def otlp_json(spans: Sequence[ReadableSpan]) -> dict:
    """The exporter's request in OTLP/HTTP JSON: proto3 JSON with lowerCamelCase names and
    int64 as strings, but trace and span ids as hex (not base64) and enums as integers."""
    request = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource_spans in request["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for name in ("traceId", "spanId", "parentSpanId"):
                    if name in span:
                        span[name] = base64.b64decode(span[name]).hex()
    return request


def test_an_otlp_json_export_of_the_same_spans(bench_server: RunningServer, login: str,
                                               exporter_env: str) -> None:
    spans = record_trip()
    response = httpx.post(f"{bench_server.url}/v1/traces", json=otlp_json(spans), timeout=30,
                          headers={"X-Bench-Key": exporter_env, "X-Bench-Agent": "trip-planner"})
    assert response.status_code == 200 and response.json() == {}
    assert_trip(bench_server, login, spans)


def test_an_export_with_a_bad_key_fails_and_stores_nothing(bench_server: RunningServer,
                                                           login: str, exporter_env: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "X-Bench-Key=bk_wrong,X-Bench-Agent=trip-planner")
    spans = record_trip()
    assert OTLPSpanExporter(timeout=5).export(spans) == SpanExportResult.FAILURE
    assert set(tasks(bench_server, login, spans).values()) == {None}


def test_an_exported_trace_is_a_run_tree_on_its_page_and_in_json(
        bench_server: RunningServer, login: str, exporter_env: str) -> None:
    """Children exported before their parent, as BatchSpanProcessor sends them: one run, its
    spans in start order under the root, the failed tool flagged up to it."""
    spans = record_trip()
    root = next(s for s in spans if s.parent is None)
    children = [s for s in spans if s.parent is not None]
    exporter = OTLPSpanExporter()
    for batch in (children[1:], children[:1], [root]):
        assert exporter.export(batch) == SpanExportResult.SUCCESS
    run_id = f"{root.context.trace_id:032x}-{root.context.span_id:016x}"
    answer = httpx.get(f"{bench_server.url}/api/agents/{login}/trip-planner/runs/{run_id}",
                       timeout=30).json()
    drawn = [(s["name"], s["depth"], s["status"]) for s in answer["spans"]]
    assert drawn[0] == (NAMES[0], 0, "success")  # siblings of one millisecond: either order
    assert sorted(drawn[1:]) == [(NAMES[1], 1, "success"), (NAMES[2], 1, "failed")]
    assert answer["spans"][0]["failed_below"] == 1 and answer["failed_spans"] == 1
    chat = next(s for s in answer["spans"] if s["name"] == NAMES[1])
    assert chat["evidence"]["input_tokens"] == 2000
    assert all(s["start_offset_ms"] >= 0 for s in answer["spans"])
    page = httpx.get(f"{bench_server.url}/u/{login}/trip-planner/runs/{run_id}", timeout=30)
    assert page.status_code == 200 and page.text.count('<svg class="wf"') == 3
    assert "1 failed below" in page.text
