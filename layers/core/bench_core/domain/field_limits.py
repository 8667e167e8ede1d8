"""The limits on what is stored, one set for every source (`/ingest`, OTLP traces and logs,
calls through Bench, benchmarks, /try): an oversized value is cut or capped, never a reason to
refuse the batch it came in.

- Names and labels are cut to a length, ending in `…`: a task's (span's) name, an event's
  kind, a log's label, an agent's display name, model, framework, architecture and tool names
  (and how many tools).
- Values (input, output, data, cost breakdown) over the field cap become a marker holding a
  preview of their JSON (`cap`).

A task holds at most `MAX_TASK_EVENTS` events, on every store: a batch that would take one
past it is refused whole (413), before anything of it is stored.

Ids are not cut (two different ids cut could become one): one that breaks `ID_RULE` is
refused, so every id a source sends names a page of its own (`/u/.../runs/{id}`). Times are
not moved either: a time outside `EARLIEST`..`LATEST` is refused (`TIME_RULE`), the event with
its batch on `/ingest` (422), the span or log record alone over OTLP (in `partialSuccess`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic_core import to_json

from .errors import PayloadTooLarge

TRUNCATED = "_bench_truncated"
MAX_NAME_CHARS = 256
"""A task's name (a span's, with its tool's name)."""
MAX_KIND_CHARS = 64
"""An event's kind."""
MAX_LABEL_CHARS = 200
"""An agent's display name, model, framework, architecture, each tool name; a log's label."""
MAX_TOOLS = 100
"""Tool names one agent lists."""
CUT = "…"
MAX_ID_CHARS = 128
ID_RULE = (f"ids are 1 to {MAX_ID_CHARS} characters, none of them '/' or a control character, "
           "and neither '.' nor '..'")
"""What event, task and run ids may be: each is a path segment of its pages and JSON (any
other character is sent percent-encoded), and a browser resolves '.' and '..' away."""
_NOT_IN_IDS = re.compile(r"[/\x00-\x1f\x7f-\x9f]")
MAX_SESSION_CHARS = MAX_ID_CHARS
SESSION_RULE = (f"a session or user id is 1 to {MAX_SESSION_CHARS} characters, none of them '/', "
                "'#' or a control character, and neither '.' nor '..'")
"""A run's session and user (`domain.sessions`): a session id is a path segment of its page
and part of a store key (after '#'), so neither may hold one of those."""
_NOT_IN_SESSIONS = re.compile(r"[/#\x00-\x1f\x7f-\x9f]")


def session_from_label(value: object) -> str | None:
    """A session or user id from what a producer sent (the SDK's, an OTLP attribute, a
    metadata field): text or a whole number, its characters that `SESSION_RULE` refuses as
    '-', cut to `MAX_SESSION_CHARS`; None for anything else, or when nothing is left. Made to
    fit, never refused: a session must not cost a batch its events."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    cleaned = _NOT_IN_SESSIONS.sub("-", str(value).strip())[:MAX_SESSION_CHARS]
    return cleaned if cleaned not in ("", ".", "..") else None


MAX_VERSION_CHARS = 64
"""An agent's version (`domain.versions`): a public label, and part of a store key."""
VERSION_RULE = (f"a version is 1 to {MAX_VERSION_CHARS} characters: letters, digits and "
                "'.', '_', '-', '+', starting with a letter or digit")
VERSION_PATTERN = rf"^[A-Za-z0-9][A-Za-z0-9._+-]{{0,{MAX_VERSION_CHARS - 1}}}$"
_VERSION = re.compile(VERSION_PATTERN)
_NOT_IN_VERSIONS = re.compile(r"[^A-Za-z0-9._+-]")


def version_allowed(value: str) -> bool:
    return _VERSION.match(value) is not None


def version_from_label(value: object) -> str | None:
    """A version from a label a producer chose freely (OTLP `service.version`): characters a
    version may not hold become '-', and it is cut to `MAX_VERSION_CHARS`; None when nothing
    is left. `/ingest` refuses a version that breaks `VERSION_RULE` instead (422): the SDK
    makes the one it sends fit (`bench._config.agent_version`)."""
    if not isinstance(value, str):
        return None
    cleaned = _NOT_IN_VERSIONS.sub("-", value.strip())[:MAX_VERSION_CHARS].lstrip("._+-")
    return cleaned or None


EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC)
"""The times an event may have: from the Unix epoch, where OTLP's clock starts, to the last
millisecond the sortable ISO timestamps can write. Earlier or later times broke the pages that
count days around an agent's events."""
LATEST_NS = 253_402_300_799_999_999_999
"""`LATEST` in nanoseconds since the epoch, as OTLP writes times."""
TIME_RULE = "times must fall from 1970-01-01 to 9999-12-31 (UTC)"
_CAPPED_FIELDS = ("cost_breakdown", "input", "output", "data")
MAX_TASK_EVENTS = 20_000
"""Events one task may hold. Not for its item's sake (DynamoDB's stays small whatever the
history: `store/dynamodb/codec/tasks.py` `TaskLedger`) but for the reads that grow with it:
DynamoDB knows a resent event by reading the task's older digests (1 RRU per 448 events, on
every batch to the task: summed over a task's batches that grows with the square of its
length), and a task's page reads all its events."""


def within_task_limit(counts: dict[str, int]) -> None:
    """Refuse a batch after which a task (id: events it would hold) holds more than
    `MAX_TASK_EVENTS`."""
    for task_id, count in counts.items():
        if count > MAX_TASK_EVENTS:
            raise PayloadTooLarge(f"task {task_id!r} would hold {count} events, more than "
                                  f"{MAX_TASK_EVENTS}",
                                  [{"loc": ["events"], "msg": "too many events in one task"}])


def id_allowed(value: str) -> bool:
    return 0 < len(value) <= MAX_ID_CHARS and value not in (".", "..") \
        and _NOT_IN_IDS.search(value) is None


def time_in_range(value: datetime) -> bool:
    return EARLIEST <= value <= LATEST


def ns_in_range(ns: int) -> bool:
    """An OTLP time (nanoseconds since the epoch; 0, which means unset, is in range)."""
    return 0 <= ns <= LATEST_NS


def dumps(value: Any) -> str:
    """Compact JSON (pydantic-core's encoder: several times faster than `json.dumps`)."""
    return to_json(value, serialize_unknown=True).decode()


def cap(value: Any, max_bytes: int) -> Any:
    """`value` itself if its JSON fits in `max_bytes`, else a marker holding a JSON-text preview."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str) and len(value) * 4 <= max_bytes:
        return value
    encoded = to_json(value, serialize_unknown=True)
    if len(encoded) <= max_bytes:
        return value
    preview = encoded[: max(0, max_bytes - 200)].decode(errors="ignore")
    return {TRUNCATED: True, "original_bytes": len(encoded), "preview": preview}


def cut(text: str, max_chars: int) -> str:
    """`text` if it has at most `max_chars` characters, else its start ending in `…`."""
    return text if len(text) <= max_chars else text[:max_chars - len(CUT)] + CUT


class AgentNames(Protocol):
    """What names an agent (`models.Agent`, and `models.AgentMeta`: what a batch says of it)."""

    display_name: str | None
    model: str | None
    framework: str | None
    architecture: str | None
    tools: list[str] | None


def limit_agent_names(agent: AgentNames) -> None:
    """Cut `agent`'s names to `MAX_LABEL_CHARS`, and its tools to `MAX_TOOLS`."""
    for name in ("display_name", "model", "framework", "architecture"):
        value = getattr(agent, name)
        if isinstance(value, str) and len(value) > MAX_LABEL_CHARS:
            setattr(agent, name, cut(value, MAX_LABEL_CHARS))
    tools = agent.tools
    if tools is not None and (len(tools) > MAX_TOOLS or any(
            isinstance(t, str) and len(t) > MAX_LABEL_CHARS for t in tools)):
        agent.tools = [cut(t, MAX_LABEL_CHARS) if isinstance(t, str) else t
                       for t in tools[:MAX_TOOLS]]


def bounded_body(body: dict[str, Any], max_field_bytes: int) -> tuple[dict[str, Any], str | None]:
    """An event's stored body within the limits (changed in place), and its JSON when it needed
    no capping. Every value's JSON is part of the body's, so a body within the field cap needs
    no per-field check, and its JSON goes to the store as is: one encoding per event on the
    common path."""
    for name, most in (("name", MAX_NAME_CHARS), ("kind", MAX_KIND_CHARS)):
        value = body.get(name)
        if isinstance(value, str) and len(value) > most:
            body[name] = cut(value, most)
    data = body.get("data")
    if isinstance(data, dict) and isinstance(data.get("label"), str) \
            and len(data["label"]) > MAX_LABEL_CHARS:
        body["data"] = {**data, "label": cut(data["label"], MAX_LABEL_CHARS)}
    encoded = to_json(body, serialize_unknown=True)
    if len(encoded) <= max_field_bytes:
        return body, encoded.decode()
    for name in _CAPPED_FIELDS:
        if name in body:
            body[name] = cap(body[name], max_field_bytes)
    return body, None
