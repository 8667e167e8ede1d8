"""`POST /v1/traces` over real HTTP: OTLP JSON bodies written to the OTLP/HTTP spec, protobuf
bodies from the opentelemetry-proto classes, and what the server answers to each."""

from __future__ import annotations

import gzip
import json
import os
import uuid
from typing import Any

import httpx
import pytest
from bench_core.domain.models import AgentRef
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tests.conftest import RunningServer

T0 = 1_764_691_200_000_000_000
JSON = "application/json"
PROTOBUF = "application/x-protobuf"
CHAT_COST = (1200 - 200) * 2.5e-6 + 200 * 1.25e-6 + 300 * 10e-6
"""The chat span's evidence: gpt-4o, 1,200 input tokens of which 200 cached, 300 output."""


def new_login() -> str:
    return "o" + uuid.uuid4().hex[:10]


@pytest.fixture
def owner(bench_server: RunningServer) -> tuple[str, str]:
    login = new_login()
    return login, bench_server.create_key(login)


def any_value(value: Any) -> dict[str, Any]:
    """A Python value as an OTLP JSON `AnyValue` (int64 as a decimal string, per the spec)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": attributes(value)}}
    return {"stringValue": value}


def attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in values.items()]


class Trace:
    """The spans of one agent invocation: a chat call and a failing tool call under it."""

    def __init__(self) -> None:
        self.trace_id = os.urandom(16).hex()
        self.ids = {name: os.urandom(8).hex() for name in ("agent", "chat", "tool")}

    def task(self, name: str) -> str:
        return f"{self.trace_id}-{self.ids[name]}"

    def span(self, name: str) -> dict[str, Any]:
        common = {"traceId": self.trace_id, "spanId": self.ids[name], "kind": 1}
        if name == "agent":
            return {**common, "name": "invoke_agent weather", "parentSpanId": "",
                    "startTimeUnixNano": str(T0), "endTimeUnixNano": str(T0 + 900_000_000),
                    "attributes": attributes({"gen_ai.operation.name": "invoke_agent",
                                              "gen_ai.agent.name": "Weather",
                                              "gen_ai.input.messages": '[{"role": "user"}]'}),
                    "status": {"code": 1}}
        if name == "chat":
            return {**common, "name": "chat gpt-4o", "parentSpanId": self.ids["agent"],
                    "startTimeUnixNano": str(T0 + 1_000_000),
                    "endTimeUnixNano": str(T0 + 500_000_000),
                    "attributes": attributes({
                        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                        "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 1200,
                        "gen_ai.usage.cache_read.input_tokens": 200,
                        "gen_ai.usage.output_tokens": 300,
                        "gen_ai.output.messages": [{"role": "assistant", "parts": []}]})}
        return {**common, "name": "execute_tool get_weather", "parentSpanId": self.ids["agent"],
                "startTimeUnixNano": str(T0 + 600_000_000),
                "endTimeUnixNano": str(T0 + 800_000_000),
                "attributes": attributes({"gen_ai.operation.name": "execute_tool",
                                          "gen_ai.tool.name": "get_weather",
                                          "gen_ai.tool.call.arguments": {"city": "Atlantis"}}),
                "status": {"code": 2, "message": "tool failed"},
                "events": [{"name": "exception", "timeUnixNano": str(T0 + 790_000_000),
                            "attributes": attributes({"exception.type": "LookupError",
                                                      "exception.message": "no such city"})}]}


def body(*spans: dict[str, Any], service: str = "weather-bot") -> bytes:
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": attributes({"service.name": service})},
        "scopeSpans": [{"scope": {"name": "tests"}, "spans": list(spans)}]}]}).encode()


def post(server: RunningServer, content: bytes, key: str | None, content_type: str = JSON,
         **headers: str) -> httpx.Response:
    if key is not None:
        headers["X-Bench-Key"] = key
    return httpx.post(server.url + "/v1/traces", content=content, timeout=30,
                      headers={"Content-Type": content_type, **headers})


def assert_weather_trace(server: RunningServer, login: str, trace: Trace,
                         slug: str = "weather-bot") -> None:
    ref = AgentRef(login, slug)
    root, chat, tool = (server.store.ingest.get_task(ref, trace.task(n)) for n in ("agent", "chat", "tool"))
    assert (root.status, root.parent_task_id, root.name) == ("success", None,
                                                             "invoke_agent weather")
    assert root.input == [{"role": "user"}] and root.duration_ms == 900.0
    assert (chat.parent_task_id, tool.parent_task_id) == (root.task_id, root.task_id)
    assert chat.status == "success" and chat.output == [{"role": "assistant", "parts": []}]
    assert (tool.status, tool.output, tool.input) == ("failed", "LookupError: no such city",
                                                      {"city": "Atlantis"})
    assert chat.evidence.cost_usd == pytest.approx(CHAT_COST)
    assert (chat.evidence.input_tokens, chat.evidence.output_tokens,
            chat.evidence.cache_read_input_tokens) == (1200, 300, 200)
    assert root.evidence.cost_usd == pytest.approx(CHAT_COST) and tool.evidence is None
    profile = server.get(f"/api/agents/{login}/{slug}")
    assert (profile["runs"], profile["successes"]) == (1, 1)
    assert profile["cost_usd_total"] == 0.0
    assert profile["evidence_cost_usd_total"] == pytest.approx(CHAT_COST)
    assert profile["evidence"]["calls"] == 1 and profile["evidence"]["input_tokens"] == 1200
    assert server.store.ingest.subtask_ids(ref, [root.task_id])[root.task_id] == sorted(
        [chat.task_id, tool.task_id], key=lambda t: t != chat.task_id)


def test_an_otlp_json_export_becomes_a_run_with_subtasks(bench_server: RunningServer,
                                                          owner: tuple[str, str]) -> None:
    login, key = owner
    trace = Trace()
    r = post(bench_server, body(*(trace.span(n) for n in ("chat", "tool", "agent"))), key)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == JSON and r.json() == {}
    assert_weather_trace(bench_server, login, trace)


def test_an_otlp_protobuf_export_is_answered_in_protobuf(bench_server: RunningServer,
                                                         owner: tuple[str, str]) -> None:
    login, key = owner
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(
        KeyValue(key="service.name", value=AnyValue(string_value="proto-bot")))
    span = resource_spans.scope_spans.add().spans.add(
        trace_id=os.urandom(16), span_id=os.urandom(8), name="chat claude",
        start_time_unix_nano=T0, end_time_unix_nano=T0 + 40_000_000)
    span.attributes.extend([
        KeyValue(key="gen_ai.system", value=AnyValue(string_value="anthropic")),
        KeyValue(key="gen_ai.request.model", value=AnyValue(string_value="claude-haiku-4-5")),
        KeyValue(key="gen_ai.usage.prompt_tokens", value=AnyValue(int_value=1000)),
        KeyValue(key="gen_ai.usage.completion_tokens", value=AnyValue(int_value=100))])
    r = post(bench_server, request.SerializeToString(), key, PROTOBUF)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == PROTOBUF
    assert not ExportTraceServiceResponse.FromString(r.content).HasField("partial_success")
    task = bench_server.store.ingest.get_task(AgentRef(login, "proto-bot"),
                                              f"{span.trace_id.hex()}-{span.span_id.hex()}")
    assert task.status == "success" and task.duration_ms == 40.0
    assert task.evidence.cost_usd == pytest.approx((1000 * 1 + 100 * 5) / 1e6)


@pytest.mark.parametrize("order", [["tool"], ["chat"], ["agent"]])
def test_spans_split_over_requests_in_any_order_make_the_same_tasks(
        bench_server: RunningServer, owner: tuple[str, str], order: list[str]) -> None:
    login, key = owner
    trace = Trace()
    first = order[0]
    rest = [n for n in ("agent", "chat", "tool") if n != first]
    for names in ([first], rest):
        assert post(bench_server, body(*(trace.span(n) for n in names)), key).status_code == 200
    assert_weather_trace(bench_server, login, trace)


def test_a_resent_export_changes_nothing(bench_server: RunningServer,
                                         owner: tuple[str, str]) -> None:
    login, key = owner
    trace = Trace()
    content = body(*(trace.span(n) for n in ("chat", "tool", "agent")))
    for _ in range(3):
        assert post(bench_server, content, key).status_code == 200
    assert_weather_trace(bench_server, login, trace)


def test_gzip_bodies_are_accepted(bench_server: RunningServer, owner: tuple[str, str]) -> None:
    login, key = owner
    trace = Trace()
    content = gzip.compress(body(*(trace.span(n) for n in ("chat", "tool", "agent"))))
    assert post(bench_server, content, key, **{"Content-Encoding": "gzip"}).status_code == 200
    assert_weather_trace(bench_server, login, trace)


@pytest.mark.parametrize("content_type", [JSON, PROTOBUF])
def test_some_bad_spans_are_rejected_and_the_rest_stored(
        bench_server: RunningServer, owner: tuple[str, str], content_type: str) -> None:
    login, key = owner
    trace = Trace()
    bad_ids = {**trace.span("chat"), "spanId": "zz"}
    no_times = {**trace.span("tool"), "startTimeUnixNano": "0"}
    content = body(trace.span("agent"), bad_ids, no_times)
    if content_type == PROTOBUF:
        content = _as_protobuf(trace.span("agent"), no_times)
    r = post(bench_server, content, key, content_type)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == content_type
    if content_type == JSON:
        partial = r.json()["partialSuccess"]
        assert partial["rejectedSpans"] == "2"
        assert "invalid spanId" in partial["errorMessage"]
    else:
        partial = ExportTraceServiceResponse.FromString(r.content).partial_success
        assert partial.rejected_spans == 1
    assert "startTimeUnixNano" in (partial["errorMessage"] if content_type == JSON
                                   else partial.error_message)
    assert bench_server.store.ingest.get_task(AgentRef(login, "weather-bot"), trace.task("agent"))
    assert bench_server.store.ingest.get_task(AgentRef(login, "weather-bot"), trace.task("tool")) is None


def _as_protobuf(*spans: dict[str, Any]) -> bytes:
    """The same spans through the protobuf classes (the JSON mapping of OTLP, ids in hex)."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(
        KeyValue(key="service.name", value=AnyValue(string_value="weather-bot")))
    scope = resource_spans.scope_spans.add()
    for s in spans:
        scope.spans.add(trace_id=bytes.fromhex(s["traceId"]), span_id=bytes.fromhex(s["spanId"]),
                        parent_span_id=bytes.fromhex(s["parentSpanId"]), name=s["name"],
                        start_time_unix_nano=int(s["startTimeUnixNano"]),
                        end_time_unix_nano=int(s["endTimeUnixNano"]))
    return request.SerializeToString()


