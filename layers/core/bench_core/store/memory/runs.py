"""Runs in memory (`bench_core.domain.runs`): a run's spans are the agent's tasks carrying its
run id, read in start order a page at a time; the runs list filters the roots by the domain's
own rule (`RunFilter.keeps`, each root with its run's spans)."""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from ...domain.models import TASK_CONTENT, AgentRef, TaskState
from ...domain.run_list import RunFilter
from ...domain.runs import span_key
from ...domain.sessions import SessionFilter, SessionRun, SessionStats, list_key, turn_order
from ...ports.store import (
    FAILURES_KEPT,
    RunCounts,
    RunHead,
    RunsPage,
    SessionsPage,
    decode_cursor,
    encode_cursor,
    sorted_page,
)
from .ingest import started
from .state import Concern, copied, live_agent, read_insights, read_task


def _light(task: TaskState) -> TaskState:
    """A copy without content (`TASK_CONTENT`: inputs, outputs, metadata, logs): a tree's
    rows."""
    light = dataclasses.replace(task, eval=copied(task.eval), evidence=copied(task.evidence))
    for name in TASK_CONTENT:
        setattr(light, name, [] if name == "logs" else None)
    return light


class MemoryRuns(Concern):
    def run_head(self, ref: AgentRef, task_id: str) -> RunHead:
        with self.memory.locked() as tables:
            return RunHead(live_agent(tables, ref, self.rules.now()), read_task(tables, ref, task_id),
                           read_insights(tables, ref))

    def run_spans(self, ref: AgentRef, run: TaskState, *, limit: int,
                  after: tuple[str, str] | None = None, content: bool = True,
                  inputs: bool = True, outputs: bool = True) -> list[TaskState]:
        with self.memory.locked() as tables:
            spans = sorted(self._under(started(tables, ref), run), key=span_key)
            page = [t for t in spans if span_key(t) > (after or ("", ""))][:limit]
            return [copied(t) if content else _light(t) for t in page]

    def run_counts(self, ref: AgentRef, run: TaskState) -> RunCounts:
        with self.memory.locked() as tables:
            spans = self._under(started(tables, ref), run)
        failed = sorted((t for t in spans if t.status == "failed"), key=span_key)
        return RunCounts(len(spans), len(failed), failed[0].task_id if failed else None,
                         tuple(span_key(t) for t in failed[:FAILURES_KEPT]))

    def list_runs(self, ref: AgentRef, where: RunFilter, *, limit: int = 50,
                  cursor: str | None = None) -> RunsPage:
        with self.memory.locked() as tables:
            tasks = started(tables, ref)
            spans: dict[str, list[TaskState]] = defaultdict(list)
            for task in tasks if where.by_spans else ():
                if task.run_id is not None and task.run_id != task.task_id:
                    spans[task.run_id].append(task)
            kept = [t for t in tasks
                    if t.parent_task_id is None and where.keeps(t, spans[t.task_id])]
            found = sorted_page(where, kept, cursor, limit)
            return RunsPage([copied(t) for t in found.runs], found.next_cursor)

    def session_runs(self, ref: AgentRef, session_id: str, *, limit: int
                     ) -> tuple[SessionStats | None, list[SessionRun]]:
        with self.memory.locked() as tables:
            kept = copied(tables.sessions.get(ref, {}).get(session_id))
            runs = sorted((t for t in started(tables, ref) if t.parent_task_id is None
                           and t.session_id == session_id and t.finished), key=turn_order)
            return kept, [SessionRun.of_task(t) for t in runs[:limit]]

    def list_sessions(self, ref: AgentRef, where: SessionFilter, *, limit: int,
                      cursor: str | None = None) -> SessionsPage:
        before = decode_cursor(cursor)[0] if cursor else None
        with self.memory.locked() as tables:
            kept = sorted((copied(s) for s in tables.sessions.get(ref, {}).values()
                           if where.holds(s) and (before is None or list_key(s) < before)),
                          key=list_key, reverse=True)
        more = len(kept) > limit
        return SessionsPage(kept[:limit], encode_cursor(list_key(kept[limit - 1])) if more else None)

    @staticmethod
    def _under(tasks: list[TaskState], run: TaskState) -> list[TaskState]:
        """The spans recorded under the root `run`, the root left out."""
        return [t for t in tasks if t.run_id == run.task_id and t.task_id != run.task_id]
