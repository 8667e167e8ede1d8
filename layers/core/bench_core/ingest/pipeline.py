"""The one way events come in: clean → store → queue evals → publish to the live feed.

Every source ends in `accept`: `POST /ingest` and the /try demo (`accept_batch`, the wire
format), `POST /v1/traces` and `/v1/logs` (`ingest.otlp`, spans and their content mapped to
events) and calls through Bench (`reuse.invoke`, the call recorded as a task). A source decodes
its input and decides who may write it; what happens to the events after that is the same for
all of them, the field limits first (`domain.field_limits`).

Ingest never waits on the judge or on watchers: evals are only queued (`Workflows`), and the
batch is handed to the live feed through `later` (FastAPI's background tasks). On one machine
that runs the push after the answer is sent; on Lambda, Mangum runs background tasks before it
returns the answer, so there the feed only looks whether anyone watches and hands the push to a
function of its own (`reads/live_feed.py`, `live/lambda_push.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ..domain.judge_budget import skipped
from ..domain.keys import may_write
from ..domain.models import (
    AgentMeta,
    AgentRef,
    CleanEvent,
    EvalResult,
    IngestBatch,
    IngestOutcome,
    IngestWrite,
    KeyRecord,
    WireEvent,
    iso,
)
from ..domain.pricing import models_seen
from ..log import logger
from ..ports.services import WithAgents, WithClock, WithEvals, WithIngest, WithLive, WithSettings, WithWorkflows
from .wire import bounded, clean_event, parse_batch

Later = Callable[..., Any]
"""Runs `fn(*args)` once the answer is sent, as `BackgroundTasks.add_task` does."""


class IngestConcerns(WithIngest, WithAgents, WithEvals, Protocol):
    """The events' store, and the agent and judge spend that decide which runs are judged."""


class IngestPorts(WithSettings, WithWorkflows, WithLive, WithClock, Protocol):
    """What accepting events uses: the store, the limits, where evals start, the live feed."""

    @property
    def store(self) -> IngestConcerns: ...


@dataclass(frozen=True)
class Staged:
    """A batch cleaned and ready to store (`write`), and what the live feed is sent once it is:
    what the source sent (wire events, or the bodies of the events it built)."""

    write: IngestWrite
    feed: list[Any]


def stage(ports: IngestPorts, login: str, meta: AgentMeta,
          events: Sequence[WireEvent] | Sequence[CleanEvent], dropped: int = 0) -> Staged:
    """Every event brought within the field limits: wire events as they are cleaned, events a
    source built as they come (one carrying its JSON was made by `bounded` already)."""
    limits = ports.settings.limits
    stored = [clean_event(e, limits) if isinstance(e, WireEvent)
              else e if e.body_json is not None else bounded(e.body, limits) for e in events]
    if meta.model is None:  # the models its evidence names, where the source declares none
        meta = replace(meta, model=models_seen(stored))
    return Staged(IngestWrite(login, meta, stored, dropped),
                  [e.body if isinstance(e, CleanEvent) else e for e in events])


def settle(ports: IngestPorts, staged: Staged, outcome: IngestOutcome, *,
           later: Later) -> IngestOutcome:
    """After the batch is stored: queue evals of the runs it finished and, if any event was
    new, push it to open dashboards via `later`."""
    ref = AgentRef(staged.write.login, staged.write.meta.slug)
    queue_evals(ports, ref, outcome)
    if outcome.accepted:
        later(ports.live.publish, ref, staged.feed)
    return outcome


def accept(ports: IngestPorts, login: str, meta: AgentMeta,
           events: Sequence[WireEvent] | Sequence[CleanEvent], *, later: Later,
           dropped: int = 0) -> IngestOutcome:
    """Store `events` for the agent `login`/`meta.slug` in one atomic write (`stage`, the
    store, `settle`)."""
    staged = stage(ports, login, meta, events, dropped)
    return settle(ports, staged, stored(ports, staged.write), later=later)


def stored(ports: IngestPorts, write: IngestWrite) -> IngestOutcome:
    """`write` stored on its own: one transaction of its own."""
    return ports.store.ingest.ingest(write.login, write.meta, write.events, write.dropped)


def stage_batch(ports: IngestPorts, key: KeyRecord, body: bytes) -> tuple[IngestBatch, Staged]:
    """A wire-format batch (`POST /ingest`, the /try demo) written with `key`: validated,
    authorized and cleaned before anything is stored, so a rejected batch stores nothing."""
    batch = parse_batch(body, ports.settings.limits)
    may_write(key, key.login, batch.agent_slug)
    meta = AgentMeta(slug=batch.agent_slug, display_name=batch.display_name, model=batch.model,
                     framework=batch.framework, architecture=batch.architecture,
                     tools=batch.tools, version=batch.version)
    return batch, stage(ports, key.login, meta, batch.events, batch.dropped or 0)


def accept_batch(ports: IngestPorts, key: KeyRecord, body: bytes, *,
                 later: Later) -> tuple[IngestBatch, IngestOutcome]:
    """`stage_batch`, stored and settled."""
    batch, staged = stage_batch(ports, key, body)
    return batch, settle(ports, staged, stored(ports, staged.write), later=later)


def queue_evals(ports: IngestPorts, ref: AgentRef, outcome: IngestOutcome) -> None:
    """Start one eval workflow for the tasks a batch finished (runs; subtasks too if
    configured), after recording `skipped` the ones the judge budget leaves out: they cost no
    workflow. Called after the batch is stored; a failure here is logged, never the batch's
    failure (the sweep finds runs left without a result)."""
    task_ids = [task_id for task_id, is_run in outcome.finished
                if is_run or ports.settings.judge.subtasks]
    if not task_ids:
        return
    try:
        agent = outcome.agent or ports.store.agents.get_agent(ref)
        if agent is None:
            return
        now = iso(ports.clock.now())
        spent = ports.store.evals.judge_spend(ref, now[:10])
        budget = ports.settings.judge
        left_out: dict[str, EvalResult] = {
            task_id: result for task_id in task_ids
            if (result := skipped(agent, task_id, spent, now, sample_rate=budget.sample_rate,
                                  daily_budget_usd=budget.daily_budget_usd))}
        if left_out:
            ports.store.evals.record_evals(ref, left_out)
        judged = [task_id for task_id in task_ids if task_id not in left_out]
        if judged:
            ports.workflows.start_evals(ref, judged,
                                        private=agent.hide_inputs or agent.hide_outputs)
    except Exception:
        logger.exception("could not start evals; the sweep will find them", extra={"agent": ref.path})
