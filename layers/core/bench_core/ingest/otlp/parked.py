"""Content that arrived before its span: parked until the span comes, bounded and expiring.

An exporter sends logs and spans on their own schedules, so a GenAI content event often
reaches Bench before the span it belongs to. Attaching it at once would make a task out of
nothing; it waits instead as a short-lived record of the store (`put_grant`, kind `PARKED`,
one per span), and the trace export that brings the span claims it (`claim`).

Bounds: a record expires after `PARK_FOR` (the store deletes it: SQLite on writes, DynamoDB by
TTL); an agent parks at most `MAX_PARKED_PER_HOUR` spans' content an hour and a span at most
`MAX_EVENTS_PER_SPAN` events; past that, records are refused in `partialSuccess`. An agent that
never parked anything costs a trace export one read (`MARKER`), not one per span.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

from ...domain.models import AgentRef, CleanEvent, iso
from ...ports.services import WithAccounts, WithClock
from ..pipeline import IngestConcerns, IngestPorts


class OtlpConcerns(IngestConcerns, WithAccounts, WithClock, Protocol):
    """Ingest's, and the short-lived records content waits in until its span arrives."""


class OtlpPorts(IngestPorts, Protocol):
    """What an OTLP export uses: ingest's ports, its store also parking content."""

    @property
    def store(self) -> OtlpConcerns: ...


PARKED = "otlp-parked"
MARKER = "otlp-parked-agent"
PARK_FOR = timedelta(hours=6)
MAX_PARKED_PER_HOUR = 10_000
MAX_EVENTS_PER_SPAN = 8
FULL = "too many content events wait for spans Bench has not seen (limit per agent and hour)"


def _grant_id(ref: AgentRef, task_id: str) -> str:
    return f"{ref.path}/{task_id}"


def park(store: OtlpConcerns, ref: AgentRef, task_id: str, event: CleanEvent) -> str | None:
    """Keep `event` until the span of `task_id` arrives; why it could not be kept, or None."""
    now = store.clock.now()
    until = iso(now + PARK_FOR)
    hour = iso(now)[:13]
    if store.accounts.count_hit(f"{PARKED}:{ref.path}:{hour}", iso(now + timedelta(hours=2))) > (
            MAX_PARKED_PER_HOUR):
        return FULL
    _mark(store, ref, now)
    grant_id = _grant_id(ref, task_id)
    for _ in range(3):
        body = store.accounts.get_grant(PARKED, grant_id, iso(now))
        if body is None:
            if store.accounts.put_grant(PARKED, grant_id, {"n": 1, "events": [event.body]}, until,
                                        iso(now)):
                return None
            continue
        if any(e["id"] == event.id for e in body["events"]):
            return None
        if body["n"] >= MAX_EVENTS_PER_SPAN:
            return FULL
        if store.accounts.update_grant(PARKED, grant_id, {"n": body["n"]},
                                       {"n": body["n"] + 1, "events": [*body["events"], event.body]},
                                       iso(now)):
            return None
    return "content events for this span arrived too fast to park; send them again"


def waiting(store: OtlpConcerns, ref: AgentRef, task_ids: list[str]) -> dict[str, list[CleanEvent]]:
    """The parked events of these spans, by task id; they stay parked until `release`d, so a
    crash before they are stored loses nothing."""
    now = iso(store.clock.now())
    if not task_ids or store.accounts.get_grant(MARKER, ref.path, now) is None:
        return {}
    found = {}
    for task_id in task_ids:
        body = store.accounts.get_grant(PARKED, _grant_id(ref, task_id), now)
        if body is not None:
            found[task_id] = [CleanEvent(id=e["id"], kind=e["kind"], ts=e["ts"],
                                         task_id=e["task_id"], body=e) for e in body["events"]]
    return found


def release(store: WithAccounts, ref: AgentRef, task_ids: list[str]) -> None:
    """Forget what was parked for these spans, once it is stored with them (ingest is
    idempotent, so a second claimant storing it again changes nothing)."""
    for task_id in task_ids:
        store.accounts.delete_grant(PARKED, _grant_id(ref, task_id))


def _mark(store: WithAccounts, ref: AgentRef, now: datetime) -> None:
    """Say that `ref` has parked content, for longer than anything parked now lives. A marker
    past half its life is replaced; a claim that misses it meanwhile is made good by the
    parker, which looks for the span after parking (`logs.export_logs`)."""
    marker = store.accounts.get_grant(MARKER, ref.path, iso(now))
    if marker is not None and marker["until"] > iso(now + PARK_FOR):
        return
    if marker is not None:
        store.accounts.delete_grant(MARKER, ref.path)
    until = iso(now + 2 * PARK_FOR)
    store.accounts.put_grant(MARKER, ref.path, {"until": until}, until, iso(now))
