"""Fold events into tasks, and finished root tasks into run deltas. Pure: no I/O, no clock.

Both stores call this, so SQLite and DynamoDB cannot disagree about what a batch means:
- `task.start` opens a task; `task.end` closes it (the first end wins, a replay changes nothing);
  an end whose start never came still makes a complete task.
- Cost is never counted twice: the original client sends every `t.cost()` both as a `cost` log
  and inside the `task.end` total, and a parent's total already includes its subtasks'. So a
  task's cost is its `task.end` `cost_usd` when present, else its cost logs plus its children's.
- Only a finished root task is a run; subtasks hand their cost to their parent.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime

from .models import CleanEvent, RunDelta, TaskState


@dataclass
class BatchFold:
    tasks: dict[str, TaskState] = field(default_factory=dict)
    runs: list[tuple[str, RunDelta]] = field(default_factory=list)
    finished: list[tuple[str, bool]] = field(default_factory=list)
    child_costs: dict[str, float] = field(default_factory=dict)
    """Cost owed to parents that are not in this batch, by parent task id."""


def group_by_task(events: Iterable[CleanEvent]) -> dict[str, list[CleanEvent]]:
    """Task events by task id, ordered so that a task whose last event comes first folds first:
    a subtask's end precedes its parent's, so the parent sees the child's cost."""
    groups: dict[str, list[CleanEvent]] = {}
    last: dict[str, int] = {}
    for i, event in enumerate(events):
        if event.task_id is None or not event.kind.startswith("task."):
            continue
        groups.setdefault(event.task_id, []).append(event)
        last[event.task_id] = i
    return {tid: groups[tid] for tid in sorted(groups, key=last.__getitem__)}


def fold_task(state: TaskState | None, task_id: str, events: list[CleanEvent]) -> TaskState:
    """The task after `events` (all of this task, in order); `state` is not modified."""
    s = replace(state) if state is not None else TaskState(task_id=task_id)
    for e in events:
        body = e.body
        s.name = s.name or body.get("name")
        if body.get("parent_task_id") and not s.parent_task_id:
            s.parent_task_id = body["parent_task_id"]
        if e.kind == "task.start":
            if body.get("name"):
                s.name = body["name"]
            s.input = body.get("input")
            s.started_at = min(s.started_at or e.ts, e.ts)
        elif e.kind == "task.log":
            s.cost_logged_usd += logged_cost(body.get("data"))
        elif e.kind == "task.end" and not s.finished:
            s.status = body["status"]
            s.output = body.get("output")
            s.metadata = body.get("data")
            s.duration_ms = body.get("duration_ms")
            s.reported_cost_usd = body.get("cost_usd")
            s.cost_breakdown = body.get("cost_breakdown")
            s.ended_at = e.ts
    return s


def close_task(s: TaskState) -> None:
    """Settle what is known only once a task has ended: its cost and its duration."""
    s.cost_usd = (s.reported_cost_usd if s.reported_cost_usd is not None
                  else s.cost_logged_usd + s.child_cost_usd)
    if s.duration_ms is None and s.started_at and s.ended_at:
        s.duration_ms = max(0.0, (_parse(s.ended_at) - _parse(s.started_at)).total_seconds() * 1000)


def fold_batch(states: dict[str, TaskState], events: list[CleanEvent]) -> BatchFold:
    """Fold every task of a batch. `states` holds the stored state of the tasks (and parents)
    known so far; children hand their cost to parents in memory when both are here."""
    out = BatchFold()
    for task_id, task_events in group_by_task(events).items():
        before = states.get(task_id) or out.tasks.get(task_id)
        if task_id in out.child_costs and before is not None:
            before = replace(before, child_cost_usd=before.child_cost_usd
                             + out.child_costs.pop(task_id))
        elif task_id in out.child_costs:
            before = TaskState(task_id=task_id, child_cost_usd=out.child_costs.pop(task_id))
        after = fold_task(before, task_id, task_events)
        if after.finished and (before is None or not before.finished):
            close_task(after)
            is_root = after.parent_task_id is None
            out.finished.append((task_id, is_root))
            if is_root:
                out.runs.append((task_id, run_delta(after)))
            elif after.cost_usd:
                parent = after.parent_task_id or ""
                out.child_costs[parent] = out.child_costs.get(parent, 0.0) + after.cost_usd
        out.tasks[task_id] = after
    for parent in [p for p in out.child_costs if p in out.tasks]:
        out.tasks[parent].child_cost_usd += out.child_costs.pop(parent)
    return out


def run_delta(task: TaskState) -> RunDelta:
    return RunDelta(day=(task.ended_at or "")[:10], success=task.status == "success",
                    duration_ms=task.duration_ms, cost_usd=task.cost_usd or 0.0)


def logged_cost(data: object) -> float:
    """The amount of a `cost` log (`{"label": "cost", "cost_usd": x}`), else 0."""
    if not isinstance(data, dict) or data.get("label") != "cost":
        return 0.0
    amount = data.get("cost_usd")
    if isinstance(amount, bool) or not isinstance(amount, (int, float)):
        return 0.0
    return float(amount) if math.isfinite(amount) and amount >= 0 else 0.0


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))
