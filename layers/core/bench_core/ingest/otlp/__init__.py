"""OpenTelemetry ingest (SPEC section 3): an OTLP trace export → tasks, through the same
`pipeline.accept` as `POST /ingest`.

`export_traces` decodes a request (`decode`), maps each span to task events (`mapping`), groups
them by agent and accepts each group (one atomic store write each); the verdicts of spans'
evaluation events (`evaluations`) are handed back for the caller to keep as feedback. Spans
that cannot be stored are counted and named in the `ExportResult`, which the HTTP edge turns
into OTLP's `partialSuccess`; a body that is not an export request at all is a `DecodeError`
(400).

The agent is the `X-Bench-Agent` header, else the resource's `service.name` (the SDK default
`unknown_service…` does not count), else its `gen_ai.agent.name`, else the `gen_ai.agent.name`
of a span of the same resource in the request; names are turned into slugs. The agent's
version is the resource's `service.version` (`field_limits.version_from_label`): spans of one
agent under two versions are accepted as two groups.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...domain.errors import BadRequest, BenchError, PayloadTooLarge, TooManyAgents
from ...domain.feedback import SpanVerdict
from ...domain.field_limits import version_from_label
from ...domain.keys import may_write
from ...domain.models import SLUG_PATTERN, AgentMeta, AgentRef, CleanEvent, IngestOutcome, KeyRecord
from ...domain.pricing import evidence_problems
from ...settings import Limits
from ..pipeline import Later, accept
from . import parked
from .decode import DecodeError, decode
from .evaluations import span_verdicts
from .mapping import raw_evidence, share_sessions, span_events, span_problem, task_id

ENCODINGS = {"application/json": "json", "application/x-protobuf": "protobuf",
             "application/protobuf": "protobuf"}
"""Request media types and their encoding; the response answers in the same one."""
_SLUG = re.compile(SLUG_PATTERN)
_NOT_SLUG = re.compile(r"[^a-z0-9_.-]+")


NO_AGENT = "no agent: send X-Bench-Agent or set the service.name resource attribute"


class UnsupportedMediaType(BenchError):
    status = 415


@dataclass
class ExportResult:
    spans: int = 0
    rejected: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    """Why spans were rejected: reason → count."""
    warnings: dict[str, int] = field(default_factory=dict)
    """What was dropped from spans that were stored (evidence fields that are not names or
    counts): what → count."""
    outcomes: list[tuple[AgentRef, IngestOutcome]] = field(default_factory=list)
    evaluations: dict[str, list[SpanVerdict]] = field(default_factory=dict)
    """Verdicts of the stored spans' evaluation events (`evaluations`), by agent slug, for
    the caller to keep as feedback; a refused one is a warning (its span is stored)."""
    feedback: int = 0

    @property
    def error_message(self) -> str:
        return "; ".join(f"{n} span(s): {reason}"
                         for reason, n in (*self.reasons.items(), *self.warnings.items()))

    def warn_dropped(self, span: Any) -> None:
        raw = raw_evidence(span.attributes)
        for name, reason in evidence_problems(raw) if raw else ():
            self.warn(f"evidence {name} dropped: {reason}")

    def reject(self, reason: str, count: int = 1) -> None:
        self.rejected += count
        self.reasons[reason] = self.reasons.get(reason, 0) + count

    def warn(self, warning: str, count: int = 1) -> None:
        self.warnings[warning] = self.warnings.get(warning, 0) + count


def encoding_of(content_type: str | None) -> str | None:
    """"json", "protobuf", or None for a media type OTLP/HTTP does not define."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return ENCODINGS.get(media)


