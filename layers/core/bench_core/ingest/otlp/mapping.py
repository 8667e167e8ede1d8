"""A span → the `CleanEvent`s `POST /ingest` would have stored for the same piece of work.

Each span is one task: `task.start` at its start, an evidence `task.log` when it reports token
usage, `task.end` at its end. Ids derive from trace id + span id alone, so a re-sent span is a
duplicate, and a child names its parent's task before the parent arrives (the store folds
children into a placeholder until then). Which attribute says what, in GenAI, OpenInference,
Vercel AI SDK and Mastra terms, is `conventions`' business.

Content attributes become the task's input and output, so the agent's hide switches cover
them at read time (`privacy`); the remaining attributes are kept as the task's metadata, the
few known to be safe listed apart from the rest, which `privacy` treats as content.
"""

from __future__ import annotations

import time
from typing import Any

from ...domain.field_limits import TIME_RULE, cap, ns_in_range, session_from_label
from ...domain.models import MAX_DURATION_MS, CleanEvent
from ...domain.pricing import price_evidence
from ...domain.privacy import PUBLIC_ATTRIBUTES, public_value
from ...settings import Limits
from .conventions import (
    MODEL,
    OPERATION,
    SESSION,
    SYSTEM_INSTRUCTIONS,
    TOKENS,
    TOOL_NAME,
    USER,
    content,
    first,
    is_aggregate,
    is_content,
    is_safe,
    provider,
    structured,
)
from .decode import INVALID_ID, STATUS_ERROR, Span


def span_problem(span: Span) -> str | None:
    """Why `span` cannot be stored (reported in `partialSuccess`), or None."""
    if span.trace_id in ("", INVALID_ID):
        return "invalid traceId"
    if span.span_id in ("", INVALID_ID):
        return "invalid spanId"
    if span.parent_span_id == INVALID_ID:
        return "invalid parentSpanId"
    if not span.start_ns or not span.end_ns:
        return "startTimeUnixNano and endTimeUnixNano must be set"
    if not ns_in_range(span.start_ns) or not ns_in_range(span.end_ns):
        return f"startTimeUnixNano and endTimeUnixNano: {TIME_RULE}"
    if span.end_ns < span.start_ns:
        return "span ends before it starts"
    if span.end_ns - span.start_ns > MAX_DURATION_MS * 1e6:
        return "span lasts over 30 days"
    return None


def task_id(trace_id: str, span_id: str) -> str:
    return f"{trace_id}-{span_id}"


def span_events(span: Span, limits: Limits) -> list[CleanEvent]:
    """The events of one valid span (see `span_problem`), in the order /ingest stores them."""
    attrs = span.attributes
    task = task_id(span.trace_id, span.span_id)
    common: dict[str, Any] = {"task_id": task, "name": task_name(span)}
    if span.parent_span_id and not span.parent_is_remote:
        common["parent_task_id"] = task_id(span.trace_id, span.parent_span_id)
    started, ended = _iso(span.start_ns), _iso(span.end_ns)
    failed = span.status_code == STATUS_ERROR
    events = [_event(f"{task}:start", "task.start", started, common,
                     input=cap(_input(attrs), limits.max_field_bytes), **span_session(attrs))]
    evidence = evidence_data(attrs)
    if evidence is not None:
        events.append(_event(f"{task}:evidence", "task.log", ended, common, data=evidence))
    events.append(_event(
        f"{task}:end", "task.end", ended, common, status="failed" if failed else "success",
        duration_ms=(span.end_ns - span.start_ns) / 1e6,
        output=cap(error_text(span) if failed else content(attrs, "output"),
                   limits.max_field_bytes),
        data=cap(metadata(span), limits.max_field_bytes)))
    return events


def span_session(attrs: dict[str, Any]) -> dict[str, str]:
    """The session and user a span names (`conventions.SESSION`, `USER`), within the rule."""
    found = {"session_id": session_from_label(first(attrs, SESSION)),
             "user_id": session_from_label(first(attrs, USER))}
    return {name: value for name, value in found.items() if value is not None}


def share_sessions(events: list[CleanEvent]) -> None:
    """A trace's session and user, where one of its spans names them, given to its root span's
    start when the root has none: a run's session is its root's (`domain.sessions`), and an
    instrumentation may set `gen_ai.conversation.id` on the model call alone. Roots sent in
    another request keep what they named."""
    named: dict[str, dict[str, str]] = {}
    for event in events:
        if event.kind == "task.start" and event.task_id is not None:
            trace = named.setdefault(event.task_id.partition("-")[0], {})
            for field_name in ("session_id", "user_id"):
                if field_name in event.body:
                    trace.setdefault(field_name, event.body[field_name])
    for event in events:
        if (event.kind == "task.start" and event.task_id is not None
                and "parent_task_id" not in event.body):
            for field_name, value in named.get(event.task_id.partition("-")[0], {}).items():
                event.body.setdefault(field_name, value)


def _event(event_id: str, kind: str, ts: str, common: dict[str, Any],
           **fields: Any) -> CleanEvent:
    body = {"id": event_id, "kind": kind, "ts": ts, **common, **fields}
    return CleanEvent(id=event_id, kind=kind, ts=ts, task_id=common["task_id"], body=body)


def _iso(ns: int) -> str:
    seconds, rest = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest // 1_000_000:03d}Z"


def task_name(span: Span) -> str:
    """The span's name; a tool span named only for its kind (`ai.toolCall`) gets the tool's."""
    name = span.name or span.attributes.get(OPERATION) or "span"
    tool = first(span.attributes, TOOL_NAME)
    return f"{name} {tool}" if isinstance(tool, str) and tool not in name else name


def evidence_data(attrs: dict[str, Any]) -> dict[str, Any] | None:
    """The priced evidence record of a span that reports token usage, else None."""
    raw = raw_evidence(attrs)
    return None if raw is None else price_evidence(raw)


def raw_evidence(attrs: dict[str, Any]) -> dict[str, Any] | None:
    """The evidence a span's attributes report, as sent (`pricing.evidence_problems` says what
    of it pricing drops), or None if it reports no token usage."""
    if is_aggregate(attrs):
        return None
    tokens = {name: first(attrs, names) for name, names in TOKENS.items()}
    if all(count is None for count in tokens.values()):
        return None
    return {"label": "evidence", "provider": provider(attrs), "model": first(attrs, MODEL),
            "operation": attrs.get(OPERATION) or attrs.get("ai.operationId"), **tokens}


def error_text(span: Span) -> str:
    """A failed span's output: its exception event, else its status message."""
    for event in span.events:
        if event.name == "exception":
            kind = event.attributes.get("exception.type")
            message = event.attributes.get("exception.message")
            if kind or message:
                return ": ".join(str(part) for part in (kind, message) if part)
    return span.status_message or "error"


def metadata(span: Span) -> dict[str, Any]:
    """Where the task came from and the span's other attributes (content left out), with the
    names of those known to be safe (`conventions.is_safe`, holding a public value) for the
    privacy gate: every other attribute is content, hidden where either switch is on."""
    attributes = {k: v for k, v in span.attributes.items() if not is_content(k)}
    return {"trace_id": span.trace_id, "span_id": span.span_id,
            "service": span.resource.get("service.name"), "attributes": attributes,
            PUBLIC_ATTRIBUTES: [name for name, value in attributes.items()
                                if is_safe(name) and public_value(value)]}


def _input(attrs: dict[str, Any]) -> Any:
    value = content(attrs, "input")
    instructions = attrs.get(SYSTEM_INSTRUCTIONS)
    if instructions is None:
        return value
    return {"system_instructions": structured(instructions), "messages": value}