@pytest.mark.parametrize(("content", "content_type"), [
    (b"{not json", JSON), (b'{"resourceSpans": 3}', JSON), (b"\xff\xfe\x00", PROTOBUF)])
def test_undecodable_bodies_get_400_in_their_encoding(bench_server: RunningServer,
                                                      owner: tuple[str, str], content: bytes,
                                                      content_type: str) -> None:
    r = post(bench_server, content, owner[1], content_type)
    assert r.status_code == 400
    assert r.headers["content-type"] == content_type
    status = r.json() if content_type == JSON else _status(r.content)
    assert status["code"] == 3
    assert "OTLP" in status["message"] or "JSON" in status["message"]


def _status(content: bytes) -> dict[str, Any]:
    status = Status.FromString(content)
    return {"code": status.code, "message": status.message}


@pytest.mark.parametrize("content_type", [JSON, PROTOBUF])
def test_without_a_valid_key_nothing_is_stored(bench_server: RunningServer,
                                               content_type: str) -> None:
    content = body(Trace().span("agent"), service="nokey-bot")
    if content_type == PROTOBUF:
        content = ExportTraceServiceRequest().SerializeToString()
    for key in (None, "bk_" + "0" * 40, "nonsense"):
        r = post(bench_server, content, key, content_type)
        assert r.status_code == 401 and r.headers["content-type"] == content_type
        status = r.json() if content_type == JSON else _status(r.content)
        assert status["code"] == 16


