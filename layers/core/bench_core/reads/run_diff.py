"""Two runs of one agent compared (the diff page and its JSON twin), through the privacy gate.

Each run is read a bounded page at a time (`RunStore.run_spans`, `CONTENT_READ` spans a read)
up to its first `DIFF_SPANS` spans in start order; content is kept only as a digest and a
short preview of what the viewer may see of it (`domain.privacy.Sight`), so the diff of two
big runs holds two pages of spans' rows, never their content. A run with more spans is
compared on its first `DIFF_SPANS`, and the answer says so (`cut`).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

from ..domain.errors import NotFound
from ..domain.field_limits import dumps
from ..domain.models import Agent, AgentRef, TaskState
from ..domain.privacy import Sight, Viewer, visible_agent
from ..domain.run_diff import DiffRow, Facts, Shown, diff
from ..domain.run_list import RunFilter
from ..domain.runs import Node, span_key
from ..ports.store import encode_cursor
from .agents import agent_summary
from .runs import CONTENT_READ, Run, RunReads, run_header

PREVIOUS_PAGES = 5
"""Pages of the runs list looked through for a run's previous one (a DynamoDB page examines a
bounded number of runs, so a name run rarely may not be found in a busy agent's list)."""
DIFF_SPANS = 1000
"""Spans of each run compared at most (below its root), the first in start order."""
PREVIEW_CHARS = 240
"""What the diff shows of a changed input or output, where the viewer may see it."""


def run_diff(store: RunReads, ref: AgentRef, viewer: Viewer, a: str, b: str) -> dict[str, Any]:
    """Run `a` against run `b` (`domain.run_diff`): both headers, their deltas, and the rows
    of the diff, each naming what changed; 404 alike for a run that is not the agent's or a
    span that is not a run."""
    head = store.runs.run_head(ref, a)
    agent = visible_agent(head.agent, viewer)
    sight = Sight.of(agent, viewer)
    left = _side(store, agent, viewer, sight, head.task)
    right = _side(store, agent, viewer, sight, store.ingest.get_task(agent.ref, b))
    found = diff(left["tree"], right["tree"], left["shown"], right["shown"])
    first = found.first_divergence
    return {"agent": agent_summary(agent, viewer), "a": left["header"], "b": right["header"],
            "deltas": _deltas(left["header"], right["header"]),
            "rows": [_row(r, i) for i, r in enumerate(found.rows)],
            "first_divergence": first, "counts": found.counts,
            "limit": DIFF_SPANS, "cut": left["cut"] or right["cut"],
            "content_compared": {"inputs": sight.inputs, "outputs": sight.outputs}}


def previous_run(store: RunReads, ref: AgentRef, viewer: Viewer, task_id: str) -> str:
    """The id of the newest run that started before run `task_id` under the same name (what
    its page compares it with); 404 if the runs list holds none as far as it looks."""
    head = store.runs.run_head(ref, task_id)
    agent = visible_agent(head.agent, viewer)
    root = head.task
    if root is None or root.parent_task_id is not None:
        raise NotFound("run not found")
    where = RunFilter(name=root.name)
    cursor: str | None = encode_cursor(root.sort_ts, root.task_id)
    for _ in range(PREVIOUS_PAGES):
        found = store.runs.list_runs(agent.ref, where, limit=1, cursor=cursor)
        if found.runs:
            return found.runs[0].task_id
        cursor = found.next_cursor
        if cursor is None:
            break
    raise NotFound(f"no earlier run named {root.name or 'run'}")


def _side(store: RunReads, agent: Agent, viewer: Viewer, sight: Sight,
          root: TaskState | None) -> dict[str, Any]:
    """One run read for the diff: its header, its tree of rows and what its viewer may see
    of each span's content."""
    if root is None or root.parent_task_id is not None:
        raise NotFound("run not found")
    shown = {root.task_id: _shown(root, sight)}
    kept: list[TaskState] = []
    after: tuple[str, str] | None = None
    while len(kept) < DIFF_SPANS:
        want = min(CONTENT_READ, DIFF_SPANS - len(kept))
        # content only for who may see it: a visitor's diff reads the spans' rows alone
        page = store.runs.run_spans(agent.ref, root, limit=want, after=after,
                                    content=sight.inputs or sight.outputs,
                                    inputs=sight.inputs, outputs=sight.outputs)
        for task in page:
            shown[task.task_id] = _shown(task, sight)
            kept.append(_bare(task))
        if len(page) < want:
            break
        after = span_key(page[-1])
    full = len(kept) >= DIFF_SPANS
    counts = store.runs.run_counts(agent.ref, root) if full else None
    run = Run(agent, _bare(root), kept, None, counts)
    header = {**run_header(run, viewer), "compared_spans": len(kept) + 1}
    return {"tree": run.tree, "shown": shown, "header": header,
            "cut": counts is not None and counts.spans > len(kept)}


def _bare(task: TaskState) -> TaskState:
    """The task without its content (what the diff keeps of it besides `Shown`)."""
    return replace(task, input=None, output=None, metadata=None, logs=[])


def _shown(task: TaskState, sight: Sight) -> Shown:
    """A span's input and output as `sight` lets its viewer see them: digests and previews."""
    given = dumps(task.input) if sight.inputs else None
    made = dumps(task.output) if sight.outputs else None
    return Shown(_digest(given), _digest(made), _preview(given), _preview(made))


def _digest(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


def _preview(text: str | None) -> str | None:
    if text is None:
        return None
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"


def _deltas(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """B minus A of the run's headline numbers (None where either is unknown)."""
    def tokens(header: dict[str, Any], name: str) -> int | None:
        evidence = header["evidence"]
        return evidence.get(name) if evidence else None

    def minus(x: float | None, y: float | None) -> float | None:
        return None if x is None or y is None else y - x

    def score(header: dict[str, Any]) -> float | None:
        verdict = header["eval"]
        return verdict.get("score") if verdict and verdict.get("status") == "scored" else None

    return {"duration_ms": minus(a["duration_ms"], b["duration_ms"]),
            "headline_cost_usd": minus(a["headline_cost_usd"], b["headline_cost_usd"]),
            "input_tokens": minus(tokens(a, "input_tokens"), tokens(b, "input_tokens")),
            "output_tokens": minus(tokens(a, "output_tokens"), tokens(b, "output_tokens")),
            "span_count": b["span_count"] - a["span_count"],
            "failed_spans": b["failed_spans"] - a["failed_spans"],
            "score": minus(score(a), score(b))}


def _row(row: DiffRow, index: int) -> dict[str, Any]:
    """One row of the answer; the previews of an input or output only where it changed."""
    return {"index": index, "kind": row.kind, "depth": row.depth, "name": row.name,
            "changes": list(row.changes), "duration_delta_ms": row.duration_delta_ms,
            "a": _span(row.facts_a, row.a, row.shown_a, row.changes),
            "b": _span(row.facts_b, row.b, row.shown_b, row.changes)}


def _span(facts: Facts | None, node: Node | None, shown: Shown, changed: tuple[str, ...]
          ) -> dict[str, Any] | None:
    if facts is None or node is None:
        return None
    return {"task_id": node.task_id, "status": facts.status, "duration_ms": facts.duration_ms,
            "headline_cost_usd": facts.cost_usd, "input_tokens": facts.input_tokens,
            "output_tokens": facts.output_tokens, "model": facts.model,
            "input": shown.input_preview if "input" in changed else None,
            "output": shown.output_preview if "output" in changed else None}
