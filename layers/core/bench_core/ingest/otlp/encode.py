"""Responses in the request's own encoding, as OTLP/HTTP requires: an exporter that sent
protobuf must get protobuf back, even for errors (two well-known backends broke strict exporters
by answering JSON). Success is an `ExportTraceServiceResponse` (logs: `ExportLogsServiceResponse`);
an error is a `google.rpc.Status`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from . import ExportResult

if TYPE_CHECKING:
    from .logs import LogsResult

GRPC_CODES = {400: 3, 401: 16, 403: 7, 404: 5, 413: 8, 415: 3, 422: 3, 429: 8}
"""HTTP status → the `google.rpc.Code` of the Status body (INVALID_ARGUMENT, UNAUTHENTICATED,
PERMISSION_DENIED, NOT_FOUND, RESOURCE_EXHAUSTED); others are UNKNOWN, 5xx INTERNAL."""


def export_response(result: ExportResult, encoding: str) -> bytes:
    """Empty when every span was stored whole; `partialSuccess` saying how many were not and
    why, and what was dropped from stored ones (OTLP's warning: 0 rejected, a message)."""
    if encoding == "protobuf":
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceResponse,
        )

        response = ExportTraceServiceResponse()
        if result.rejected or result.warnings:
            response.partial_success.rejected_spans = result.rejected
            response.partial_success.error_message = result.error_message
        return bytes(response.SerializeToString())
    body = {}
    if result.rejected or result.warnings:  # int64 is a decimal string in OTLP JSON
        body["partialSuccess"] = {"rejectedSpans": str(result.rejected),
                                  "errorMessage": result.error_message}
    return json.dumps(body).encode()


def logs_response(result: LogsResult, encoding: str) -> bytes:
    """Empty when every content record was attached or parked; `partialSuccess` naming how many
    were refused and why."""
    if encoding == "protobuf":
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
            ExportLogsServiceResponse,
        )

        response = ExportLogsServiceResponse()
        if result.rejected:
            response.partial_success.rejected_log_records = result.rejected
            response.partial_success.error_message = result.error_message
        return bytes(response.SerializeToString())
    body = {}
    if result.rejected:
        body["partialSuccess"] = {"rejectedLogRecords": str(result.rejected),
                                  "errorMessage": result.error_message}
    return json.dumps(body).encode()


def status_body(http_status: int, message: str, encoding: str) -> bytes:
    code = GRPC_CODES.get(http_status, 13 if http_status >= 500 else 2)
    if encoding == "protobuf":
        return _status_protobuf(code, message)
    return json.dumps({"code": code, "message": message}).encode()


def _status_protobuf(code: int, message: str) -> bytes:
    """`google.rpc.Status{code, message}` written by hand: two fields are not worth a
    dependency on googleapis-common-protos."""
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)
