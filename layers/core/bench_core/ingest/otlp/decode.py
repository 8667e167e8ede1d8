"""OTLP/HTTP trace request bodies (JSON or protobuf) → plain `Span` records (logs: `log_decode`).

Both encodings end in the same records, so the mapping to tasks knows no wire format. What
cannot be read as an `ExportTraceServiceRequest` at all is a `DecodeError` (HTTP 400); a span
that decodes but makes no sense (bad ids, no times) is the mapping's to reject, one by one.

The protobuf classes (`opentelemetry-proto`) are imported on the first protobuf request, never
at import time, so a cold start that only ever sees JSON does not pay for them.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

STATUS_ERROR = 2
INVALID_ID = "invalid"
"""An id present but not of its size or not hex: such a span is rejected, not guessed at."""
SPAN_FLAGS_HAS_IS_REMOTE = 0x100
SPAN_FLAGS_IS_REMOTE = 0x200
_STATUS_CODES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}


class DecodeError(ValueError):
    """The body is not an OTLP trace export request in the encoding it claims."""


@dataclass(slots=True)
class SpanEvent:
    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass(slots=True)
class Span:
    """One span with its resource's attributes. Ids are lowercase hex; "" when absent or all
    zeros (no parent), `INVALID_ID` when malformed."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    status_code: int = 0
    status_message: str = ""
    flags: int = 0
    events: list[SpanEvent] = field(default_factory=list)

    @property
    def parent_is_remote(self) -> bool:
        """The parent lives in another process (`flags`, OTLP 1.1): this span starts the
        local part of a distributed trace."""
        return self.flags & (SPAN_FLAGS_HAS_IS_REMOTE | SPAN_FLAGS_IS_REMOTE) == (
            SPAN_FLAGS_HAS_IS_REMOTE | SPAN_FLAGS_IS_REMOTE)


# ---- JSON (OTLP/HTTP JSON: lowerCamelCase keys, hex ids, int64 as strings) -------------------


def decode_json(body: bytes) -> list[Span]:
    return json_export(body, "trace", ("resourceSpans", "resource_spans"), _json_resource_spans)


Item = TypeVar("Item")


def json_export(body: bytes, what: str, keys: tuple[str, str],
                per_resource: Callable[[Any], Iterable[Item]]) -> list[Item]:
    """The items of an OTLP JSON export (`what`: trace, logs), one resource at a time; any
    malformed part is a `DecodeError` naming the problem, never another exception."""
    try:
        request = json.loads(body)
    except RecursionError:
        raise DecodeError(f"body is not an OTLP JSON {what} export: it is nested too deeply to "
                          "read") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecodeError(f"body is not valid JSON: {exc}") from exc
    try:
        return [item for resource in _list(_obj(request), *keys) for item in per_resource(resource)]
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise DecodeError(f"body is not an OTLP JSON {what} export: {exc}") from exc


def _json_resource_spans(node: Any) -> Iterable[Span]:
    node = _obj(node)
    resource = _json_attributes(_obj(node.get("resource") or {}).get("attributes"))
    for scope_spans in _list(node, "scopeSpans", "scope_spans"):
        for span in _list(_obj(scope_spans), "spans"):
            yield _json_span(_obj(span), resource)


def _json_span(s: dict[str, Any], resource: dict[str, Any]) -> Span:
    status = _obj(s.get("status") or {})
    code = status.get("code", 0)
    return Span(
        trace_id=_hex_id(_get(s, "traceId", "trace_id"), 16),
        span_id=_hex_id(_get(s, "spanId", "span_id"), 8),
        parent_span_id=_hex_id(_get(s, "parentSpanId", "parent_span_id"), 8),
        name=str(s.get("name") or ""),
        start_ns=_int(_get(s, "startTimeUnixNano", "start_time_unix_nano")),
        end_ns=_int(_get(s, "endTimeUnixNano", "end_time_unix_nano")),
        attributes=_json_attributes(s.get("attributes")),
        resource=resource,
        status_code=_STATUS_CODES.get(code, 0) if isinstance(code, str) else int(code),
        status_message=str(status.get("message") or ""),
        flags=_int(s.get("flags")),
        events=[SpanEvent(name=str(e.get("name") or ""),
                          time_ns=_int(_get(e, "timeUnixNano", "time_unix_nano")),
                          attributes=_json_attributes(e.get("attributes")))
                for e in map(_obj, s.get("events") or [])])


def _json_attributes(items: Any, depth: int = 0) -> dict[str, Any]:
    if items is None:
        return {}
    return {str(kv["key"]): _json_any(kv.get("value"), depth) for kv in map(_obj, _seq(items))}


