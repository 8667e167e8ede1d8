"""Runs: a root task and every task under it. Pure: which run a task belongs to, its log entries,
and the tree a run is drawn as (order, depth, start offsets, failures flagged upwards).

Which run a task belongs to is known only as far as its ancestors have arrived: OTLP exporters
send a child span before its parent, and a batch may hold a subtask whose parent came earlier.
So every task records the topmost ancestor known when it is written (`assign_runs`): itself
for a root, its parent's run when the parent is known, else the parent's id. When a task that
others pointed at learns its own parent, the stores move those tasks to the new run
(`Reassign`), which happens once per late-arriving middle task, never per read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from .field_limits import dumps
from .models import TaskState

MAX_LOG_ENTRIES = 200
MAX_LOG_BYTES = 64 * 1024
"""What a task keeps of its logs (entries and JSON bytes), so a task item stays far below
DynamoDB's 400 KB; later entries are counted in a closing `{"omitted": n}` entry."""
MAX_ANCESTRY = 1000
"""How far up `assign_runs` follows parents within one batch (a cycle stops it too)."""


def append_log(logs: list[dict[str, Any]], ts: str, data: Any) -> None:
    """Add one `task.log` entry to a task's `logs`, or count it once the cap is reached."""
    if logs and "omitted" in logs[-1]:
        logs[-1]["omitted"] += 1
        return
    entry = {"ts": ts, "data": data}
    used = sum(len(dumps(e)) for e in logs)
    if len(logs) >= MAX_LOG_ENTRIES - 1 or used + len(dumps(entry)) > MAX_LOG_BYTES:
        logs.append({"omitted": 1})
        return
    logs.append(entry)


@dataclass(frozen=True)
class Reassign:
    """Tasks recorded under run `old` (a task that turned out to have a parent) belong to `new`."""

    old: str
    new: str


def assign_runs(batch: Mapping[str, TaskState], stored: Mapping[str, TaskState]
                ) -> tuple[list[Reassign], set[str]]:
    """Set `run_id` on every task of `batch` (folded this batch) from the batch itself and the
    `stored` states of other tasks (parents among them). Returns the reassignments to apply to
    tasks stored earlier, and the ids of parents not stored yet (or stored only as placeholders)
    that tasks now record as their run: the ones a later reassignment may have to move."""
    memo: dict[str, str] = {}
    unknown: set[str] = set()

    def run_of(task_id: str) -> str:
        path: list[str] = []
        current = task_id
        while True:
            if current in memo:
                found = memo[current]
                break
            task = batch.get(current)
            if task is None:
                known = stored.get(current)
                if known is None or known.parent_task_id is None:
                    if known is None or not known.sort_ts:
                        unknown.add(current)  # absent, or a placeholder made by its children
                    found = current
                else:
                    found = known.run_id or known.parent_task_id
                break
            if task.parent_task_id is None or current in path or len(path) > MAX_ANCESTRY:
                found = current
                break
            path.append(current)
            current = task.parent_task_id
        for step in path:
            memo[step] = found
        memo[current] = found
        return found

    reassign = []
    for task_id, task in batch.items():
        before = stored.get(task_id)
        task.run_id = run_of(task_id)
        if task.run_id != task_id and (before is None or before.run_id in (None, task_id)):
            reassign.append(Reassign(task_id, task.run_id))
    unknown -= batch.keys()
    return reassign, unknown


# ---- the tree of a run ----------------------------------------------------------------------

CHILDREN_SHOWN = 50
"""Children drawn under one span before the rest collapse into a "N more" row."""
DEPTH_SHOWN = 12
"""Levels drawn below the focused span before deeper ones collapse."""
ROWS_SHOWN = 300
"""Rows drawn in all; the rest of the run collapses into counts that load on demand."""


