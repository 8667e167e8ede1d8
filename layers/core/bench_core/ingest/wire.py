"""The `POST /ingest` wire format: a raw body → a validated batch → clean events
(`pipeline.accept_batch` stores them).

Everything that can reject a batch happens before the store is touched, so a rejected batch
stores nothing. Oversized values are truncated with a marker instead of failing the batch.
"""

from __future__ import annotations

import zlib
from typing import Any

from pydantic import ValidationError

from ..domain.errors import BadRequest, Invalid, PayloadTooLarge
from ..domain.field_limits import bounded_body
from ..domain.models import CleanEvent, IngestBatch, WireEvent, iso
from ..domain.pricing import DROPPED, is_evidence
from ..settings import Limits
from .langchain_repr import from_repr

_CAPPED_FIELDS = ("input", "output", "data")
_KEPT_FIELDS = ("name", "parent_task_id", "status", "duration_ms", "cost_usd", "cost_breakdown",
                "session_id", "user_id")


def decode_body(raw: bytes, content_encoding: str | None, limit: int) -> bytes:
    """The request body, gunzipped if the client compressed it; 413 past `limit` bytes either
    way (a small gzip can hide a huge body)."""
    if len(raw) > limit:
        raise PayloadTooLarge(f"request body over {limit} bytes")
    encoding = (content_encoding or "identity").strip().lower()
    if encoding in ("identity", ""):
        return raw
    if encoding != "gzip":
        raise BadRequest(f"unsupported Content-Encoding {encoding!r}: send gzip or nothing")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        body = inflater.decompress(raw, limit + 1)
    except zlib.error as exc:
        raise BadRequest(f"body is not valid gzip: {exc}") from exc
    if len(body) > limit or inflater.unconsumed_tail:
        raise PayloadTooLarge(f"decompressed body over {limit} bytes")
    return body


def validation_detail(exc: ValidationError) -> list[dict[str, Any]]:
    """Pydantic errors as `{"loc": [...], "msg": ...}`, without echoing the (maybe huge) input."""
    return [{"loc": list(err["loc"]), "msg": err["msg"], "type": err["type"]}
            for err in exc.errors(include_url=False, include_input=False)]


def dropped_fields(batch: IngestBatch) -> list[dict[str, Any]]:
    """What validation dropped from the batch's evidence records, as the answer reports it."""
    return [{"loc": ["events", i, "data", name], "msg": reason}
            for i, event in enumerate(batch.events)
            if event.kind == "task.log" and is_evidence(event.data)
            for name, reason in event.data.get(DROPPED, ())]


def parse_batch(body: bytes, limits: Limits) -> IngestBatch:
    try:
        batch = IngestBatch.model_validate_json(body)
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            raise BadRequest("body is not valid JSON", validation_detail(exc)) from exc
        raise Invalid("invalid ingest batch", validation_detail(exc)) from exc
    if len(batch.events) > limits.max_events_per_batch:
        raise PayloadTooLarge(
            f"too many events: {len(batch.events)} > {limits.max_events_per_batch} per batch",
            [{"loc": ["events"], "msg": f"at most {limits.max_events_per_batch} events"}])
    return batch


def clean_event(event: WireEvent, limits: Limits) -> CleanEvent:
    """The stored body of `event`: the fields it sent, within the field limits."""
    fields = event.__dict__
    body: dict[str, Any] = {"id": event.id, "kind": event.kind, "ts": iso(event.ts)}
    if event.task_id is not None:
        body["task_id"] = event.task_id
    for name in _KEPT_FIELDS:
        value = fields[name]
        if value is not None:
            body[name] = value
    for name in _CAPPED_FIELDS:
        value = fields[name]
        if value is not None or name in event.model_fields_set:  # an explicit null is kept
            body[name] = from_repr(value) if name != "data" else value
    return bounded(body, limits)


def bounded(body: dict[str, Any], limits: Limits) -> CleanEvent:
    """The event of a stored `body`, brought within the field limits (`field_limits`); made
    by position (id, kind, time, task, body, its JSON): six keywords matched cost some 1% of
    an event's ingest."""
    body, encoded = bounded_body(body, limits.max_field_bytes)
    return CleanEvent(body["id"], body["kind"], body["ts"], body.get("task_id"), body, encoded)
