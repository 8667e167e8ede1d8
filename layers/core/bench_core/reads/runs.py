"""Runs through the privacy gate: one run with all its spans (the run page and its JSON twin)
and the runs list. Every value a viewer may not see goes through `domain.privacy`, as on every
other surface; the tree itself (`domain.runs`) is built from what the store returns for the
run's id: one indexed read, whatever the run's size.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..domain.errors import BadRequest, NotFound
from ..domain.models import Agent, AgentRef, TaskState
from ..domain.privacy import (
    HIDDEN,
    Sight,
    Viewer,
    evidence_view,
    insights_view,
    task_view,
    visible_agent,
)
from ..domain.runs import RUN_STATUSES, Node, RunFilter, build_tree, find, rows, walk
from ..render import timeline
from ..store import Store, decode_cursor, encode_cursor
from .agents import agent_summary, visible

SPANS_PAGE = 1000
"""Spans per answer of the JSON twin; the rest follow by `next_cursor`."""
RUNS_PAGE = 50
MAX_ANCESTRY = 1000


@dataclass
class Run:
    """A run as read: its root, its tree, and the agent it belongs to."""

    agent: Agent
    root: TaskState
    tree: Node
    cluster: dict[str, Any] | None

    @cached_property
    def spans(self) -> list[Node]:
        """Every node of the tree in drawing order (`walk`), root first."""
        return list(walk(self.tree))


def find_run(store: Store, agent: Agent, task: TaskState | None) -> tuple[TaskState, str]:
    """The task asked for (as read: None for an unknown one, which is NotFound) and the id of
    the run it belongs to."""
    if task is None:
        raise NotFound("run not found")
    if task.parent_task_id is None:
        return task, task.task_id
    if task.run_id and task.run_id != task.task_id:
        root = store.get_task(agent.ref, task.run_id)
        if root is not None and root.parent_task_id is None:
            return task, root.task_id
    current = task  # stored before runs existed (DynamoDB marks runs as they are read)
    for _ in range(MAX_ANCESTRY):
        parent = store.get_task(agent.ref, current.parent_task_id or "")
        if parent is None:
            return task, current.task_id
        if parent.parent_task_id is None:
            return task, parent.task_id
        current = parent
    return task, current.task_id


def load_run(store: Store, agent: Agent, viewer: Viewer, run_id: str,
             insights: dict[str, Any] | None, *, content: bool = True,
             root: TaskState | None = None) -> Run:
    """The run and its tree; without `content` its spans may lack inputs, outputs, metadata
    and logs (the page draws the tree from names, times and statuses alone). `insights`: the
    agent's (`RunHead`); `root`: the run's root if the caller read it already."""
    root = root or store.get_task(agent.ref, run_id)
    if root is None:
        raise NotFound("run not found")
    tasks = store.run_tasks(agent.ref, run_id, content=content, root=root)
    return Run(agent, root, build_tree(root, tasks), cluster_of(insights, agent, viewer, run_id))


def cluster_of(insights: dict[str, Any] | None, agent: Agent, viewer: Viewer,
               run_id: str) -> dict[str, Any] | None:
    """The failure cluster of the agent's `insights` that names this run among its examples,
    as the viewer may see it."""
    for cluster in insights_view(insights, agent, viewer)["clusters"] if insights else []:
        if run_id in cluster.get("example_task_ids", []):
            return {"label": cluster["label"], "count": cluster["count"],
                    "share": cluster["share"]}
    return None


def span_view(node: Node, sight: Sight, task: TaskState | None = None) -> dict[str, Any]:
    """One span of the JSON twin (and of the page's detail panel) as `sight` lets its viewer
    see it, with `task` standing in for the node's own when that was read without content."""
    task = task or node.task
    evidence, logs = sight.span_logs(task)
    return {"task_id": task.task_id, "parent_id": task.parent_task_id, "depth": node.depth,
            "name": task.name, "status": task.status,
            "start_offset_ms": node.start_offset_ms, "duration_ms": task.duration_ms,
            "cost_usd": task.cost_usd, "evidence": evidence,
            "input": task.input if sight.inputs else HIDDEN,
            "output": task.output if sight.outputs else HIDDEN,
            "logs": logs,
            "metadata": sight.metadata(task.metadata),
            "eval": sight.eval(task.eval), "started_at": task.started_at,
            "ended_at": task.ended_at, "children": len(node.children),
            "descendants": node.descendants, "failed_below": node.failed_below,
            "inputs_hidden": not sight.inputs, "outputs_hidden": not sight.outputs,
            "content_hidden": not sight.content}


def run_header(run: Run, viewer: Viewer) -> dict[str, Any]:
    """The run's headline: name, status, times, both costs, the judge's verdict, its cluster."""
    root, agent, spans = run.root, run.agent, run.spans
    evidence = evidence_view(root, None)
    verdict = task_view(root, agent, viewer)["eval"]
    return {"run_id": root.task_id, "agent": agent.ref.path, "name": root.name,
            "status": root.status, "started_at": root.started_at, "ended_at": root.ended_at,
            "duration_ms": root.duration_ms, "cost_usd": root.cost_usd,
            "evidence": evidence, "eval": verdict,
            "unscored_because": unscored_because(root.status, verdict), "cluster": run.cluster,
            "span_count": len(spans), "failed_spans": sum(n.task.status == "failed"
                                                          for n in spans),
            "depth": max(n.depth for n in spans)}


def unscored_because(status: str, verdict: dict[str, Any] | None) -> str | None:
    """Why the run has no score, in words, from the judgement as the viewer may see it (an
    unscored answer's reason can quote the judge: `eval_view` hides it); None when scored."""
    if verdict is not None and verdict["status"] == "scored":
        return None
    if status == "running":
        return "still running: the judge scores finished runs"
    if verdict is None:
        return "not judged yet"
    reason = verdict.get("reason")
    if verdict["status"] == "skipped":
        return "skipped by the judge's budget" + (f" ({reason})" if reason else "")
    return "unscored" + (f": {reason}" if reason else "")


def run_json(store: Store, agent: Agent, viewer: Viewer, run_id: str,
             insights: dict[str, Any] | None, cursor: str | None = None,
             root: TaskState | None = None) -> dict[str, Any]:
    """The JSON twin: the run and its spans in tree order, `SPANS_PAGE` per answer."""
    run = load_run(store, agent, viewer, run_id, insights, root=root)
    start = _offset(cursor)
    page = run.spans[start:start + SPANS_PAGE]
    more = start + SPANS_PAGE < len(run.spans)
    sight = Sight.of(agent, viewer)
    return {**run_header(run, viewer),
            "spans": [span_view(node, sight) for node in page],
            "next_cursor": encode_cursor(str(start + SPANS_PAGE)) if more else None}


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        (text,) = decode_cursor(cursor)
        return max(0, int(text))
    except ValueError as exc:
        raise BadRequest("malformed cursor", [{"loc": ["query", "cursor"],
                                               "msg": "malformed cursor"}]) from exc


def focus_node(run: Run, span_id: str | None) -> Node:
    if not span_id:
        return run.tree
    node = find(run.tree, span_id)
    if node is None:
        raise NotFound("span not found in this run")
    return node


# ---- the runs list --------------------------------------------------------------------------


def run_filter(agent: Agent, viewer: Viewer, *, status: str | None, name: str | None,
               q: str | None, min_ms: float | None, score_below: float | None) -> RunFilter:
    """The list's filters from the query string; bad values are 400s naming the parameter."""
    if status is not None and status not in RUN_STATUSES:
        raise BadRequest(f"unknown status {status!r}: use one of {', '.join(RUN_STATUSES)}",
                         [{"loc": ["query", "status"], "msg": "unknown status"}])
    if score_below is not None and not 0 <= score_below <= 1:
        raise BadRequest("score_below must be from 0 to 1",
                         [{"loc": ["query", "score_below"], "msg": "out of range"}])
    content = viewer.owns(agent)
    return RunFilter(status=status, name=name or None, text=(q or "").strip() or None,
                     content=content, min_duration_ms=min_ms, score_below=score_below)


def run_summary(task: TaskState, agent: Agent, viewer: Viewer) -> dict[str, Any]:
    view = task_view(task, agent, viewer)
    return {"run_id": task.task_id, "name": task.name, "status": task.status,
            "started_at": task.started_at, "duration_ms": task.duration_ms,
            "cost_usd": task.cost_usd, "eval": view["eval"],
            "evidence_cost_usd": task.evidence.cost_usd if task.evidence else None}


def runs_list(store: Store, agent: Agent, viewer: Viewer, where: RunFilter,
              cursor: str | None = None, limit: int = RUNS_PAGE) -> dict[str, Any]:
    try:
        tasks, next_cursor = store.list_runs(agent.ref, where, limit=limit, cursor=cursor)
    except ValueError as exc:
        raise BadRequest(str(exc), [{"loc": ["query", "cursor"], "msg": str(exc)}]) from exc
    return {"runs": [run_summary(t, agent, viewer) for t in tasks], "next_cursor": next_cursor,
            "content_searched": where.content}



# ---- the pages ------------------------------------------------------------------------------


@dataclass
class Elsewhere:
    """The id named a subtask: its run's page shows it, selected."""

    run_id: str
    span_id: str


def run_page(store: Store, ref: AgentRef, viewer: Viewer, task_id: str, *,
             span: str | None = None, focus: str | None = None,
             expand: str | None = None) -> dict[str, Any] | Elsewhere:
    """What the run page draws: the header, the rows of the tree at `focus` (collapsed where
    big), each with its waterfall bar, and the selected span's details."""
    head = store.run_head(ref, task_id)
    agent = visible_agent(head.agent, viewer)
    task, run_id = find_run(store, agent, head.task)
    if run_id != task_id:
        return Elsewhere(run_id, task_id)
    run = load_run(store, agent, viewer, run_id, head.insights, content=False, root=task)
    top = focus_node(run, focus)
    selected = find(run.tree, span) if span else None
    full = store.get_task(agent.ref, selected.task_id) if selected else None
    drawn = rows(top, expand=lambda node: node.task_id == expand)
    scale = timeline.extent(run.tree)
    return {"agent": agent_summary(agent, viewer), "run": run_header(run, viewer),
            "rows": [{"row": r, "bar": timeline.bar(r.node, scale) if r.kind == "span" else None}
                     for r in drawn],
            "axis": timeline.axis(scale), "focus": top if top is not run.tree else None,
            "trail": _trail(run, top),
            "selected": (span_view(selected, Sight.of(agent, viewer), full) if selected
                         else None),
            "span_missing": bool(span) and selected is None,
            "selected_drawn": selected is not None and any(
                r.kind == "span" and r.node is selected for r in drawn)}


def _trail(run: Run, node: Node) -> list[Node]:
    """The ancestors of `node` from the root down, for the focused view's breadcrumbs."""
    by_id = {n.task_id: n for n in run.spans}
    trail: list[Node] = []
    current = by_id.get(node.parent_id or "")
    while current is not None and len(trail) < MAX_ANCESTRY:
        trail.append(current)
        current = by_id.get(current.parent_id or "")
    return trail[::-1]


def runs_page(store: Store, ref: AgentRef, viewer: Viewer, filters: dict[str, Any],
              cursor: str | None) -> dict[str, Any]:
    agent = visible(store, ref, viewer)
    where = run_filter(agent, viewer, **filters)
    return {"agent": agent_summary(agent, viewer), "filters": filters,
            **runs_list(store, agent, viewer, where, cursor)}


def runs_json(store: Store, ref: AgentRef, viewer: Viewer, filters: dict[str, Any],
              cursor: str | None, limit: int) -> dict[str, Any]:
    agent = visible(store, ref, viewer)
    return runs_list(store, agent, viewer, run_filter(agent, viewer, **filters), cursor, limit)


def run_answer(store: Store, ref: AgentRef, viewer: Viewer, task_id: str,
               cursor: str | None) -> dict[str, Any]:
    """The JSON twin; a subtask's id answers its run, naming the span asked for."""
    head = store.run_head(ref, task_id)
    agent = visible_agent(head.agent, viewer)
    task, run_id = find_run(store, agent, head.task)
    answer = run_json(store, agent, viewer, run_id, head.insights, cursor,
                      root=task if run_id == task_id else None)
    return answer if run_id == task_id else {**answer, "requested_span": task_id}


EXAMPLES = 3


def example_runs(store: Store, agent: Agent, viewer: Viewer) -> dict[str, list[dict[str, Any]]]:
    """A few runs to open from another page (compare): the newest, and the newest failures."""
    newest, _ = store.list_runs(agent.ref, RunFilter(), limit=EXAMPLES)
    failed, _ = store.list_runs(agent.ref, RunFilter(status="failed"), limit=EXAMPLES)
    return {"newest": [run_summary(t, agent, viewer) for t in newest],
            "failed": [run_summary(t, agent, viewer) for t in failed]}
