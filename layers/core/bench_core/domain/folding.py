"""Fold events into tasks, and finished root tasks into run deltas. Pure: no I/O, no clock.

Both stores call this, so SQLite and DynamoDB cannot disagree about what a batch means:
- `task.start` opens a task; `task.end` closes it (the first end wins, a replay changes nothing);
  an end whose start never came still makes a complete task.
- Cost is never counted twice: the original client sends every `t.cost()` both as a `cost` log
  and inside the `task.end` total, and a parent's total already includes its subtasks'. So a
  task's cost is its `task.end` `cost_usd` when present, else its cost logs plus its children's.
- Only a finished root task is a run; subtasks hand their cost to their parent. The agent
  keeps its newest run and newest failure (`newest_runs`), newest wins (`RunRef.replaces`).
- Every task records its run (`runs.assign_runs`) and keeps its log entries (`runs.append_log`).
- Evidence (`task.log` records labelled `evidence`, priced by `pricing`) is never owner cost: a
  task sums its own records and, like cost, its finished subtasks'; the agent's evidence totals
  add each record once as it arrives (`BatchFold.evidence`), whatever its task's state.
- Content may come apart from the task (`task.content`, from OTLP log events, in any order with
  the span's start and end): it fills an input or output the task has not got, and adds
  messages a list lacks; a start or end without input or output leaves what content gave.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from .field_limits import session_from_label
from .models import CleanEvent, RunDelta, RunRef, TaskState, Usage, add_usage
from .pricing import (
    TOKEN_FIELDS,
    cost_amount,
    evidence_name,
    is_cost_log,
    is_evidence,
    token_count,
)
from .runs import Reassign, append_log, assign_runs
from .sessions import USER_FIELDS

SESSION_KEYS = ("session_id", "sessionId")


@dataclass
class BatchFold:
    tasks: dict[str, TaskState] = field(default_factory=dict)
    runs: list[tuple[str, RunDelta]] = field(default_factory=list)
    finished: list[tuple[str, bool]] = field(default_factory=list)
    child_costs: dict[str, float] = field(default_factory=dict)
    """Cost owed to parents that are not in this batch, by parent task id."""
    child_evidence: dict[str, Usage] = field(default_factory=dict)
    """Evidence owed to parents that are not in this batch, by parent task id."""
    evidence: Usage | None = None
    """The batch's evidence records summed, for the agent's counters."""
    reassign: list[Reassign] = field(default_factory=list)
    """Runs of tasks stored earlier that this batch shows to be part of another run."""
    unknown_parents: set[str] = field(default_factory=set)
    """Parents not stored yet that tasks of this batch now record as their run."""
    child_sessions: dict[str, Owed] = field(default_factory=dict)
    """The session and user finished subtasks name, owed to parents not in this batch that
    name none (`owe_session`)."""


Owed = tuple[str | None, str | None]
"""A session id and a user id a subtask hands up."""


def owe_session(task: TaskState, owed: Owed | None) -> TaskState:
    """`task` with the session and user a finished subtask named, where it names none: an
    instrumentation may name the conversation on a model call alone (`gen_ai.conversation.id`),
    and as each span ends before its parent, the names climb to the run's root, whose they
    are (`domain.sessions`)."""
    if owed is None or (task.session_id is not None and task.user_id is not None):
        return task
    return replace(task, session_id=task.session_id or owed[0], user_id=task.user_id or owed[1])


def owing_parents(fold: BatchFold) -> set[str]:
    """The parents not in the batch that its finished subtasks owe cost, evidence or a session."""
    return fold.child_costs.keys() | fold.child_evidence.keys() | fold.child_sessions.keys()


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


def recorded_at(events: list[CleanEvent]) -> dict[str, str]:
    """When each task of a batch is recorded, as text that sorts in the order tasks were
    recorded: the batch's earliest and latest times (a sender sends oldest first, so a later
    batch starts and ends no earlier), then where the task's first event stands in it. Times
    are kept to the millisecond, so this is what orders siblings that start in the same one;
    two batches whose events all fall in one millisecond tie on their times."""
    if not events:
        return {}
    batch = f"{min(e.ts for e in events)}#{max(e.ts for e in events)}"
    places: dict[str, str] = {}
    for i, event in enumerate(events):
        if event.task_id is not None and event.task_id not in places:
            places[event.task_id] = f"{batch}#{str(i).zfill(6)}"
    return places


def fold_task(state: TaskState | None, task_id: str, events: list[CleanEvent]) -> TaskState:
    """The task after `events` (all of this task, in order); `state` is not modified."""
    s = replace(state, logs=list(state.logs)) if state is not None else TaskState(task_id=task_id)
    for e in events:
        body = e.body
        s.name = s.name or body.get("name")
        if body.get("parent_task_id") and not s.parent_task_id:
            s.parent_task_id = body["parent_task_id"]
        s.session_id = s.session_id or body.get("session_id")
        s.user_id = s.user_id or body.get("user_id")
        if e.kind == "task.start":
            if body.get("name"):
                s.name = body["name"]
            if body.get("input") is not None:
                s.input = body["input"]
            s.started_at = min(s.started_at or e.ts, e.ts)
        elif e.kind == "task.log":
            append_log(s.logs, e.ts, body.get("data"))
            s.cost_logged_usd += logged_cost(body.get("data"))
            s.evidence = add_usage(s.evidence, evidence_of(body.get("data")))
            if s.model is None and is_evidence(body.get("data")):
                s.model = evidence_name(body["data"].get("model"))
        elif e.kind == "task.content":
            s.input = merge_content(s.input, body.get("input"))
            s.output = merge_content(s.output, body.get("output"))
        elif e.kind == "task.end" and not s.finished:
            s.status = body["status"]
            if body.get("output") is not None:
                s.output = body["output"]
            s.metadata = body.get("data")
            session_from_metadata(s)
            s.duration_ms = body.get("duration_ms")
            s.reported_cost_usd = body.get("cost_usd")
            s.cost_breakdown = body.get("cost_breakdown")
            s.ended_at = e.ts
    return s


def merge_content(current: Any, new: Any) -> Any:
    """`current` with what `new` adds: all of it where there was nothing, the messages a list
    lacks (the same message sent on the span and as an event counts once), else nothing."""
    if current is None:
        return new
    if isinstance(current, list) and isinstance(new, list):
        return current + [message for message in new if message not in current]
    return current


def close_task(s: TaskState) -> None:
    """Settle what is known only once a task has ended: its cost and its duration."""
    s.cost_usd = (s.reported_cost_usd if s.reported_cost_usd is not None
                  else s.cost_logged_usd + s.child_cost_usd)
    if s.duration_ms is None and s.started_at and s.ended_at:
        s.duration_ms = max(0.0, (_parse(s.ended_at) - _parse(s.started_at)).total_seconds() * 1000)


def fold_batch(states: dict[str, TaskState], events: list[CleanEvent],
               version: str | None = None) -> BatchFold:
    """Fold every task of a batch. `states` holds the stored state of the tasks (and parents)
    known so far; children hand their cost to parents in memory when both are here. A root
    task the batch records without a version takes the batch's `version` (`domain.versions`)."""
    out = BatchFold(evidence=batch_evidence(events))
    recorded = recorded_at(events)
    for task_id, task_events in group_by_task(events).items():
        before = states.get(task_id) or out.tasks.get(task_id)
        owed_cost = out.child_costs.pop(task_id, 0.0)
        owed_evidence = out.child_evidence.pop(task_id, None)
        owed_session = out.child_sessions.pop(task_id, None)
        if owed_cost or owed_evidence is not None or owed_session is not None:
            base = before or TaskState(task_id=task_id)
            before = owe_session(replace(base, child_cost_usd=base.child_cost_usd + owed_cost,
                                         evidence=add_usage(base.evidence, owed_evidence)),
                                 owed_session)
        after = fold_task(before, task_id, task_events)
        after.recorded = after.recorded or recorded.get(task_id)
        if after.parent_task_id is None and after.agent_version is None:
            after.agent_version = version
        if after.finished and (before is None or not before.finished):
            close_task(after)
            is_root = after.parent_task_id is None
            out.finished.append((task_id, is_root))
            if is_root:
                out.runs.append((task_id, run_delta(after)))
            else:
                _hand_to_parent(out, after)
        out.tasks[task_id] = after
    for parent in [p for p in out.child_costs if p in out.tasks]:
        out.tasks[parent].child_cost_usd += out.child_costs.pop(parent)
    for parent in [p for p in out.child_evidence if p in out.tasks]:
        task = out.tasks[parent]
        task.evidence = add_usage(task.evidence, out.child_evidence.pop(parent))
    for parent in [p for p in out.child_sessions if p in out.tasks]:
        out.tasks[parent] = owe_session(out.tasks[parent], out.child_sessions.pop(parent))
    out.reassign, out.unknown_parents = assign_runs(out.tasks, states)
    return out