def test_other_content_types_get_415(bench_server: RunningServer, owner: tuple[str, str]) -> None:
    r = post(bench_server, b"resourceSpans", owner[1], "text/plain")
    assert r.status_code == 415 and r.headers["content-type"] == JSON
    assert "application/x-protobuf" in r.json()["message"]


def test_a_body_over_the_limit_gets_413(bench_server: RunningServer,
                                        owner: tuple[str, str]) -> None:
    limit = bench_server.services.settings.limits.max_body_bytes
    r = post(bench_server, b" " * (limit + 1), owner[1])
    assert r.status_code == 413 and r.json()["code"] == 8
    bomb = gzip.compress(b" " * (limit + 1))
    r = post(bench_server, bomb, owner[1], **{"Content-Encoding": "gzip"})
    assert r.status_code == 413


def test_the_agent_comes_from_the_header_then_the_resource(bench_server: RunningServer,
                                                           owner: tuple[str, str]) -> None:
    login, key = owner
    trace = Trace()
    assert post(bench_server, body(trace.span("chat"), service="svc-name"), key,
                **{"X-Bench-Agent": "From-Header"}).status_code == 200
    assert bench_server.store.ingest.get_task(AgentRef(login, "from-header"), trace.task("chat"))
    assert post(bench_server, body(trace.span("agent"), service="unknown_service:python"),
                key).status_code == 200
    assert bench_server.store.ingest.get_task(AgentRef(login, "weather"), trace.task("agent"))
    r = post(bench_server, body(trace.span("tool"), service="unknown_service"), key)
    assert r.json()["partialSuccess"]["rejectedSpans"] == "1"
    assert "X-Bench-Agent" in r.json()["partialSuccess"]["errorMessage"]
    r = post(bench_server, body(trace.span("tool")), key, **{"X-Bench-Agent": "not a slug!"})
    assert r.status_code == 400 and "X-Bench-Agent" in r.json()["message"]


