"""`POST /v1/logs`: GenAI content log events → the input and output of their spans' tasks;
evaluation events → verdicts on their spans' runs (`evaluations`).

Keys and agents are those of `export_traces` (`X-Bench-Agent`, else the resource's
`service.name` or `gen_ai.agent.name`). A span Bench has stored gets its content at once, through
the one ingest pipeline; content for a span not seen yet is parked (`parked`) and joins the
span when the trace export brings it. Parking first and then looking for the span again closes
the race with a trace export that looked for parked content in between.

A finished run whose content arrives late is queued for its eval again: one judged before
had no content and was left unscored for that (`evals.workflow`), not scored. So is the run of
a finished span whose content arrives late, if that run was left unscored for want of content:
the judge reads a run's conversation from its model calls when its root holds none.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ...domain.errors import BadRequest
from ...domain.feedback import SpanVerdict
from ...domain.keys import may_write
from ...domain.models import NO_CONTENT, AgentMeta, AgentRef, IngestOutcome, KeyRecord, TaskState
from ..pipeline import Later, accept, queue_evals
from . import NO_AGENT, _header_slug, _ResourceAgents, check_count
from .content import SpanContent, group_content
from .decode import DecodeError
from .evaluations import evaluation_verdicts
from .log_decode import decode_logs
from .parked import OtlpPorts, park, release


@dataclass
class LogsResult:
    records: int = 0
    rejected: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    attached: int = 0
    """Spans whose task got content now."""
    parked: int = 0
    """Spans whose content waits for the span."""
    evaluations: dict[str, list[SpanVerdict]] = field(default_factory=dict)
    """Verdicts on spans (`evaluations`), by agent slug, for the caller to keep as feedback."""
    feedback: int = 0
    """Verdicts kept as feedback (counted by whoever keeps them)."""
    outcomes: list[tuple[AgentRef, IngestOutcome]] = field(default_factory=list)

    @property
    def error_message(self) -> str:
        return "; ".join(f"{n} log record(s): {reason}" for reason, n in self.reasons.items())

    def reject(self, reason: str, count: int = 1) -> None:
        self.rejected += count
        self.reasons[reason] = self.reasons.get(reason, 0) + count


def export_logs(ports: OtlpPorts, key: KeyRecord, body: bytes, encoding: str,
                agent_header: str | None, *, later: Later) -> LogsResult:
    """Attach or park the content of one logs export request written with `key`; nothing is
    stored when an agent it names may not be written with the key (403), the body is not a
    request (400) or holds more records than a batch may events (413). Evaluation events'
    verdicts are handed back in `evaluations` (feedback is another use case's: `evals.feedback`
    `record_span_verdicts`). Other log records are accepted and dropped."""
    try:
        records = decode_logs(body, encoding)
    except DecodeError as exc:
        raise BadRequest(str(exc)) from exc
    check_count(len(records), ports.settings.limits, "log records", "resourceLogs")
    header_slug = _header_slug(agent_header)
    names = _ResourceAgents(records)
    result = LogsResult(records=len(records))
    by_agent: dict[str, list[Any]] = defaultdict(list)
    for record in records:
        by_agent[header_slug or names.slug(record) or ""].append(record)
    contents: dict[str, list[SpanContent]] = {}
    for slug, agent_records in by_agent.items():
        spans, refused = group_content(agent_records)
        verdicts, unjudged = evaluation_verdicts(agent_records)
        for reason, count in (*refused.items(), *unjudged.items()):
            result.reject(reason, count)
        if (spans or verdicts) and not slug:
            result.reject(NO_AGENT, sum(len(s.records) for s in spans) + len(verdicts))
            continue
        if spans:
            contents[slug] = spans
        if verdicts:
            result.evaluations[slug] = verdicts
    for slug in {*contents, *result.evaluations}:
        may_write(key, key.login, slug)
    for slug, spans in contents.items():
        _attach(ports, AgentRef(key.login, slug), spans, result, later)
    return result


def _attach(ports: OtlpPorts, ref: AgentRef, spans: list[SpanContent], result: LogsResult,
            later: Later) -> None:
    store, limits = ports.store, ports.settings.limits
    now_events, late_runs = [], []
    waiting: set[str] = set()
    for span in spans:
        event = span.event(limits.max_field_bytes, store.clock.now())
        if event is None:
            continue
        task = store.ingest.get_task(ref, span.task_id)
        if task is None or not (task.started_at or task.ended_at):
            problem = park(store, ref, span.task_id, event)
            if problem is not None:
                result.reject(problem, len(span.records))
                continue
            task = store.ingest.get_task(ref, span.task_id)
            if task is None or not (task.started_at or task.ended_at):
                result.parked += 1
                continue
            release(store, ref, [span.task_id])
        now_events.append(event)
        result.attached += 1
        if task.finished:
            late_runs.append((span.task_id, task.parent_task_id is None))
            if task.parent_task_id is not None and task.run_id:
                waiting.add(task.run_id)
    late_runs += [(run_id, True) for run_id in sorted(waiting) if _left_without_content(
        store.ingest.get_task(ref, run_id))]
    if now_events:
        outcome = accept(ports, ref.login, AgentMeta(slug=ref.slug), now_events, later=later)
        result.outcomes.append((ref, outcome))
        queue_evals(ports, ref, IngestOutcome(accepted=0, duplicates=0, finished=late_runs))


def _left_without_content(run: TaskState | None) -> bool:
    """Whether a run finished and was left unscored for want of content."""
    return (run is not None and run.finished and run.parent_task_id is None
            and run.eval is not None and run.eval.reason == NO_CONTENT)