def export_traces(ports: parked.OtlpPorts, key: KeyRecord, body: bytes, encoding: str,
                  agent_header: str | None, *, later: Later) -> ExportResult:
    """Accept the spans of one export request written with `key`; nothing is stored when an
    agent it names may not be written with the key (403) or the body is not a request (400).
    The spans of an agent the account may not make (`TooManyAgents`) are rejected in the
    result, and the other agents' stored."""
    limits = ports.settings.limits
    try:
        spans = decode(body, encoding)
    except DecodeError as exc:
        raise BadRequest(str(exc)) from exc
    check_count(len(spans), limits, "spans", "resourceSpans")
    header_slug = _header_slug(agent_header)
    result = ExportResult()
    by_agent: dict[tuple[str, str | None], list[CleanEvent]] = defaultdict(list)
    task_ids: dict[tuple[str, str | None], list[str]] = defaultdict(list)
    verdicts: dict[str, list[SpanVerdict]] = defaultdict(list)
    names = _ResourceAgents(spans)
    for span in spans:
        problem = span_problem(span)
        slug = header_slug or names.slug(span)
        if problem is None and slug is None:
            problem = NO_AGENT
        if problem is not None:
            result.reject(problem)
            continue
        assert slug is not None
        group = (slug, version_from_label(span.resource.get("service.version")))
        by_agent[group] += span_events(span, limits)
        task_ids[group].append(task_id(span.trace_id, span.span_id))
        judged, refused = span_verdicts(span)
        verdicts[slug] += judged
        for reason, count in refused.items():
            result.warn(reason, count)
        result.warn_dropped(span)
        result.spans += 1
    for slug, _ in by_agent:
        may_write(key, key.login, slug)
    for (slug, version), events in by_agent.items():
        ref = AgentRef(key.login, slug)
        spans_of = task_ids[(slug, version)]
        share_sessions(events)
        content = parked.waiting(ports.store, ref, spans_of)
        events += [event for waiting in content.values() for event in waiting]
        try:
            outcome = accept(ports, key.login, AgentMeta(slug=slug, version=version), events,
                             later=later)
        except TooManyAgents as exc:  # this agent's spans are refused, the others' stored
            result.spans -= len(spans_of)
            result.reject(f"agent {slug}: {exc.message}", len(spans_of))
            continue
        result.outcomes.append((ref, outcome))
        parked.release(ports.store, ref, list(content))
        if verdicts.get(slug):
            result.evaluations[slug] = verdicts.pop(slug)
    return result


def check_count(count: int, limits: Limits, what: str, loc: str) -> None:
    """413 for a request of more spans or log records than a batch may hold events, before
    any is stored: one request's work stays bounded, as `/ingest`'s does."""
    most = limits.max_events_per_batch
    if count > most:
        raise PayloadTooLarge(f"too many {what}: {count} > {most} per request",
                              [{"loc": [loc], "msg": f"at most {most} {what}"}])


def _header_slug(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    if not _SLUG.match(value.strip()):
        raise BadRequest(f"X-Bench-Agent {value!r} is not an agent slug: letters, digits, '_', "
                         "'.', '-', at most 64, starting with a letter or digit")
    return value.strip().lower()


def slugify(name: Any) -> str | None:
    """An agent name from telemetry (`My Agent`) as a slug (`my-agent`); None if nothing is left."""
    if not isinstance(name, str):
        return None
    slug = _NOT_SLUG.sub("-", name.strip().lower()).lstrip("-_.")[:64]
    return slug or None


class _Telemetry(Protocol):
    """A span or a log record: what names its agent."""

    @property
    def attributes(self) -> dict[str, Any]: ...
    @property
    def resource(self) -> dict[str, Any]: ...


class _ResourceAgents:
    """The agent of each resource of one request, decided once per resource."""

    def __init__(self, spans: Sequence[_Telemetry]) -> None:
        self._by_resource: dict[int, str | None] = {}
        self._span_names: dict[int, str] = {}
        for span in spans:
            name = span.attributes.get("gen_ai.agent.name")
            if isinstance(name, str) and name.strip():
                self._span_names.setdefault(id(span.resource), name)

    def slug(self, span: _Telemetry) -> str | None:
        key = id(span.resource)
        if key not in self._by_resource:
            service = span.resource.get("service.name")
            if isinstance(service, str) and service.startswith("unknown_service"):
                service = None
            self._by_resource[key] = (slugify(service) or slugify(
                span.resource.get("gen_ai.agent.name")) or slugify(self._span_names.get(key)))
        return self._by_resource[key]
