"""Ingest in memory: events deduped by id, folded into tasks (bench_core.domain.folding), the
agent's counters and days updated, under the store's lock, everything computed before the
first change so that a refused batch writes nothing; and the reads of what it wrote."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ...domain.field_limits import dumps, within_task_limit
from ...domain.folding import Owed, fold_batch, newest_runs, owe_session, owing_parents
from ...domain.models import (
    LATEST_RUNS,
    AgentMeta,
    AgentRef,
    CleanEvent,
    IngestOutcome,
    IngestWrite,
    RunDelta,
    RunRef,
    TaskState,
    Usage,
    add_usage,
)
from ...domain.privacy import new_agent
from ...domain.runs import parent_ids
from ...domain.sessions import SessionStats, merged, runs_by_session
from ...domain.stats import bucket_index
from ...domain.timeseries import batch_buckets
from ...domain.versions import VersionStats, runs_by_version
from ...ports.store import decode_cursor, encode_cursor, one_by_one
from .state import (
    AgentRow,
    Concern,
    StoredEvent,
    Tables,
    User,
    admit_agent,
    copied,
    live_agent,
    load,
    new_row,
    read_task,
    refresh_rank,
)
from .timeseries import add_series


def newest_first(tasks: list[TaskState], cursor: str | None, limit: int
                 ) -> tuple[list[TaskState], str | None]:
    """One page of `tasks` (stored ones: copied here), newest first, with the cursor of the
    next page (None on the last)."""
    ordered = sorted(tasks, key=lambda t: (t.sort_ts, t.task_id), reverse=True)
    if cursor:
        sort_ts, task_id = decode_cursor(cursor)
        ordered = [t for t in ordered if (t.sort_ts, t.task_id) < (sort_ts, task_id)]
    page = [copied(t) for t in ordered[:limit]]
    more = len(ordered) > limit
    return page, (encode_cursor(page[-1].sort_ts, page[-1].task_id) if more else None)


def started(tables: Tables, ref: AgentRef) -> list[TaskState]:
    """The agent's tasks that started or ended (no placeholder parents)."""
    return [t for t in tables.tasks.get(ref, {}).values() if t.sort_ts]


def add_version_runs(tables: Tables, ref: AgentRef, runs: list[RunDelta]) -> None:
    """What a batch's runs add to their versions' counters (`domain.versions`)."""
    kept = tables.versions.setdefault(ref, {})
    for version, added in runs_by_version(runs).items():
        kept.setdefault(version, VersionStats(version)).add(added)


def add_session_runs(tables: Tables, ref: AgentRef, runs: list[RunDelta]) -> None:
    """What a batch's runs add to their sessions' counters (`domain.sessions`)."""
    kept = tables.sessions.setdefault(ref, {})
    for session_id, added in runs_by_session(runs).items():
        kept[session_id] = merged(kept.get(session_id, SessionStats(session_id)), added)


def _new_events(stored: dict[str, StoredEvent], events: list[CleanEvent]) -> list[CleanEvent]:
    """The events not stored yet, in batch order; a repeated id within the batch counts once."""
    seen: set[str] = set()
    fresh = []
    for event in events:
        if event.id not in stored and event.id not in seen:
            seen.add(event.id)
            fresh.append(event)
    return fresh


def _held(stored: dict[str, StoredEvent], fresh: list[CleanEvent]) -> dict[str, int]:
    """How many events each task of `fresh` would hold with them."""
    counts: dict[str, int] = {}
    for event in fresh:
        if event.task_id is not None:
            counts[event.task_id] = counts.get(event.task_id, 0) + 1
    for held in stored.values():
        if held.task_id in counts:
            counts[held.task_id] += 1
    return counts