@dataclass
class Node:
    """One span of a run as the tree draws it."""

    task: TaskState
    depth: int
    start_offset_ms: float | None
    children: list[Node] = field(default_factory=list)
    descendants: int = 0
    failed_below: int = 0
    """Failed spans anywhere under this one: a silent failure deep down shows at the top."""

    @property
    def task_id(self) -> str:
        return self.task.task_id

    @property
    def parent_id(self) -> str | None:
        return self.task.parent_task_id


@dataclass
class Row:
    """A drawn row: a span (`kind` "span") or a collapsed group of `hidden` spans: the children
    of `node` beyond `CHILDREN_SHOWN` ("children"), the levels below `node` ("deeper"), or
    everything from `node` on once `ROWS_SHOWN` rows are drawn ("rest"). `resume` is the first
    span a collapsed row hides, where its rows go on from (`rows` with `start`), within `node`'s
    subtree for "children" and "deeper"."""

    node: Node
    kind: str = "span"
    hidden: int = 0
    hidden_failed: int = 0
    resume: Node | None = None


@lru_cache(maxsize=4096)
def _ms(ts: str | None) -> float | None:
    """Milliseconds since the epoch of a stored time (ISO 8601, `models.iso`), None for none.
    Remembered: a run's answer places each span against its root's start, loose and then in
    its tree."""
    return datetime.fromisoformat(ts).timestamp() * 1000 if ts else None


def start_offset(task: TaskState, origin: TaskState) -> float | None:
    """Milliseconds from the start of `origin` (a run's root) to `task`'s, as the tree
    places a span (None where either start is unknown)."""
    begin, start = _ms(task.started_at), _ms(origin.started_at)
    return None if begin is None or start is None else max(0.0, begin - start)


def _start_order(task: TaskState) -> tuple[str, str, str, str]:
    """Siblings by start; times are kept to the millisecond, so siblings that started in the
    same one go in the order they were recorded (`TaskState.recorded`), then (stored before
    that was kept) by end: a call that finished before the next began comes first."""
    return task.sort_ts, task.recorded or "~", task.ended_at or "~", task.task_id


def span_key(task: TaskState) -> tuple[str, str]:
    """Where a span comes in its run's start order, the order the stores keep (and page)
    a run's spans in: by start, then id."""
    return task.sort_ts, task.task_id


def build_tree(root: TaskState, tasks: Iterable[TaskState], *, origin: TaskState | None = None,
               depth: int = 0) -> Node:
    """The run's tree from its root and the other tasks recorded under it; a task whose parent
    is not among them hangs under the root (its parent has not arrived), so nothing is lost.
    The tree of a subtree (`root` a span `depth` levels down) measures its start offsets from
    the run's root, `origin`."""
    nodes = {t.task_id: t for t in tasks if t.task_id != root.task_id}
    begins = {task_id: _ms(t.started_at) for task_id, t in nodes.items()}
    start = _ms((origin or root).started_at) or min(
        (v for v in begins.values() if v is not None), default=None)
    children: dict[str, list[TaskState]] = {}
    for task in nodes.values():
        parent = task.parent_task_id
        if parent not in nodes and parent != root.task_id:
            parent = root.task_id
        children.setdefault(parent or root.task_id, []).append(task)
    for kids in children.values():
        kids.sort(key=_start_order)

    def offset(begin: float | None) -> float | None:
        return None if begin is None or start is None else max(0.0, begin - start)

    top = Node(root, depth, offset(_ms(root.started_at)))
    stack = [top]
    placed: list[tuple[Node, Node]] = []  # (node, its parent), every parent before its children
    seen = {root.task_id}
    while stack:
        node = stack.pop()
        for kid in children.get(node.task_id, []):
            if kid.task_id in seen:
                continue
            seen.add(kid.task_id)
            child = Node(kid, node.depth + 1, offset(begins[kid.task_id]))
            node.children.append(child)
            placed.append((child, node))
            stack.append(child)
    for child, above in reversed(placed):
        above.descendants += 1 + child.descendants
        above.failed_below += (child.task.status == "failed") + child.failed_below
    return top


