"""The read API's events and tasks of one agent, through the privacy gate (`/api/agents/...`)."""

from __future__ import annotations

from typing import Any, Protocol

from ..domain.errors import BadRequest, NotFound
from ..domain.models import AgentRef
from ..domain.privacy import Viewer, event_view, task_view
from ..ports.services import WithAgents, WithIngest
from .agents import visible

TASK_STATUSES = ("running", "success", "failed")


class TaskReads(WithAgents, WithIngest, Protocol):
    """An agent's tasks and events, as its privacy lets a viewer see them."""


def recent_events(store: TaskReads, ref: AgentRef, viewer: Viewer, limit: int) -> dict[str, Any]:
    agent = visible(store, ref, viewer)
    return {"events": [event_view(e, agent, viewer) for e in store.ingest.recent_events(agent.ref, limit)]}


def tasks_page(store: TaskReads, ref: AgentRef, viewer: Viewer, *, parent: str | None,
               status: str | None, limit: int, cursor: str | None) -> dict[str, Any]:
    """One page of tasks, newest first, each with its subtasks' ids; 400 for an unknown status
    or a cursor this listing did not hand out."""
    if status is not None and status not in TASK_STATUSES:
        raise BadRequest(f"unknown status {status!r}: use one of {', '.join(TASK_STATUSES)}",
                         [{"loc": ["query", "status"], "msg": "unknown status"}])
    agent = visible(store, ref, viewer)
    try:
        tasks, next_cursor = store.ingest.list_tasks(agent.ref, parent=parent, status=status,
                                                     limit=limit, cursor=cursor)
    except ValueError as exc:
        raise BadRequest(str(exc), [{"loc": ["query", "cursor"], "msg": str(exc)}]) from exc
    children = store.ingest.subtask_ids(agent.ref, [t.task_id for t in tasks])
    return {"tasks": [{**task_view(t, agent, viewer), "subtask_ids": children[t.task_id]}
                      for t in tasks],
            "next_cursor": next_cursor}


def task_detail(store: TaskReads, ref: AgentRef, viewer: Viewer, task_id: str) -> dict[str, Any]:
    """One task with its subtasks' ids and its events."""
    agent = visible(store, ref, viewer)
    task = store.ingest.get_task(agent.ref, task_id)
    if task is None:
        raise NotFound("task not found")
    children = store.ingest.subtask_ids(agent.ref, [task_id])[task_id]
    events = store.ingest.task_events(agent.ref, task_id)
    return {**task_view(task, agent, viewer, events), "subtask_ids": children,
            "events": [event_view(e, agent, viewer) for e in events]}
