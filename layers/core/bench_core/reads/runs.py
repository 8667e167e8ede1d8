"""Runs through the privacy gate: one run with its spans (the run page and its JSON twin) and
the runs list. Every value a viewer may not see goes through `domain.privacy`, as on every
other surface.

A run is read a page at a time, whatever its size: its root, then up to `SPANS_PAGE` of its
spans in start order (`RunStore.run_spans`), without their content (the page draws names,
times, statuses and numbers); content is read only for what is shown: the selected span on the
page, the spans of one answer in the JSON. A run that fits one page is whole: it is drawn as a
tree (`domain.runs`), and its JSON lists its spans in the order the tree is drawn, each with its
depth and what lies below it, if their content fits one answer (`ANSWER_BYTES`). A bigger run
is drawn a window at a time: its page draws the tree of 1,000 spans in start order (its
first, those after a cursor, those from the selected span's start, or a focused span's
subtree read from its start), each under the ancestors it hangs from (read by key), with the
cursor of the next window, so that every span is some clicks away; its header counts what
`RunStore.run_counts` counts without reading the spans; its JSON (and that of a
run whose spans' content does not fit one answer) pages through every span in start order
(`next_cursor`), each with its parent's id to rebuild the tree from, an answer ending at
`SPANS_PAGE` spans or `ANSWER_BYTES` of them, whichever comes first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol
from urllib.parse import urlencode

from ..domain.errors import BadRequest, NotFound
from ..domain.field_limits import dumps
from ..domain.models import Agent, AgentRef, TaskState
from ..domain.privacy import (
    HIDDEN,
    Sight,
    Viewer,
    eval_view,
    evidence_view,
    insights_view,
    visible_agent,
)
from ..domain.run_list import RunFilter, tokens
from ..domain.runs import (
    ROWS_SHOWN,
    Node,
    Row,
    build_tree,
    find,
    path,
    rows,
    span_key,
    start_offset,
    subtree,
    walk,
)
from ..ports.services import WithAgents, WithFeedback, WithIngest, WithRuns
from ..ports.store import RunCounts, decode_cursor, encode_cursor
from ..render import timeline
from ..render.json_body import json_bytes
from .agents import agent_summary, visible
from .feedback import run_feedback
from .run_filters import run_filter, sort_queries

SPANS_PAGE = 1000
"""Spans per answer of the JSON twin at most, and per read of a run: a run of up to this many
spans (its root included) is read whole; a bigger one a page at a time."""
ANSWER_BYTES = 4 * 1024 * 1024
"""The most one JSON answer's spans take, encoded: an answer stops before the span that would
pass it. Lambda returns at most 6 MB (API Gateway's HTTP API 10 MB), and the header around the
spans takes a few KB. A span bigger than this on its own still goes out, alone: by the field
limits (`domain.field_limits`) a span holds at most some 0.2 MB (its input, output, metadata
and cost breakdown capped at `Limits.max_field_bytes`, 32 KB each by default, its logs at
`domain.runs.MAX_LOG_BYTES`, 64 KB), so only a deployment that raised the cap past 1 MB could
store one."""
CONTENT_READ = 100
"""Spans an answer reads whole at once at most (a DynamoDB BatchGetItem's worth), fewer when
the bytes it has left take fewer of the size it has seen: it reads few spans it does not send."""
RUNS_PAGE = 50
MAX_ANCESTRY = 1000
TRAIL_READ = 20
"""Ancestors read, one by one, for the breadcrumbs of a span focused on in a run too big to
read whole; above them the trail goes straight to the root."""


@dataclass
class Run:
    """A run as read: its root, its first spans in start order, the agent it belongs to and
    the failure cluster naming it; for a run bigger than one read, what its header counts."""

    agent: Agent
    root: TaskState
    read: list[TaskState]
    cluster: dict[str, Any] | None
    counts: RunCounts | None = None
    """None when `read` is every span of the run."""

    @property
    def whole(self) -> bool:
        return self.counts is None

    @cached_property
    def tree(self) -> Node:
        """The tree of what was read: the whole run's, or its first spans'."""
        return build_tree(self.root, self.read)

    @cached_property
    def spans(self) -> list[Node]:
        """Every node of the tree in drawing order (`walk`), root first."""
        return list(walk(self.tree))


class RunReads(WithRuns, WithIngest, WithFeedback, Protocol):
    """A run: its head and spans a page at a time, single tasks of it, and its feedback."""


class RunListReads(WithRuns, WithAgents, Protocol):
    """An agent's runs list."""


def find_run(store: WithIngest, agent: Agent, task: TaskState | None) -> tuple[TaskState, str]:
    """The task asked for (as read: None for an unknown one, which is NotFound) and the id of
    the run it belongs to."""
    if task is None:
        raise NotFound("run not found")
    if task.parent_task_id is None:
        return task, task.task_id
    if task.run_id and task.run_id != task.task_id:
        root = store.ingest.get_task(agent.ref, task.run_id)
        if root is not None and root.parent_task_id is None:
            return task, root.task_id
    current = task  # stored before runs existed (on DynamoDB, until the table's migration)
    for _ in range(MAX_ANCESTRY):
        parent = store.ingest.get_task(agent.ref, current.parent_task_id or "")
        if parent is None:
            return task, current.task_id
        if parent.parent_task_id is None:
            return task, parent.task_id
        current = parent
    return task, current.task_id


def load_run(store: RunReads, agent: Agent, viewer: Viewer, run_id: str,
             insights: dict[str, Any] | None, *, content: bool = True,
             root: TaskState | None = None) -> Run:
    """The run's root and its first page of spans; without `content` they may lack inputs,
    outputs, metadata and logs (the page draws the tree from names, times and statuses
    alone). `insights`: the agent's (`RunHead`); `root`: the run's root if the caller read it
    already."""
    root = _root(store, agent, run_id, root)
    read = store.runs.run_spans(agent.ref, root, limit=SPANS_PAGE, content=content)
    counts = store.runs.run_counts(agent.ref, root) if len(read) >= SPANS_PAGE else None
    return Run(agent, root, read, cluster_of(insights, agent, viewer, run_id), counts)


def _root(store: WithIngest, agent: Agent, run_id: str, root: TaskState | None) -> TaskState:
    root = root or store.ingest.get_task(agent.ref, run_id)
    if root is None:
        raise NotFound("run not found")
    return root


def cluster_of(insights: dict[str, Any] | None, agent: Agent, viewer: Viewer,
               run_id: str) -> dict[str, Any] | None:
    """The failure cluster of the agent's `insights` that names this run among its examples,
    as the viewer may see it."""
    for cluster in insights_view(insights, agent, viewer)["clusters"] if insights else []:
        if run_id in cluster.get("example_task_ids", []):
            return {"label": cluster["label"], "count": cluster["count"],
                    "share": cluster["share"]}
    return None


def span_view(node: Node, sight: Sight, task: TaskState | None = None, *,
              placed: bool = True) -> dict[str, Any]:
    """One span of the JSON twin (and of the page's detail panel) as `sight` lets its viewer
    see it, with `task` standing in for the node's own when that was read without content.
    A span of a run read a page at a time is not `placed` in a whole tree: its depth and what
    lies below it are None."""
    return _span_fields(task or node.task, sight, node.start_offset_ms,
                        node if placed else None)


def loose_view(task: TaskState, run: Run, sight: Sight) -> dict[str, Any]:
    """`span_view` of a span of a run read a page at a time, placed only in time (no node is
    made for it: the JSON makes one view of each span before it knows whether the run is
    read whole)."""
    return _span_fields(task, sight, start_offset(task, run.root), None)


def _span_fields(task: TaskState, sight: Sight, start_offset_ms: float | None,
                 node: Node | None) -> dict[str, Any]:
    evidence, logs = sight.span_logs(task)
    return {"task_id": task.task_id, "parent_id": task.parent_task_id,
            "depth": None if node is None else node.depth,
            "name": task.name, "status": task.status,
            "start_offset_ms": start_offset_ms, "duration_ms": task.duration_ms,
            "cost_usd": task.cost_usd, **task.cost_headline(), "evidence": evidence,
            "input": task.input if sight.inputs else HIDDEN,
            "output": task.output if sight.outputs else HIDDEN,
            "logs": logs,
            "metadata": sight.metadata(task.metadata),
            "eval": sight.eval(task.eval), "started_at": task.started_at,
            "ended_at": task.ended_at,
            "children": None if node is None else len(node.children),
            "descendants": None if node is None else node.descendants,
            "failed_below": None if node is None else node.failed_below,
            "inputs_hidden": not sight.inputs, "outputs_hidden": not sight.outputs,
            "content_hidden": not sight.content}


def loose(task: TaskState, run: Run) -> Node:
    """A span of a run read a page at a time, placed only in time."""
    return Node(task, 0, start_offset(task, run.root))


def run_header(run: Run, viewer: Viewer) -> dict[str, Any]:
    """The run's headline: name, status, times, both costs, the judge's verdict, its cluster,
    and its spans counted (their depth only where the run was read whole)."""
    root, agent = run.root, run.agent
    evidence = evidence_view(root, None)
    verdict = eval_view(root.eval, agent, viewer)
    counts = counted(run.read) if run.counts is None else run.counts
    return {"run_id": root.task_id, "agent": agent.ref.path, "name": root.name,
            "status": root.status, "started_at": root.started_at, "ended_at": root.ended_at,
            "duration_ms": root.duration_ms, "cost_usd": root.cost_usd, **root.cost_headline(),
            "evidence": evidence, "eval": verdict, "version": root.agent_version,
            "session_id": root.session_id,
            "unscored_because": unscored_because(root.status, verdict), "cluster": run.cluster,
            "span_count": counts.spans + 1,
            "failed_spans": counts.failed + (root.status == "failed"),
            "first_failed_span": counts.first_failed,
            "depth": max(n.depth for n in run.spans) if run.whole else None,
            "span_order": "tree" if run.whole else "start"}


def counted(spans: list[TaskState]) -> RunCounts:
    """What the header counts, of a run read whole."""
    failed = [t for t in spans if t.status == "failed"]
    return RunCounts(len(spans), len(failed), min(failed, key=span_key).task_id if failed else None)


def unscored_because(status: str, verdict: dict[str, Any] | None) -> str | None:
    """Why the run has no score, in words that follow "Unscored: ", from the judgement as the
    viewer may see it (an unscored answer's reason can quote the judge: `eval_view` hides it);
    None when scored."""
    if verdict is not None and verdict["status"] == "scored":
        return None
    if status == "running":
        return "still running: the judge scores finished runs"
    if verdict is None:
        return "not judged yet"
    reason = verdict.get("reason")
    if verdict["status"] == "skipped":
        return "skipped by the judge's budget" + (f" ({reason})" if reason else "")
    return reason or "the judge gave no usable answer"


def run_json(store: RunReads, agent: Agent, viewer: Viewer, run_id: str,
             insights: dict[str, Any] | None, cursor: str | None = None,
             root: TaskState | None = None) -> dict[str, Any]:
    """The JSON twin: a whole run's spans in tree order, if their content fits one answer; a
    bigger run's in start order, as many per answer as `SPANS_PAGE` and `ANSWER_BYTES` let
    (the first holds the root), `next_cursor` for the next. The spans are read once, whole,
    in start order as the answer takes them: a run they all fit is whole, its tree built from
    them; only one they do not is counted (`RunStore.run_counts`)."""
    sight = Sight.of(agent, viewer)
    if cursor:
        return _later_page(store, agent, viewer, run_id, insights, cursor, root, sight)
    root = _root(store, agent, run_id, root)
    run = Run(agent, root, [], cluster_of(insights, agent, viewer, run_id))
    page = [(root, loose_view(root, run, sight))]
    if _fill(page, _WholeSpans(store, run, None, sight), lambda t: loose_view(t, run, sight)):
        counts = store.runs.run_counts(agent.ref, root)
        return _paged(Run(agent, root, [], run.cluster, counts), counts, viewer, page,
                      more=True)
    whole = Run(agent, root, [task for task, _ in page[1:]], run.cluster)
    return {**run_header(whole, viewer), "next_cursor": None,
            "spans": [_placed(shown, node) for node, shown in _in_tree(whole, page)]}


def _in_tree(run: Run, page: list[tuple[TaskState, dict[str, Any]]]
             ) -> Iterator[tuple[Node, dict[str, Any]]]:
    """A whole run's nodes in drawing order, each with its span's loose view."""
    views = {task.task_id: shown for task, shown in page}
    return ((node, views[node.task_id]) for node in run.spans)


def _placed(shown: dict[str, Any], node: Node) -> dict[str, Any]:
    """A span's loose view (`loose_view`) placed in its whole tree: its depth, start and
    what lies below it, no bigger than the loose view the answer's bytes were counted at (a
    depth or count below 1,000 takes fewer characters than the null it replaces)."""
    shown["depth"], shown["start_offset_ms"] = node.depth, node.start_offset_ms
    shown["children"], shown["descendants"] = len(node.children), node.descendants
    shown["failed_below"] = node.failed_below
    return shown


def _later_page(store: RunReads, agent: Agent, viewer: Viewer, run_id: str,
                insights: dict[str, Any] | None, cursor: str, root: TaskState | None,
                sight: Sight) -> dict[str, Any]:
    """A page after the first of a run read a page at a time: its cursor holds where the
    last page ended and the counts the first read (so paging does not count again)."""
    after, counts = _position(cursor)
    root = _root(store, agent, run_id, root)
    run = Run(agent, root, [], cluster_of(insights, agent, viewer, run_id), counts)
    page: list[tuple[TaskState, dict[str, Any]]] = []
    more = _fill(page, _WholeSpans(store, run, after, sight), lambda t: loose_view(t, run, sight))
    return _paged(run, counts, viewer, page, more=more)


class _WholeSpans:
    """A run's spans read whole (the content `sight` shows), in start order from `after` on,
    a few at a time as an answer takes them."""

    def __init__(self, store: RunReads, run: Run, after: tuple[str, str] | None,
                 sight: Sight) -> None:
        self.store, self.run, self.after, self.sight = store, run, after, sight
        self.read: list[TaskState] = []
        self.done = False

    def take(self, want: int) -> list[TaskState]:
        """The next spans, at most `want` (at least one, if any is left), reading `want`
        more if none is read yet."""
        want = max(1, want)
        if not self.read and not self.done:
            self.read = self.store.runs.run_spans(
                self.run.agent.ref, self.run.root, limit=want, after=self.after,
                inputs=self.sight.inputs, outputs=self.sight.outputs)
            self.done = len(self.read) < want
            if self.read:
                self.after = span_key(self.read[-1])
        taken, self.read = self.read[:want], self.read[want:]
        return taken


def _fill(page: list[tuple[TaskState, dict[str, Any]]], spans: _WholeSpans,
          view: Callable[[TaskState], dict[str, Any]]) -> bool:
    """Add to `page` (a task and its view each) the views of the next `spans` while the
    page's views, encoded, stay within `ANSWER_BYTES` and its spans within `SPANS_PAGE` (the
    first goes in whatever its size); True if a span is left over. A read's views are
    measured encoded together (a list's bytes are its items' and a comma between each: one
    call, not a hundred), span by span only in the read that passes the bytes."""
    used = sum(len(json_bytes(shown)) for _, shown in page)
    while len(page) < SPANS_PAGE:
        fit = (ANSWER_BYTES - used) * len(page) // used + 1 if used else CONTENT_READ
        tasks = spans.take(min(SPANS_PAGE - len(page), CONTENT_READ, fit))
        if not tasks:
            return False
        views = [view(task) for task in tasks]
        size = len(json_bytes(views)) - len(views) - 1
        if used + size <= ANSWER_BYTES:
            page += zip(tasks, views, strict=True)
            used += size
            continue
        for task, shown in zip(tasks, views, strict=True):
            size = len(json_bytes(shown))
            if page and used + size > ANSWER_BYTES:
                return True
            page.append((task, shown))
            used += size
    return bool(spans.take(1))


def _paged(run: Run, counts: RunCounts, viewer: Viewer,
           page: list[tuple[TaskState, dict[str, Any]]], *, more: bool) -> dict[str, Any]:
    return {**run_header(run, viewer), "spans": [shown for _, shown in page],
            "next_cursor": encode_cursor(*span_key(page[-1][0]), str(counts.spans),
                                         str(counts.failed), counts.first_failed or "")
            if more and page else None}


def _position(cursor: str) -> tuple[tuple[str, str], RunCounts]:
    """Where a page starts and the run's counts, from the cursor the page before it gave."""
    try:
        sort_ts, task_id, spans, failed, first = decode_cursor(cursor)
        return (sort_ts, task_id), RunCounts(max(0, int(spans)), max(0, int(failed)),
                                             first or None)
    except ValueError as exc:
        raise BadRequest("malformed cursor", [{"loc": ["query", "cursor"],
                                               "msg": "malformed cursor"}]) from exc


# ---- the runs list --------------------------------------------------------------------------


def run_summary(task: TaskState, agent: Agent, viewer: Viewer) -> dict[str, Any]:
    """A run as its list shows it: its judgement only through the gate (`eval_view`), the
    rest is public."""
    return {"run_id": task.task_id, "name": task.name, "status": task.status,
            "started_at": task.started_at, "duration_ms": task.duration_ms,
            "cost_usd": task.cost_usd, **task.cost_headline(),
            "eval": eval_view(task.eval, agent, viewer),
            "evidence_cost_usd": task.evidence.cost_usd if task.evidence else None,
            "tokens": tokens(task)}


def runs_list(store: WithRuns, agent: Agent, viewer: Viewer, where: RunFilter,
              cursor: str | None = None, limit: int = RUNS_PAGE) -> dict[str, Any]:
    """A page of the list; `searched` says how far a store that bounds its search looked
    (`RunsPage`): null where the page is the whole answer's."""
    try:
        found = store.runs.list_runs(agent.ref, where, limit=limit, cursor=cursor)
    except ValueError as exc:
        raise BadRequest(str(exc), [{"loc": ["query", "cursor"], "msg": str(exc)}]) from exc
    searched = None if found.examined is None else {
        "runs_examined": found.examined, "looked_back_to": found.looked_back_to}
    return {"runs": [run_summary(t, agent, viewer) for t in found.runs],
            "next_cursor": found.next_cursor, "content_searched": where.content,
            "searched": searched}


# ---- the pages ------------------------------------------------------------------------------


@dataclass
class Elsewhere:
    """The id named a subtask: its run's page shows it, selected."""

    run_id: str
    span_id: str


@dataclass
class View:
    """What a run page draws from: the tree of what was read (`shown`: the whole run, or a
    window of it in start order with the ancestors its spans hang from), the node it is drawn
    from, that node's ancestors (the breadcrumbs), and for a run read a window at a time where
    the window stands: its first span's place in start order (None where unknown), how many it
    read, and the cursor of the next one (None at the end)."""

    shown: Run
    top: Node
    trail: list[Node]
    position: int | None = 0
    read: int = 0
    next: str | None = None


def run_page(store: RunReads, ref: AgentRef, viewer: Viewer, task_id: str, *,
             span: str | None = None, focus: str | None = None, expand: str | None = None,
             at: str | None = None, within: str | None = None, after: str | None = None,
             q: str | None = None) -> dict[str, Any] | Elsewhere:
    """What the run page draws: the header, the rows of the tree at `focus` (collapsed where
    big; from `at`, within `within`'s subtree, where a collapsed row goes on), each with its
    waterfall bar, and the selected span's details; of a run too big to read whole, the rows
    of one window of it (`View`: its first spans, those `after` a cursor, or those from the
    selected span's start). A run opened plainly with failed spans selects its first one, and
    the selected span is always drawn: the rows go on from it where it would be collapsed.
    `q` draws only the spans here whose name, or content the viewer may see, holds it (with
    their ancestors)."""
    head = store.runs.run_head(ref, task_id)
    agent = visible_agent(head.agent, viewer)
    task, run_id = find_run(store, agent, head.task)
    if run_id != task_id:
        return Elsewhere(run_id, task_id)
    run = load_run(store, agent, viewer, run_id, head.insights, content=False, root=task)
    header = run_header(run, viewer)
    q = (q or "").strip() or None
    if span is None and not (focus or expand or at or within or after or q):
        span = header["first_failed_span"]
    view = _view(store, run, focus, after, span)
    top, shown = view.top, view.shown
    selected, full = _selected(store, shown, top, span)
    scope = find(top, within) if within else top
    start = find(scope, at) if scope is not None and at else None
    if scope is None or (at and start is None):
        raise NotFound("span not found in this view of the run")
    sight = Sight.of(agent, viewer)
    matches = _search(store, shown, scope, q, sight) if q else set()
    drawn = (_found(scope, matches) if q else
             rows(scope, expand=lambda node: node.task_id == expand, start=start))
    if selected is not None and at is None and not q and not _drawn(drawn, selected) \
            and find(scope, selected.task_id):
        start = selected
        drawn = rows(scope, expand=lambda node: node.task_id == expand, start=start)
    scale = timeline.extent(shown.tree, *([] if run.whole or top is shown.tree else [top]))
    return {"agent": agent_summary(agent, viewer), "run": header,
            "first_failed": _first_failed(store, shown, header["first_failed_span"]),
            "errors": _errors(shown, selected, run.counts),
            "rows": [{"row": r, "bar": timeline.bar(r.node, scale) if r.kind == "span" else None}
                     for r in drawn],
            "axis": timeline.axis(scale), "focus": top if top is not shown.tree else None,
            "within": scope.task_id if scope is not top else None, "start": start,
            "start_trail": (path(scope, start.task_id) or [])[:-1] if start else [],
            "trail": view.trail, "trail_cut": _cut(view.trail),
            "window": None if run.whole else {"page": SPANS_PAGE, "of": header["span_count"] - 1,
                                              "position": view.position, "read": view.read,
                                              "next": view.next, "moved": after is not None
                                              or view.position != 0},
            "search": {"q": q, "matches": matches, "content": sight.inputs or sight.outputs
                       or sight.content} if q else None,
            "selected": (span_view(selected, sight, full,
                                   placed=run.whole) if selected else None),
            "span_missing": bool(span) and selected is None,
            "selected_drawn": selected is not None and _drawn(drawn, selected),
            "feedback": run_feedback(store, agent, viewer, run_id)}


def _search(store: RunReads, shown: Run, top: Node, q: str, sight: Sight) -> set[str]:
    """The spans of `top`'s tree whose name holds `q` (case aside), or what the viewer may see
    of their content: their content is read `CONTENT_READ` spans at a time, in start order
    from the first of them, as far as the last (a window's worth at most, as the JSON's)."""
    needle = q.lower()
    nodes = {n.task_id: n for n in walk(top)}
    found = {i for i, n in nodes.items() if needle in (n.task.name or "").lower()}
    if not (sight.inputs or sight.outputs or sight.content):
        return found
    if shown.root.task_id in nodes and needle in _visible_text(shown.root, sight):
        found.add(shown.root.task_id)
    keys = sorted(span_key(n.task) for i, n in nodes.items() if i != shown.root.task_id)
    after: tuple[str, str] | None = (keys[0][0], "") if keys else None
    while after is not None and after <= keys[-1]:
        page = store.runs.run_spans(shown.agent.ref, shown.root, limit=CONTENT_READ,
                                    after=after, inputs=sight.inputs, outputs=sight.outputs)
        found |= {t.task_id for t in page
                  if t.task_id in nodes and needle in _visible_text(t, sight)}
        after = span_key(page[-1]) if len(page) >= CONTENT_READ else None
    return found


def _visible_text(task: TaskState, sight: Sight) -> str:
    """A task's name and the content `sight` shows of it, as one lower-case text to search."""
    parts = [task.name or ""]
    if sight.inputs:
        parts.append(dumps(task.input))
    if sight.outputs:
        parts.append(dumps(task.output))
    if sight.content:
        parts += [dumps(task.metadata), dumps(task.logs)]
    return "\n".join(parts).lower()


def _found(top: Node, matches: set[str]) -> list[Row]:
    """The rows of a search: the spans found and their ancestors, in drawing order, at most
    `ROWS_SHOWN` of them."""
    by_id = {n.task_id: n for n in walk(top)}
    kept: set[str] = set()
    for task_id in matches:
        current: Node | None = by_id.get(task_id)
        while current is not None and current.task_id not in kept:
            kept.add(current.task_id)
            current = by_id.get(current.parent_id or "")
    return [Row(n) for n in walk(top) if n.task_id in kept][:ROWS_SHOWN]


def _drawn(drawn: list[Row], node: Node) -> bool:
    return any(r.kind == "span" and r.node is node for r in drawn)


def _view(store: RunReads, run: Run, focus: str | None, after: str | None,
          span: str | None) -> View:
    """Where the page draws from (`View`). A run read whole draws from its root or `focus`.
    A bigger one draws its first spans, or the window `after` a cursor, or `focus` with the
    first spans of its subtree, or, when the span asked for is in none of these, the window
    from that span's start on."""
    if run.whole:
        top, trail = _focused(store, run, focus)
        return View(run, top, trail)
    if after:
        at, position = _window_position(after)
        return _window(store, run, at, position)
    if focus and focus != run.root.task_id:
        return _focused_window(store, run, focus)
    if span and find(run.tree, span) is None:
        task = _member(store, run, span)
        if task is not None and task is not run.root:
            return _window(store, run, (task.sort_ts, ""), None)
    return View(run, run.tree, [], 0, len(run.read),
                _window_cursor(run.read, 0) if len(run.read) >= SPANS_PAGE else None)


def _window(store: RunReads, run: Run, after: tuple[str, str], position: int | None) -> View:
    """The window of `SPANS_PAGE` spans from `after` on in start order, each hanging from its
    parent: one read before it in the run is read by key with its own (`_context`)."""
    read = store.runs.run_spans(run.agent.ref, run.root, limit=SPANS_PAGE, after=after,
                                content=False)
    shown = Run(run.agent, run.root, [*_context(store, run, read), *read], run.cluster,
                run.counts)
    more = len(read) >= SPANS_PAGE
    return View(shown, shown.tree, [], position, len(read),
                _window_cursor(read, position) if more else None)


def _focused_window(store: RunReads, run: Run, focus: str) -> View:
    """`focus` with the first spans of its subtree (one read from its start on) and its
    nearest `TRAIL_READ` ancestors; the next window goes on from that read at the run's
    level, where the rest of the subtree hangs from its ancestors."""
    task = _member(store, run, focus)
    if task is None:
        raise NotFound("span not found in this run")
    ancestors = _ancestors(store, run, task)
    after = store.runs.run_spans(run.agent.ref, run.root, limit=SPANS_PAGE,
                                 after=(task.sort_ts, ""), content=False)
    top = build_tree(task, subtree(task.task_id, after), origin=run.root,
                     depth=len(ancestors))
    return View(run, top, [loose(t, run) for t in ancestors], None, len(after),
                _window_cursor(after, None) if len(after) >= SPANS_PAGE else None)


def _context(store: WithIngest, run: Run, read: list[TaskState]) -> list[TaskState]:
    """The ancestors of `read`'s spans that started before it, read by key (at most
    `TRAIL_READ` of them: a span whose parent is not found hangs from the root), so that a
    window of a run draws each span where it belongs."""
    known = {run.root.task_id} | {t.task_id for t in read}
    wanted = [t.parent_task_id for t in read if t.parent_task_id not in known]
    found: list[TaskState] = []
    tried = 0
    while wanted and tried < TRAIL_READ:
        parent = wanted.pop(0)
        if parent is None or parent in known:
            continue
        tried += 1
        known.add(parent)
        task = _member(store, run, parent)
        if task is not None:
            found.append(task)
            wanted.append(task.parent_task_id)
    return found


def _window_cursor(read: list[TaskState], position: int | None) -> str:
    """Where the window after `read` starts, and its place in start order if known."""
    place = "" if position is None else str(position + len(read))
    return encode_cursor(*span_key(read[-1]), place)


def _window_position(cursor: str) -> tuple[tuple[str, str], int | None]:
    try:
        sort_ts, task_id, place = decode_cursor(cursor)
        return (sort_ts, task_id), int(place) if place else None
    except ValueError as exc:
        raise BadRequest("malformed cursor", [{"loc": ["query", "after"],
                                               "msg": "malformed cursor"}]) from exc


def _first_failed(store: WithIngest, shown: Run, first: str | None) -> dict[str, Any] | None:
    """The run's first failed span, named for the header (read by key if not drawn here)."""
    if first is None:
        return None
    node = find(shown.tree, first)
    task = node.task if node is not None else _member(store, shown, first)
    return {"task_id": first, "name": task.name if task is not None else None}


def _errors(shown: Run, selected: Node | None, counts: RunCounts | None
            ) -> dict[str, str | None]:
    """The failed spans before and after the selected one (with none selected, the first):
    previous and next error, in the order the tree draws them of a run read whole, in start
    order of a bigger one (as far as its `counts` keep them), whichever window they are in."""
    if counts is not None:
        at = span_key(selected.task) if selected is not None and \
            selected.task_id != shown.root.task_id else ("", "")
        return {"previous": next((f[1] for f in reversed(counts.failures) if f < at), None),
                "next": next((f[1] for f in counts.failures if f > at), None)}
    order = {n.task_id: i for i, n in enumerate(shown.spans)}
    here = order.get(selected.task_id, -1) if selected is not None else -1
    failed = [n.task_id for n in shown.spans[1:] if n.task.status == "failed"]
    return {"previous": next((f for f in reversed(failed) if order[f] < here), None),
            "next": next((f for f in failed if order[f] > here), None)}


def _focused(store: RunReads, run: Run, focus: str | None) -> tuple[Node, list[Node]]:
    """The node the page draws from in a run read whole, and its ancestors from the root down
    (the breadcrumbs)."""
    if not focus or focus == run.root.task_id:
        return run.tree, []
    node = find(run.tree, focus)
    if node is None:
        raise NotFound("span not found in this run")
    return node, _trail(run, node)


def _cut(trail: list[Node]) -> bool:
    """Whether the breadcrumbs skip ancestors between the root and the next one shown."""
    return len(trail) > 1 and trail[1].parent_id != trail[0].task_id


def _selected(store: WithIngest, run: Run, top: Node, span: str | None
              ) -> tuple[Node | None, TaskState | None]:
    """The selected span's node (the drawn one, where it is drawn) and its task read whole."""
    if not span:
        return None, None
    node = find(top, span) or find(run.tree, span)
    if run.whole:
        return node, store.ingest.get_task(run.agent.ref, span) if node else None
    full = _member(store, run, span)
    if full is None:
        return None, None
    return node or loose(full, run), full


def _member(store: WithIngest, run: Run, span_id: str) -> TaskState | None:
    """The task `span_id` read whole, if it is one of this run's spans or its root."""
    if span_id == run.root.task_id:
        return run.root
    task = store.ingest.get_task(run.agent.ref, span_id)
    if task is None or task.run_id != run.root.task_id or not task.sort_ts:
        return None
    return task


def _ancestors(store: WithIngest, run: Run, task: TaskState) -> list[TaskState]:
    """The root, then `task`'s nearest `TRAIL_READ` ancestors below it (all of them, if that
    is all there are), from the top down."""
    found: list[TaskState] = []
    parent = task.parent_task_id
    while parent and parent != run.root.task_id and len(found) < TRAIL_READ:
        above = store.ingest.get_task(run.agent.ref, parent)
        if above is None:
            break
        found.append(above)
        parent = above.parent_task_id
    return [run.root, *found[::-1]]


def _trail(run: Run, node: Node) -> list[Node]:
    """The ancestors of `node` from the root down, for the focused view's breadcrumbs."""
    by_id = {n.task_id: n for n in run.spans}
    trail: list[Node] = []
    current = by_id.get(node.parent_id or "")
    while current is not None and len(trail) < MAX_ANCESTRY:
        trail.append(current)
        current = by_id.get(current.parent_id or "")
    return trail[::-1]


def runs_page(store: RunListReads, ref: AgentRef, viewer: Viewer, filters: dict[str, Any],
              cursor: str | None) -> dict[str, Any]:
    agent = visible(store, ref, viewer)
    where = run_filter(agent, viewer, filters)
    return {"agent": agent_summary(agent, viewer), "filters": filters,
            "query": urlencode(filters, doseq=True), "sort_queries": sort_queries(filters),
            **runs_list(store, agent, viewer, where, cursor)}


def runs_json(store: RunListReads, ref: AgentRef, viewer: Viewer, filters: dict[str, Any],
              cursor: str | None, limit: int) -> dict[str, Any]:
    agent = visible(store, ref, viewer)
    return runs_list(store, agent, viewer, run_filter(agent, viewer, filters), cursor, limit)


def run_answer(store: RunReads, ref: AgentRef, viewer: Viewer, task_id: str,
               cursor: str | None) -> dict[str, Any]:
    """The JSON twin; a subtask's id answers its run, naming the span asked for."""
    head = store.runs.run_head(ref, task_id)
    agent = visible_agent(head.agent, viewer)
    task, run_id = find_run(store, agent, head.task)
    answer = run_json(store, agent, viewer, run_id, head.insights, cursor,
                      root=task if run_id == task_id else None)
    answer["feedback"] = run_feedback(store, agent, viewer, run_id)
    return answer if run_id == task_id else {**answer, "requested_span": task_id}


EXAMPLES = 3


def example_runs(store: WithRuns, agent: Agent, viewer: Viewer) -> dict[str, list[dict[str, Any]]]:
    """A few runs to open from another page (compare): the newest, and the newest failures."""
    newest = store.runs.list_runs(agent.ref, RunFilter(), limit=EXAMPLES).runs
    failed = store.runs.list_runs(agent.ref, RunFilter(status="failed"), limit=EXAMPLES).runs
    return {"newest": [run_summary(t, agent, viewer) for t in newest],
            "failed": [run_summary(t, agent, viewer) for t in failed]}