def _hand_to_parent(out: BatchFold, child: TaskState) -> None:
    """A finished subtask's cost and evidence, owed to its parent."""
    parent = child.parent_task_id or ""
    if child.cost_usd:
        out.child_costs[parent] = out.child_costs.get(parent, 0.0) + child.cost_usd
    if child.evidence is not None:
        owed = out.child_evidence.get(parent)
        out.child_evidence[parent] = child.evidence if owed is None else owed + child.evidence
    if child.session_id is not None or child.user_id is not None:
        out.child_sessions.setdefault(parent, (child.session_id, child.user_id))


def session_from_metadata(s: TaskState) -> None:
    """The session and user the original client's metadata names (`t.metadata({"session_id":
    ...})`, or `sessionId`/`userId` as JavaScript writes them), where the task has none yet."""
    if not isinstance(s.metadata, dict):
        return
    for name in SESSION_KEYS:
        s.session_id = s.session_id or session_from_label(s.metadata.get(name))
    for name in USER_FIELDS:
        s.user_id = s.user_id or session_from_label(s.metadata.get(name))


def run_delta(task: TaskState) -> RunDelta:
    usage = task.evidence
    evidence = usage.cost_usd if usage is not None else None
    tokens = (usage.input_tokens or 0) + (usage.output_tokens or 0) if usage is not None else 0
    return RunDelta(day=(task.ended_at or "")[:10], success=task.status == "success",
                    duration_ms=task.duration_ms, cost_usd=task.cost_usd or 0.0,
                    version=task.agent_version, evidence_cost_usd=evidence or 0.0,
                    ended_at=task.ended_at or "", session_id=task.session_id,
                    user_id=task.user_id, run_id=task.task_id, name=task.name,
                    started_at=task.started_at or task.ended_at or "",
                    recorded=task.recorded or "", tokens=tokens)


