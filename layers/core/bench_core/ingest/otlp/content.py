"""GenAI content log events → the input and output of the span they belong to.

OpenTelemetry's GenAI instrumentations put token counts on spans but what went in and came out
in log records tied to the span by trace and span id:
- the current `gen_ai.client.inference.operation.details` event, its attributes holding
  `gen_ai.input.messages`, `gen_ai.output.messages` and `gen_ai.system_instructions`;
- the older per-message events `gen_ai.system.message`, `gen_ai.user.message`,
  `gen_ai.assistant.message`, `gen_ai.tool.message` (input, the message in the body) and
  `gen_ai.choice` (output).

All the records of one span in one request make one `task.content` event whose id derives from
what it carries, so a re-sent request is a duplicate; `folding` merges it into the task whatever
arrived first. Other log records are not content and are counted, not stored.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ...domain.field_limits import TIME_RULE, cap, ns_in_range
from ...domain.models import CleanEvent, iso
from .conventions import SYSTEM_INSTRUCTIONS
from .conventions import structured as _structured
from .decode import INVALID_ID
from .log_decode import LogRecord
from .mapping import _iso, task_id

DETAILS = "gen_ai.client.inference.operation.details"
INPUT_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
"""The older per-message events and the role each one's message has."""
CHOICE = "gen_ai.choice"
CONTENT_EVENTS = frozenset({DETAILS, CHOICE, *INPUT_EVENTS})


@dataclass
class SpanContent:
    """What the content records of one span say, in the order they were emitted."""

    trace_id: str
    span_id: str
    resource: dict[str, Any]
    time_ns: int = 0
    input: list[Any] = field(default_factory=list)
    output: list[Any] = field(default_factory=list)
    system_instructions: Any = None
    records: list[LogRecord] = field(default_factory=list)

    @property
    def task_id(self) -> str:
        return task_id(self.trace_id, self.span_id)

    def add(self, record: LogRecord) -> None:
        self.records.append(record)
        self.time_ns = max(self.time_ns, record.time_ns)
        if record.event_name == DETAILS:
            attrs = record.attributes
            self.input += _messages(attrs.get("gen_ai.input.messages"))
            self.output += _messages(attrs.get("gen_ai.output.messages"))
            if attrs.get(SYSTEM_INSTRUCTIONS) is not None:
                self.system_instructions = _structured(attrs[SYSTEM_INSTRUCTIONS])
        elif record.event_name == CHOICE:
            if _has_content(record.body):
                self.output.append(_structured(record.body))
        elif _has_content(record.body):
            body = _structured(record.body)
            message = ({"role": INPUT_EVENTS[record.event_name], **body}
                       if isinstance(body, dict) else
                       {"role": INPUT_EVENTS[record.event_name], "content": body})
            self.input.append(message)

    def event(self, max_field_bytes: int, now: datetime) -> CleanEvent | None:
        """The `task.content` event (at `now` if no record said when), or None when no record
        carried content."""
        value: Any = self.input or None
        if self.system_instructions is not None:
            value = {"system_instructions": self.system_instructions, "messages": value}
        fields = {k: cap(v, max_field_bytes) for k, v in (("input", value),
                                                           ("output", self.output or None))
                  if v is not None}
        if not fields:
            return None
        digest = hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode())
        event_id = f"{self.task_id}:content:{digest.hexdigest()[:20]}"
        ts = _iso(self.time_ns) if self.time_ns else iso(now)
        body = {"id": event_id, "kind": "task.content", "ts": ts, "task_id": self.task_id,
                **fields}
        return CleanEvent(id=event_id, kind="task.content", ts=ts, task_id=self.task_id,
                          body=body)


def record_problem(record: LogRecord) -> str | None:
    """Why a content record cannot be attached (counted in `partialSuccess`), or None."""
    if record.trace_id in ("", INVALID_ID) or record.span_id in ("", INVALID_ID):
        return "a GenAI content event needs the traceId and spanId of its span"
    if not ns_in_range(record.time_ns):
        return f"timeUnixNano: {TIME_RULE}"
    return None


def group_content(records: list[LogRecord]) -> tuple[list[SpanContent], dict[str, int]]:
    """The content of each span named by `records`, and why records were refused: reason →
    count. Records that are not GenAI content events are neither (they are skipped)."""
    spans: dict[tuple[str, str], SpanContent] = {}
    refused: dict[str, int] = defaultdict(int)
    for record in sorted((r for r in records if r.event_name in CONTENT_EVENTS),
                         key=lambda r: r.time_ns):
        problem = record_problem(record)
        if problem is not None:
            refused[problem] += 1
            continue
        key = (record.trace_id, record.span_id)
        if key not in spans:
            spans[key] = SpanContent(record.trace_id, record.span_id, record.resource)
        spans[key].add(record)
    return list(spans.values()), dict(refused)


def _messages(value: Any) -> list[Any]:
    value = _structured(value)
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _has_content(body: Any) -> bool:
    """A message body that says more than which message it was: with content capture off,
    instrumentations still send bodies holding only roles, ids and finish reasons."""
    body = _structured(body)
    if isinstance(body, dict):
        return any(_has_content(v) for k, v in body.items()
                   if k not in ("role", "id", "index", "finish_reason", "type"))
    if isinstance(body, (list, tuple)):
        return any(_has_content(v) for v in body)
    return body not in (None, "")
