"""OTLP/HTTP log request bodies (JSON or protobuf) → plain `LogRecord`s, as `decode` does for
spans: both encodings end in the same records, and what is not an `ExportLogsServiceRequest`
at all is a `DecodeError` (HTTP 400).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .decode import (
    _bytes_id,
    _get,
    _hex_id,
    _int,
    _json_any,
    _json_attributes,
    _list,
    _obj,
    _pb_any,
    _pb_attributes,
    json_export,
    parsed,
)


@dataclass(slots=True)
class LogRecord:
    """One log record with its resource's attributes. Ids as in `decode.Span`: lowercase hex,
    "" when absent, `INVALID_ID` when malformed. `event_name` is the record's own field (OTLP
    1.5) or, from older SDKs, its `event.name` attribute."""

    trace_id: str
    span_id: str
    time_ns: int
    event_name: str
    body: Any
    attributes: dict[str, Any]
    resource: dict[str, Any]


def decode_logs(body: bytes, encoding: str) -> list[LogRecord]:
    """The log records of a request body in `encoding` ("json" or "protobuf")."""
    return _decode_protobuf(body) if encoding == "protobuf" else _decode_json(body)


def _record(trace_id: str, span_id: str, time_ns: int, observed_ns: int, event_name: str,
            body: Any, attributes: dict[str, Any], resource: dict[str, Any]) -> LogRecord:
    name = event_name or attributes.get("event.name") or ""
    return LogRecord(trace_id=trace_id, span_id=span_id, time_ns=time_ns or observed_ns,
                     event_name=str(name), body=body, attributes=attributes, resource=resource)


def _decode_json(body: bytes) -> list[LogRecord]:
    return json_export(body, "logs", ("resourceLogs", "resource_logs"), _json_resource_logs)


def _json_resource_logs(node: Any) -> Iterable[LogRecord]:
    node = _obj(node)
    resource = _json_attributes(_obj(node.get("resource") or {}).get("attributes"))
    for scope_logs in _list(node, "scopeLogs", "scope_logs"):
        for r in map(_obj, _list(_obj(scope_logs), "logRecords", "log_records")):
            yield _record(_hex_id(_get(r, "traceId", "trace_id"), 16),
                          _hex_id(_get(r, "spanId", "span_id"), 8),
                          _int(_get(r, "timeUnixNano", "time_unix_nano")),
                          _int(_get(r, "observedTimeUnixNano", "observed_time_unix_nano")),
                          str(_get(r, "eventName", "event_name") or ""), _json_any(r.get("body")),
                          _json_attributes(r.get("attributes")), resource)


def _decode_protobuf(body: bytes) -> list[LogRecord]:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    request = parsed(ExportLogsServiceRequest(), body, "logs")
    records = []
    for resource_logs in request.resource_logs:
        resource = _pb_attributes(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            records += [_record(_bytes_id(r.trace_id, 16), _bytes_id(r.span_id, 8),
                                r.time_unix_nano, r.observed_time_unix_nano,
                                getattr(r, "event_name", ""),
                                _pb_any(r.body) if r.HasField("body") else None,
                                _pb_attributes(r.attributes), resource)
                        for r in scope_logs.log_records]
    return records