def test_an_agent_key_writes_only_its_agent(bench_server: RunningServer) -> None:
    login = new_login()
    key = bench_server.create_key(login, agent="weather-bot")
    assert post(bench_server, body(Trace().span("chat")), key).status_code == 200
    r = post(bench_server, body(Trace().span("chat"), service="other-bot"), key)
    assert r.status_code == 403 and r.json()["code"] == 7
    assert bench_server.store.agents.get_agent(AgentRef(login, "other-bot")) is None


def test_hidden_inputs_and_outputs_of_spans_are_not_served(bench_server: RunningServer,
                                                           owner: tuple[str, str]) -> None:
    login, key = owner
    trace = Trace()
    post(bench_server, body(trace.span("agent")), key)
    bench_server.store.agents.update_agent(AgentRef(login, "weather-bot"),
                                           {"hide_inputs": True, "hide_outputs": True})
    task = bench_server.get(f"/api/agents/{login}/weather-bot")["recent_tasks"][0]
    assert task["input"] == "[hidden by owner]"
    assert task["metadata"] == {  # its ids and the attributes known to be names
        "trace_id": trace.trace_id, "span_id": trace.ids["agent"], "service": "weather-bot",
        "attributes": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Weather"}}
    assert bench_server.get(f"/api/agents/{login}/weather-bot", key=key
                            )["recent_tasks"][0]["input"] == [{"role": "user"}]