class MemoryIngest(Concern):
    def ingest_many(self, writes: Sequence[IngestWrite]) -> list[IngestOutcome | Exception]:
        return one_by_one(self, writes)

    def ingest(self, login: str, meta: AgentMeta, events: list[CleanEvent],
               dropped: int = 0) -> IngestOutcome:
        ref = AgentRef(login, meta.slug)
        with self.memory.locked() as tables:
            if ref not in tables.agents:
                admit_agent(tables, login, self.rules.max_agents_per_account)
            fresh = _new_events(tables.events.get(ref, {}), events)
            within_task_limit(_held(tables.events.get(ref, {}), fresh))
            tasks = tables.tasks.get(ref, {})
            wanted = {e.task_id for e in fresh if e.task_id and e.kind.startswith("task.")}
            states = {tid: copied(tasks[tid]) for tid in wanted | parent_ids(fresh)
                      if tid in tasks}
            fold = fold_batch(states, fresh, meta.version)
            row = self._ensure_agent(tables, ref, meta)
            self._store_events(tables, ref, fresh)
            self._save_tasks(tables.tasks.setdefault(ref, {}), fold.tasks.values())
            for moved in fold.reassign:
                for task in tables.tasks[ref].values():
                    if task.run_id == moved.old:
                        task.run_id = moved.new
            for parent in owing_parents(fold):
                self._add_child_cost(tables.tasks[ref], parent, fold.child_costs.get(parent, 0.0),
                                     fold.child_evidence.get(parent),
                                     fold.child_sessions.get(parent))
            self._apply_runs(tables, row, [delta for _, delta in fold.runs], newest_runs(fold),
                             fresh, dropped if fresh or not events else 0)  # a replay counts once
            self._apply_evidence(row, fold.evidence)
            add_version_runs(tables, ref, [delta for _, delta in fold.runs])
            add_series(tables, ref, batch_buckets(
                [fold.tasks[task_id] for task_id, _ in fold.runs], fresh))
            add_session_runs(tables, ref, [delta for _, delta in fold.runs])
            refresh_rank(row, self.rules)
            agent = live_agent(tables, ref, self.rules.now())
        return IngestOutcome(accepted=len(fresh), duplicates=len(events) - len(fresh),
                             finished=fold.finished, agent=agent)

    def _ensure_agent(self, tables: Tables, ref: AgentRef, meta: AgentMeta) -> AgentRow:
        now = self.rules.now()
        tables.users.setdefault(ref.login, User(now))
        row = tables.agents.get(ref)
        if row is None:
            row = tables.agents[ref] = new_row(new_agent(ref.login, ref.slug, now))
        for name, value in meta.updates().items():
            setattr(row.agent, name, copied(value))
        return row

    def _store_events(self, tables: Tables, ref: AgentRef, fresh: list[CleanEvent]) -> None:
        stored = tables.events.setdefault(ref, {})
        for e in fresh:
            stored[e.id] = StoredEvent(self.memory.next_seq(), e.ts, e.task_id,
                                       e.body_json or dumps(e.body))

    def _save_tasks(self, tasks: dict[str, TaskState], folded: Iterable[TaskState]) -> None:
        """Each folded task replaces its stored one, one version on (a new one starts at 0)."""
        for task in folded:
            before = tasks.get(task.task_id)
            kept = copied(task)
            kept.version = 0 if before is None else before.version + 1
            tasks[task.task_id] = kept

    def _add_child_cost(self, tasks: dict[str, TaskState], parent: str, amount: float,
                        evidence: Usage | None, session: Owed | None) -> None:
        """A parent not seen yet gets a placeholder; its start and end fill it in later."""
        task = tasks[parent] = owe_session(tasks.get(parent) or TaskState(task_id=parent),
                                           session)
        task.child_cost_usd += amount
        task.evidence = add_usage(task.evidence, copied(evidence))

    def _apply_evidence(self, row: AgentRow, total: Usage | None) -> None:
        """The batch's evidence records, added to the agent's totals."""
        if total is None:
            return
        s = row.agent.stats
        s.evidence_cost_usd_total += total.cost_usd or 0.0
        s.evidence_input_tokens += total.input_tokens or 0
        s.evidence_output_tokens += total.output_tokens or 0
        s.evidence_calls += total.calls
        s.evidence_unpriced_calls += total.unpriced_calls

    def _apply_runs(self, tables: Tables, row: AgentRow, runs: list[RunDelta],
                    newest: dict[str, RunRef], fresh: list[CleanEvent], dropped: int) -> None:
        """The runs' counters and days, the event window widened, and the agent's newest runs
        replaced by the batch's where they are newer (`RunRef.replaces`)."""
        if not fresh and not dropped:
            return
        s = row.agent.stats
        for run in runs:
            if run.duration_ms is not None:
                s.latency_hist[bucket_index(run.duration_ms)] += 1
        times = [e.ts for e in fresh]
        s.first_event_at = min([t for t in (s.first_event_at, *times) if t], default=None)
        s.last_event_at = max([t for t in (s.last_event_at, *times) if t], default=None)
        ok = sum(r.success for r in runs)
        s.runs += len(runs)
        s.successes += ok
        s.failures += len(runs) - ok
        s.cost_usd_total += sum(r.cost_usd for r in runs)
        s.dropped_events += dropped
        for name in LATEST_RUNS:
            candidate = newest.get(name)
            if candidate is not None and candidate.replaces(getattr(s, name)):
                setattr(s, name, candidate)
        days = tables.days.setdefault(row.agent.ref, {})
        for run in runs:
            day = days.setdefault(run.day, {"day": run.day, "runs": 0, "successes": 0,
                                            "failures": 0, "cost_usd": 0.0})
            day["runs"] += 1
            day["successes" if run.success else "failures"] += 1
            day["cost_usd"] += run.cost_usd

    # ---- reads -----------------------------------------------------------------------------

    def recent_events(self, ref: AgentRef, limit: int) -> list[dict[str, Any]]:
        with self.memory.locked() as tables:
            events = sorted(tables.events.get(ref, {}).values(), key=lambda e: (e.ts, e.seq),
                            reverse=True)
            return [load(e.body) for e in events[:limit]]

    def task_events(self, ref: AgentRef, task_id: str) -> list[dict[str, Any]]:
        with self.memory.locked() as tables:
            events = sorted((e for e in tables.events.get(ref, {}).values()
                             if e.task_id == task_id), key=lambda e: (e.ts, e.seq))
            return [load(e.body) for e in events]

    def get_task(self, ref: AgentRef, task_id: str, *, consistent: bool = True
                 ) -> TaskState | None:
        with self.memory.locked() as tables:
            return read_task(tables, ref, task_id)

    def list_tasks(self, ref: AgentRef, *, parent: str | None = None, status: str | None = None,
                   limit: int = 50, cursor: str | None = None
                   ) -> tuple[list[TaskState], str | None]:
        with self.memory.locked() as tables:
            return newest_first([t for t in started(tables, ref) if t.parent_task_id == parent
                                 and (status is None or t.status == status)], cursor, limit)

    def subtask_ids(self, ref: AgentRef, task_ids: list[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {tid: [] for tid in task_ids}
        with self.memory.locked() as tables:
            children = sorted((t for t in tables.tasks.get(ref, {}).values()
                               if t.parent_task_id in out), key=lambda t: (t.sort_ts, t.task_id))
        for child in children:
            out[child.parent_task_id or ""].append(child.task_id)
        return out

    def daily(self, ref: AgentRef, since_day: str) -> list[dict[str, Any]]:
        with self.memory.locked() as tables:
            days = tables.days.get(ref, {})
            return [dict(days[day]) for day in sorted(days) if day >= since_day]
