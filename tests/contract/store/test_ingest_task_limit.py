"""The Store contract for long tasks, on every adapter: a task holds up to `MAX_TASK_EVENTS`
events, whatever batches brought them; a batch that would take it past them is refused whole
(nothing of it stored, not even its other tasks' events), and one resent is still a duplicate."""

from __future__ import annotations

import pytest
from bench_core.domain.errors import PayloadTooLarge
from bench_core.domain.field_limits import MAX_TASK_EVENTS
from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.ports.store import Store

from tests.factories import clean, ev

REF = AgentRef("alice", "agent-1")
META = AgentMeta(slug="agent-1")


def test_a_task_holds_its_limit_of_events_and_a_batch_past_it_is_refused_whole(
        store: Store) -> None:
    first = clean([ev("task.start", "long", name="long")])
    logs = clean([ev("task.log", "long", data={"n": n}) for n in range(MAX_TASK_EVENTS - 2)])
    assert store.ingest.ingest(REF.login, META, first).accepted == 1
    assert store.ingest.ingest(REF.login, META, logs).accepted == MAX_TASK_EVENTS - 2
    last = clean([ev("task.end", "long", status="success")])
    over = [*clean([ev("task.start", "other"), ev("task.log", "long", data={"n": -1})]), *last]
    with pytest.raises(PayloadTooLarge):
        store.ingest.ingest(REF.login, META, over)
    assert store.ingest.get_task(REF, "other") is None
    assert store.ingest.get_task(REF, "long").status == "running"
    assert store.ingest.ingest(REF.login, META, first).duplicates == 1
    assert store.ingest.ingest(REF.login, META, last).accepted == 1
    assert store.ingest.get_task(REF, "long").status == "success"
    assert len(store.ingest.task_events(REF, "long")) == MAX_TASK_EVENTS