def newest_runs(fold: BatchFold) -> dict[str, RunRef]:
    """The newest run the batch finished and its newest failure, by the `AgentStats` field
    that keeps each (`models.LATEST_RUNS`); a store records one unless it holds a newer."""
    newest: dict[str, RunRef] = {}
    for task_id, _ in fold.runs:
        task = fold.tasks[task_id]
        run = RunRef(task_id, task.name, task.status, task.sort_ts)
        for name in ("latest_run", "latest_failure") if run.status == "failed" else ("latest_run",):
            if run.replaces(newest.get(name)):
                newest[name] = run
    return newest


def logged_cost(data: object) -> float:
    """The amount of a `cost` log (`{"label": "cost", "cost_usd": x}`), else 0."""
    return (cost_amount(data.get("cost_usd")) or 0.0) if is_cost_log(data) else 0.0


def evidence_of(data: object) -> Usage | None:
    """The usage one evidence record proves (`pricing.price_evidence` made it), else None."""
    if not is_evidence(data):
        return None
    cost = cost_amount(data.get("cost_usd"))
    return Usage(cost_usd=cost, calls=1, unpriced_calls=int(cost is None),
                 **{name: token_count(data.get(name)) for name in TOKEN_FIELDS})


def batch_evidence(events: Iterable[CleanEvent]) -> Usage | None:
    total = None
    for event in events:
        if event.kind == "task.log":
            total = add_usage(total, evidence_of(event.body.get("data")))
    return total


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))