def _json_any(value: Any, depth: int = 0) -> Any:
    """An `AnyValue` as plain JSON data: arrays become lists, kvlists dicts, bytes base64."""
    if not value:
        return None
    if depth >= MAX_VALUE_DEPTH:
        raise ValueError(f"an attribute value is nested deeper than {MAX_VALUE_DEPTH} levels")
    for key, inner in _obj(value).items():
        if key in _ARRAY:
            return [_json_any(v, depth + 1) for v in _seq(_obj(inner).get("values") or [])]
        if key in _KVLIST:
            return _json_attributes(_obj(inner).get("values"), depth + 1)
        reader = _JSON_SCALAR.get(key)
        if reader is not None:
            return reader(inner)
    return None


def _json_double(value: Any) -> Any:
    number = float(value)
    return number if math.isfinite(number) else str(value)


MAX_VALUE_DEPTH = 32
"""Arrays and kvlists nest this deep at most: real attributes nest two or three levels."""
_ARRAY = ("arrayValue", "array_value")
_KVLIST = ("kvlistValue", "kvlist_value")
_JSON_SCALAR: dict[str, Callable[[Any], Any]] = {
    "stringValue": str, "boolValue": bool, "intValue": int, "doubleValue": _json_double,
    "bytesValue": str, "string_value": str, "bool_value": bool, "int_value": int,
    "double_value": _json_double, "bytes_value": str}
"""Readers by `AnyValue` field, under its JSON and its protobuf name (bytes stay base64)."""


def _get(node: dict[str, Any], camel: str, snake: str) -> Any:
    """A field by its OTLP JSON name, or by its protobuf name (which JSON parsers also accept)."""
    value = node.get(camel)
    return node.get(snake) if value is None else value


def _obj(node: Any) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise TypeError(f"expected an object, got {type(node).__name__}")
    return node


def _seq(node: Any) -> list[Any]:
    if not isinstance(node, list):
        raise TypeError(f"expected an array, got {type(node).__name__}")
    return node


def _list(node: dict[str, Any], *names: str) -> list[Any]:
    for name in names:
        if node.get(name) is not None:
            return _seq(node[name])
    return []


def _int(value: Any) -> int:
    """An int64/fixed64 field: a decimal string in OTLP JSON, a number from lenient writers."""
    if value is None or value == "":
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"expected an integer, got {value!r}")
    return int(value)


def _hex_id(value: Any, size: int) -> str:
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or len(value) != 2 * size:
        return INVALID_ID
    try:
        return _bytes_id(bytes.fromhex(value), size)
    except ValueError:
        return INVALID_ID


# ---- protobuf (opentelemetry-proto) --------------------------------------------------------


Message = TypeVar("Message")


def parsed(request: Message, body: bytes, what: str) -> Message:
    """`request` (an empty OTLP protobuf message) filled from `body`; a `DecodeError` naming
    the export (`what`: trace, logs) when it is not one."""
    from google.protobuf.message import DecodeError as ProtobufDecodeError

    try:
        request.ParseFromString(body)  # type: ignore[attr-defined]
    except (ProtobufDecodeError, RuntimeError, ValueError) as exc:
        raise DecodeError(f"body is not an OTLP protobuf {what} export: {exc}") from exc
    return request


def decode_protobuf(body: bytes) -> list[Span]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = parsed(ExportTraceServiceRequest(), body, "trace")
    spans = []
    for resource_spans in request.resource_spans:
        resource = _pb_attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            spans += [_pb_span(span, resource) for span in scope_spans.spans]
    return spans


def _pb_span(s: Any, resource: dict[str, Any]) -> Span:
    return Span(
        trace_id=_bytes_id(s.trace_id, 16), span_id=_bytes_id(s.span_id, 8),
        parent_span_id=_bytes_id(s.parent_span_id, 8), name=s.name,
        start_ns=s.start_time_unix_nano, end_ns=s.end_time_unix_nano,
        attributes=_pb_attributes(s.attributes), resource=resource,
        status_code=s.status.code, status_message=s.status.message, flags=s.flags,
        events=[SpanEvent(e.name, e.time_unix_nano, _pb_attributes(e.attributes))
                for e in s.events])


def _pb_attributes(items: Iterable[Any]) -> dict[str, Any]:
    return {kv.key: _pb_any(kv.value) for kv in items}


def _pb_any(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    inner = getattr(value, kind)
    if kind == "array_value":
        return [_pb_any(v) for v in inner.values]
    if kind == "kvlist_value":
        return _pb_attributes(inner.values)
    if kind == "bytes_value":
        return base64.b64encode(inner).decode()
    if kind == "double_value" and not math.isfinite(inner):
        return str(inner)
    return inner


def _bytes_id(raw: bytes, size: int) -> str:
    if not any(raw):
        return ""
    return raw.hex() if len(raw) == size else INVALID_ID


def decode(body: bytes, encoding: str) -> list[Span]:
    """The spans of a request body in `encoding` ("json" or "protobuf")."""
    return decode_protobuf(body) if encoding == "protobuf" else decode_json(body)


