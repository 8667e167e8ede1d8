"""OTLP decoding (JSON and protobuf) and the span → task-events mapping (bench_core.ingest.otlp)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from typing import Any

import pytest
from bench_core.domain.privacy import PUBLIC_ATTRIBUTES
from bench_core.ingest.otlp import slugify
from bench_core.ingest.otlp.decode import INVALID_ID, DecodeError, Span, SpanEvent, decode
from bench_core.ingest.otlp.mapping import span_events, span_problem
from bench_core.settings import Limits
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList

TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"
PARENT = "eee19b7ec3c1b173"
T0 = 1_764_691_200_000_000_000  # 2025-12-02T16:00:00Z


def json_span(**fields: Any) -> dict[str, Any]:
    return {"traceId": TRACE, "spanId": SPAN, "name": "chat gpt-4o", "kind": 3,
            "startTimeUnixNano": str(T0), "endTimeUnixNano": str(T0 + 1_500_000_000), **fields}


def json_body(*spans: dict[str, Any], resource: list[dict[str, Any]] | None = None) -> bytes:
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": resource or [{"key": "service.name",
                                                 "value": {"stringValue": "svc"}}]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": list(spans)}]}]}).encode()


def span(**attributes: Any) -> Span:
    return Span(trace_id=TRACE, span_id=SPAN, parent_span_id="", name="chat gpt-4o", start_ns=T0,
                end_ns=T0 + 2_000_000, attributes=attributes, resource={"service.name": "svc"})


def by_kind(s: Span) -> dict[str, dict[str, Any]]:
    return {e.kind: e.body for e in span_events(s, Limits())}


# ---- decoding ------------------------------------------------------------------------------


def test_json_any_values_of_every_kind_decode_to_plain_data() -> None:
    attributes = [
        {"key": "s", "value": {"stringValue": "x"}},
        {"key": "b", "value": {"boolValue": True}},
        {"key": "i", "value": {"intValue": "9007199254740993"}},
        {"key": "i2", "value": {"intValue": 7}},
        {"key": "d", "value": {"doubleValue": 0.5}},
        {"key": "nan", "value": {"doubleValue": "NaN"}},
        {"key": "bytes", "value": {"bytesValue": base64.b64encode(b"\x00\x01").decode()}},
        {"key": "arr", "value": {"arrayValue": {"values": [{"intValue": "1"},
                                                           {"stringValue": "two"}]}}},
        {"key": "kv", "value": {"kvlistValue": {"values": [
            {"key": "nested", "value": {"arrayValue": {}}}]}}},
        {"key": "empty", "value": {}},
        {"key": "snake", "value": {"string_value": "also"}},
    ]
    [decoded] = decode(json_body(json_span(attributes=attributes)), "json")
    assert decoded.attributes == {
        "s": "x", "b": True, "i": 9007199254740993, "i2": 7, "d": 0.5, "nan": "NaN",
        "bytes": "AAE=", "arr": [1, "two"], "kv": {"nested": []}, "empty": None, "snake": "also"}
    assert (decoded.trace_id, decoded.span_id, decoded.parent_span_id) == (TRACE, SPAN, "")
    assert (decoded.start_ns, decoded.end_ns) == (T0, T0 + 1_500_000_000)
    assert decoded.resource == {"service.name": "svc"}


def test_protobuf_and_json_decode_to_the_same_span() -> None:
    pb = ExportTraceServiceRequest()
    resource_spans = pb.resource_spans.add()
    resource_spans.resource.attributes.append(
        KeyValue(key="service.name", value=AnyValue(string_value="svc")))
    s = resource_spans.scope_spans.add().spans.add(
        trace_id=bytes.fromhex(TRACE), span_id=bytes.fromhex(SPAN),
        parent_span_id=bytes.fromhex(PARENT), name="tool", start_time_unix_nano=T0,
        end_time_unix_nano=T0 + 5)
    s.attributes.extend([
        KeyValue(key="n", value=AnyValue(int_value=3)),
        KeyValue(key="raw", value=AnyValue(bytes_value=b"\x00\x01")),
        KeyValue(key="arr", value=AnyValue(array_value=ArrayValue(values=[
            AnyValue(double_value=1.5), AnyValue(bool_value=False)]))),
        KeyValue(key="kv", value=AnyValue(kvlist_value=KeyValueList(values=[
            KeyValue(key="a", value=AnyValue(string_value="b"))])))])
    s.status.code = 2
    s.status.message = "boom"
    s.events.add(name="exception", time_unix_nano=T0 + 1).attributes.append(
        KeyValue(key="exception.type", value=AnyValue(string_value="ValueError")))
    as_json = json_body(json_span(
        parentSpanId=PARENT, name="tool", endTimeUnixNano=str(T0 + 5),
        status={"code": 2, "message": "boom"},
        events=[{"name": "exception", "timeUnixNano": str(T0 + 1), "attributes": [
            {"key": "exception.type", "value": {"stringValue": "ValueError"}}]}],
        attributes=[{"key": "n", "value": {"intValue": "3"}},
                    {"key": "raw", "value": {"bytesValue": "AAE="}},
                    {"key": "arr", "value": {"arrayValue": {"values": [
                        {"doubleValue": 1.5}, {"boolValue": False}]}}},
                    {"key": "kv", "value": {"kvlistValue": {"values": [
                        {"key": "a", "value": {"stringValue": "b"}}]}}}]))
    from_pb, from_json = decode(pb.SerializeToString(), "protobuf"), decode(as_json, "json")
    assert from_pb == from_json
    assert from_pb[0].events == [SpanEvent("exception", T0 + 1, {"exception.type": "ValueError"})]


@pytest.mark.parametrize(("body", "encoding"), [
    (b"{not json", "json"), (b"[]", "json"), (b'{"resourceSpans": {}}', "json"),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": ["x"]}]}]}', "json"),
    (json_body(json_span(startTimeUnixNano="soon")), "json"),
    (b"\xff\xff\xff\xff", "protobuf"), (b"\x0a\x05abc", "protobuf")])
def test_what_is_not_an_export_request_is_a_decode_error(body: bytes, encoding: str) -> None:
    with pytest.raises(DecodeError):
        decode(body, encoding)


def test_an_empty_request_has_no_spans() -> None:
    assert decode(b"{}", "json") == [] and decode(b"", "protobuf") == []


@pytest.mark.parametrize(("fields", "problem"), [
    ({"traceId": ""}, "invalid traceId"),
    ({"traceId": "00" * 16}, "invalid traceId"),
    ({"spanId": "xyz"}, "invalid spanId"),
    ({"parentSpanId": "abc"}, "invalid parentSpanId"),
    ({"startTimeUnixNano": "0"}, "startTimeUnixNano and endTimeUnixNano must be set"),
    ({"endTimeUnixNano": str(T0 - 1)}, "span ends before it starts"),
    ({"endTimeUnixNano": str(T0 + 31 * 86_400 * 10**9)}, "span lasts over 30 days"),
])
def test_spans_that_make_no_sense_are_named_for_rejection(fields: dict[str, Any],
                                                          problem: str) -> None:
    [decoded] = decode(json_body(json_span(**fields)), "json")
    assert span_problem(decoded) == problem


def test_an_all_zero_parent_id_means_no_parent() -> None:
    [decoded] = decode(json_body(json_span(parentSpanId="0" * 16)), "json")
    assert decoded.parent_span_id == "" and span_problem(decoded) is None
    [bad] = decode(json_body(json_span(parentSpanId="0" * 15)), "json")
    assert bad.parent_span_id == INVALID_ID


# ---- mapping -------------------------------------------------------------------------------


def test_a_span_becomes_start_evidence_and_end_with_ids_from_trace_and_span() -> None:
    s = span(**{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-2024-08-06",
                "gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 500,
                "gen_ai.conversation.id": "conv-1"})
    s.parent_span_id = PARENT
    events = span_events(s, Limits())
    task = f"{TRACE}-{SPAN}"
    assert [(e.id, e.kind, e.task_id) for e in events] == [
        (f"{task}:start", "task.start", task), (f"{task}:evidence", "task.log", task),
        (f"{task}:end", "task.end", task)]
    start, log, end = (e.body for e in events)
    assert start["parent_task_id"] == f"{TRACE}-{PARENT}" and start["name"] == "chat gpt-4o"
    assert start["ts"] == "2025-12-02T16:00:00.000Z" and end["ts"] == "2025-12-02T16:00:00.002Z"
    assert end["status"] == "success" and end["duration_ms"] == 2.0
    assert log["data"]["model"] == "gpt-4o-2024-08-06" and log["data"]["provider"] == "openai"
    assert log["data"]["cost_usd"] == pytest.approx((1000 * 2.5 + 500 * 10) / 1e6)
    assert end["data"]["attributes"]["gen_ai.conversation.id"] == "conv-1"
    assert end["data"]["trace_id"] == TRACE and end["data"]["service"] == "svc"


def test_deprecated_names_are_read_and_the_current_ones_win() -> None:
    old = by_kind(span(**{"gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o-mini",
                          "gen_ai.usage.prompt_tokens": 10, "gen_ai.usage.completion_tokens": 0}))
    assert old["task.log"]["data"]["provider"] == "openai"
    assert (old["task.log"]["data"]["input_tokens"], old["task.log"]["data"]["output_tokens"]
            ) == (10, 0)
    both = by_kind(span(**{"gen_ai.usage.input_tokens": 7, "gen_ai.usage.prompt_tokens": 99}))
    assert both["task.log"]["data"]["input_tokens"] == 7


def test_a_count_not_sent_stays_unknown() -> None:
    data = by_kind(span(**{"gen_ai.request.model": "gpt-4o", "gen_ai.usage.output_tokens": 3,
                           "gen_ai.usage.cache_read.input_tokens": 0}))["task.log"]["data"]
    assert data["input_tokens"] is None and data["cache_read_input_tokens"] == 0
    assert data["reasoning_output_tokens"] is None


def test_spans_without_usage_and_agent_invocations_carry_no_evidence() -> None:
    assert "task.log" not in by_kind(span(**{"gen_ai.operation.name": "execute_tool"}))
    agent = by_kind(span(**{"gen_ai.operation.name": "invoke_agent",
                            "gen_ai.usage.input_tokens": 5000}))
    assert "task.log" not in agent
    assert agent["task.end"]["data"]["attributes"]["gen_ai.usage.input_tokens"] == 5000


def test_an_error_status_fails_the_task_with_the_exception_or_status_message() -> None:
    s = span()
    s.status_code, s.status_message = 2, "tool failed"
    assert by_kind(s)["task.end"]["status"] == "failed"
    assert by_kind(s)["task.end"]["output"] == "tool failed"
    s.events = [SpanEvent("exception", T0, {"exception.type": "KeyError",
                                            "exception.message": "'city'"})]
    assert by_kind(s)["task.end"]["output"] == "KeyError: 'city'"
    s.status_message, s.events = "", []
    assert by_kind(s)["task.end"]["output"] == "error"
    s.status_code = 1
    assert by_kind(s)["task.end"]["status"] == "success"


def test_content_attributes_are_input_and_output_and_never_metadata() -> None:
    messages = [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}]
    chat = by_kind(span(**{
        "gen_ai.input.messages": json.dumps(messages),
        "gen_ai.system_instructions": [{"type": "text", "content": "Be brief."}],
        "gen_ai.output.messages": '[{"role": "assistant", "parts": []}]',
        "gen_ai.request.temperature": 0.2}))
    assert chat["task.start"]["input"] == {
        "system_instructions": [{"type": "text", "content": "Be brief."}], "messages": messages}
    assert chat["task.end"]["output"] == [{"role": "assistant", "parts": []}]
    assert chat["task.end"]["data"]["attributes"] == {"gen_ai.request.temperature": 0.2}
    tool = by_kind(span(**{"gen_ai.tool.call.arguments": '{"city": "Paris"}',
                           "gen_ai.tool.call.result": "rainy {not json",
                           "gen_ai.tool.name": "get_weather"}))
    assert tool["task.start"]["input"] == {"city": "Paris"}
    assert tool["task.end"]["output"] == "rainy {not json"
    assert tool["task.end"]["data"]["attributes"] == {"gen_ai.tool.name": "get_weather"}


def test_metadata_lists_the_attributes_known_to_hold_names_and_numbers() -> None:
    data = by_kind(span(**{
        "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 12,
        "gen_ai.response.finish_reasons": ["stop"], "http.status_code": 200,
        "gen_ai.agent.name": "a name with spaces is free text",
        "llm.prompt_template.variables": '{"city": "Paris"}',
        "traceloop.entity.input": "what the user asked", "pydantic_ai.all_messages": "[]"}))
    metadata = data["task.end"]["data"]
    assert metadata[PUBLIC_ATTRIBUTES] == ["gen_ai.request.model", "gen_ai.usage.input_tokens",
                                           "gen_ai.response.finish_reasons", "http.status_code"]
    assert len(metadata["attributes"]) == 8, "the owner keeps every attribute"


def test_large_content_is_truncated_with_a_marker() -> None:
    body = by_kind(span(**{"gen_ai.input.messages": "x" * 100_000}))
    assert body["task.start"]["input"]["_bench_truncated"] is True


def test_a_span_whose_parent_is_remote_starts_a_run_here() -> None:
    s = span()
    s.parent_span_id, s.flags = PARENT, 0x300
    assert "parent_task_id" not in by_kind(s)["task.start"]
    s.flags = 0x100
    assert by_kind(s)["task.start"]["parent_task_id"] == f"{TRACE}-{PARENT}"


@pytest.mark.parametrize(("name", "slug"), [("Weather Agent", "weather-agent"),
                                            ("  research_bot.v2 ", "research_bot.v2"),
                                            ("---", None), ("", None), (None, None),
                                            ("ünïcode agent", "n-code-agent")])
def test_agent_names_become_slugs(name: str | None, slug: str | None) -> None:
    assert slugify(name) == slug


def test_protobuf_is_imported_only_by_a_protobuf_request() -> None:
    """The ingest Lambda's cold start must not pay for the protobuf classes."""
    code = ("import sys, bench_core.http.otlp, bench_core.ingest.otlp.encode; "
            "from bench_core.ingest.otlp.decode import decode; "
            "loaded = lambda: any(m.startswith(('google.protobuf', 'opentelemetry.proto')) "
            "for m in sys.modules); "
            "assert not loaded(); decode(b'{}', 'json'); assert not loaded(); "
            "decode(b'', 'protobuf'); assert loaded()")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