def subtree(top: str, tasks: Iterable[TaskState]) -> list[TaskState]:
    """The tasks of `tasks` (in start order) under `top`: those whose parent is `top` or one
    kept before them. From a bounded read of a run from `top`'s start on, that is the first
    spans of its subtree as far as the read reaches (a span starts no earlier than its parent;
    spans of other subtrees that run alongside share the read), without reading the run."""
    kept = {top}
    out = []
    for task in tasks:
        if task.parent_task_id in kept and task.task_id not in kept:
            kept.add(task.task_id)
            out.append(task)
    return out


def find(node: Node, task_id: str) -> Node | None:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.task_id == task_id:
            return current
        stack.extend(current.children)
    return None


def walk(node: Node) -> Iterable[Node]:
    """Every node under and including `node`, in drawing order (depth first, by start)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def rows(focus: Node, *, expand: Callable[[Node], bool] = lambda _: False,
         start: Node | None = None, children_shown: int = CHILDREN_SHOWN,
         depth_shown: int = DEPTH_SHOWN, rows_shown: int = ROWS_SHOWN) -> list[Row]:
    """The rows drawn for the subtree at `focus`: children beyond `children_shown` (unless
    `expand` says so), levels beyond `depth_shown` and rows beyond `rows_shown` collapse into
    rows that count what they hide, so a run of any size draws in bounded time. From `start`
    (a span under `focus`) the rows go on from it to the end of `focus`'s subtree, as if those
    before it were drawn (every later sibling of its ancestors in turn): a collapsed row's way
    on, which leads on again wherever it collapses."""
    out: list[Row] = []
    stack: list[Node | Row] = [focus] if start is None else _resumed(focus, start)
    base = (start or focus).depth
    while stack:
        item = stack.pop()
        if isinstance(item, Row):
            out.append(item)
            continue
        if len(out) >= rows_shown:
            rest = [item, *(i for i in stack if isinstance(i, Node))]
            out.append(Row(item, "rest", hidden=sum(1 + n.descendants for n in rest),
                           hidden_failed=sum(_failed(n) for n in rest), resume=item))
            break
        out.append(Row(item))
        if not item.children:
            continue
        if item.depth - base >= depth_shown:
            out.append(Row(item, "deeper", hidden=item.descendants,
                           hidden_failed=item.failed_below, resume=item.children[0]))
            continue
        kids = item.children if expand(item) else item.children[:children_shown]
        extra = item.children[len(kids):]
        if extra:
            stack.append(Row(item, "children", hidden=sum(1 + c.descendants for c in extra),
                             hidden_failed=sum(_failed(c) for c in extra), resume=extra[0]))
        stack.extend(reversed(kids))
    return out


def path(top: Node, task_id: str) -> list[Node] | None:
    """The nodes from `top` down to the span `task_id`, both included; None if it is not under
    `top`."""
    stack = [(top, [top])]
    while stack:
        node, trail = stack.pop()
        if node.task_id == task_id:
            return trail
        stack.extend((child, [*trail, child]) for child in node.children)
    return None


def _resumed(top: Node, start: Node) -> list[Node | Row]:
    """The drawing stack at `start` (under `top`): what comes after it, then itself."""
    found = path(top, start.task_id) or [start]
    stack: list[Node | Row] = []
    for above, below in zip(found, found[1:], strict=False):
        stack.extend(reversed(above.children[above.children.index(below) + 1:]))
    stack.append(start)
    return stack


def _failed(node: Node) -> int:
    """Failed spans in the subtree at `node`, itself included."""
    return (node.task.status == "failed") + node.failed_below


def parent_ids(events: Iterable[Any]) -> set[str]:
    """The parents that `CleanEvent`s name, whose stored runs their tasks take."""
    return {e.body["parent_task_id"] for e in events if e.body.get("parent_task_id")}
