"""Ingest and tasks on DynamoDB: a batch's events, the tasks and day counters they fold into,
and their reads (the meaning of a batch is `bench_core.domain.folding`; SQLite's adapter makes
the same writes atomic with one lock).

Items (pk, sk [gsi1pk, gsi1sk] [gsi2pk, gsi2sk]; `A` is `{login}#{slug}`):

- task:             AGENT#{A}, TASK#{task_id}  [TASKS#{A}#{L}, {sort_ts}#{task_id}]
                    [TSTATUS#{A}#{L}#{status}, {sort_ts}#{task_id}]
                    where `L` is ROOT for a root task, else P#{parent_task_id}
- event (dedupe):   AGENT#{A}, EV#{event_id}  [EVENTS#{A}, {ts}#{event_id}]
                    [TASKEV#{A}#{task_id}, {ts}#{event_id}]
- day counters:     AGENT#{A}, DAY#{yyyy-mm-dd}

The agent item (`agents.py`) holds the counters (`runs`, `successes`, `failures`,
`cost_usd_total`, `dropped_events`) and the latency histogram as one number per bucket
(`h0`..`h89`), all changed only by atomic `ADD`, so concurrent batches never lose an update. A
parent known only from its subtasks is a placeholder task item without index keys.

How a batch is made atomic without SQLite's lock:
- Events already stored are found first (one consistent BatchGetItem) and counted as duplicates.
- The rest is written in as few TransactWriteItems as fit (100 items, 4 MB; normally one per
  batch): each event as a Put conditional on `attribute_not_exists(pk)`, each folded task as an
  Update conditional on the `version` it was folded from, and the run counters as ADDs. A batch
  that needs several transactions splits between tasks (or within a huge task); each part folds
  on the state the previous one left, and a retried batch finds the stored parts as duplicates.
- A cancelled transaction says why, item by item: an event that is there already is a duplicate
  (sent by a concurrent sender) and is dropped; a task whose version moved is read again and
  refolded. Retries are few and jittered; past them the caller gets 429 and resends safely.
- `first_event_at`/`last_event_at` are moved only outward, by conditional SETs.

Reads use the base table for one item or one agent's days (strongly consistent) and the GSIs
for listings (eventually consistent, like every GSI). Nothing scans.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from botocore.exceptions import ClientError

from ...domain.field_limits import dumps
from ...domain.folding import BatchFold, fold_batch, group_by_task
from ...domain.models import (
    AgentMeta,
    AgentRef,
    CleanEvent,
    IngestOutcome,
    TaskState,
    add_usage,
    iso,
    utcnow,
)
from ...domain.runs import parent_ids
from .. import decode_cursor, encode_cursor
from . import codec
from .client import MAX_ATTEMPTS, ConditionFailed, Table, busy, cancellation_reasons, code, pause
from .codec import AgentKeys, Update
from .leaderboard import DynamoLeaderboard
from .runs import move_runs

MAX_TRANSACTION_ITEMS = 100
MAX_TRANSACTION_BYTES = 3_000_000
"""Below DynamoDB's 4 MB per transaction, leaving room for keys and attribute names."""
_RETRYABLE = frozenset({"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded",
                        "RequestLimitExceeded"})
_LOWEST_SORT_TS = "0"
"""Every real sort_ts starts with a digit; keys below it belong to tasks seen only in logs."""


class DynamoIngest:
    """Batches and tasks, on `table`; `ranks` re-ranks an agent a batch changed. Events expire
    `retention_days` after their time (0: never; `retention.py`)."""

    def __init__(self, table: Table, ranks: DynamoLeaderboard, retention_days: int) -> None:
        self.table = table
        self.ranks = ranks
        self.retention_days = retention_days

    def ingest(self, login: str, meta: AgentMeta, events: list[CleanEvent],
               dropped: int = 0) -> IngestOutcome:
        agent = AgentKeys(login, meta.slug)
        firsts: dict[str, CleanEvent] = {}
        for event in events:
            firsts.setdefault(event.id, event)
        stored = {item["sk"][len(codec.EVENT):] for item in self.table.batch_get(
            [agent.key(codec.EVENT + event_id) for event_id in firsts], only_keys=True)}
        fresh = [e for e in firsts.values() if e.id not in stored]
        now = iso(utcnow())
        dropped = dropped if fresh or not events else 0  # a replayed batch reported them already
        old = self._upsert_agent(agent, meta, dropped, [e.ts for e in fresh], now)
        if not old:
            self.table.update(codec.user_upsert(login, now))
        agent = codec.temporary(agent, old)
        arrival = time.time_ns()
        write = _BatchWrite(self, agent, self.load_tasks(agent, _task_ids(fresh) | parent_ids(fresh)),
                            {e.id: e.body_json or dumps(e.body) for e in fresh},
                            {e.id: arrival + i for i, e in enumerate(fresh)},
                            self.retention_days)
        for unit in _units(fresh, write.bodies):
            write.commit(unit)
        if write.accepted or meta.updates():
            self.ranks.refresh(AgentRef(login, meta.slug))
        return IngestOutcome(accepted=len(write.accepted),
                             duplicates=len(events) - len(write.accepted),
                             finished=write.finished)

    def _upsert_agent(self, agent: AgentKeys, meta: AgentMeta, dropped: int, times: list[str],
                      now: str) -> dict[str, Any]:
        """Create or update the agent and widen its event window; the agent item as it was.

        Usually one write: a batch newer than the agent's last event moves `last_event_at`
        under a condition, and only an older batch takes the second write without it."""
        update = codec.agent_upsert(agent, meta, now, dropped)
        if not times:
            return self.table.update(update, returns="ALL_OLD")
        first, last = min(times), max(times)
        update.set_if_absent["first_event_at"] = first
        newer = replace(update, set={**update.set, "last_event_at": last},
                        condition="attribute_not_exists(#last_event_at) OR "
                                  "#last_event_at <= :last",
                        condition_values={":last": last})
        try:
            old = self.table.update(newer, returns="ALL_OLD")
        except ConditionFailed:
            old = self.table.update(update, returns="ALL_OLD")
        if old.get("first_event_at") and first < old["first_event_at"]:
            with contextlib.suppress(ConditionFailed):  # a concurrent batch went further back
                self.table.update(Update(agent.key(codec.META), set={"first_event_at": first},
                                    condition="#first_event_at > :first",
                                    condition_values={":first": first}))
        return old

    def load_tasks(self, agent: AgentKeys, task_ids: Iterable[str]) -> dict[str, TaskState]:
        items = self.table.batch_get([agent.key(codec.TASK + task_id) for task_id in task_ids])
        states = map(codec.task_from_item, items)
        return {state.task_id: state for state in states}

    # ---- reads: events and days ------------------------------------------------------------

    def recent_events(self, ref: AgentRef, limit: int) -> list[dict[str, Any]]:
        """Newest first. Events of one millisecond go by arrival, so the ones tied with the
        last kept are all read before cutting at `limit`."""
        if limit <= 0:
            return []
        items = self.table.query(AgentKeys(ref.login, ref.slug).events_pk, index="gsi1",
                                 forward=False, page=limit + 1)
        kept: list[dict[str, Any]] = []
        for item in items:
            ts = codec.event_order(item)[0]
            if len(kept) >= limit and ts != codec.event_order(kept[-1])[0]:
                break
            kept.append(item)
        kept.sort(key=codec.event_order, reverse=True)
        return [json.loads(item["body"]) for item in kept[:limit]]

    def daily(self, ref: AgentRef, since_day: str) -> list[dict[str, Any]]:
        items = self.table.query(AgentKeys(ref.login, ref.slug).pk,
                                 "#sk BETWEEN :since AND :end",
                                 since=codec.DAY + since_day, end="DAY$")
        return [codec.day_from_item(item) for item in items]

    # ---- tasks -----------------------------------------------------------------------------

    def task_events(self, ref: AgentRef, task_id: str) -> list[dict[str, Any]]:
        items = self.table.query(AgentKeys(ref.login, ref.slug).task_events_pk(task_id), index="gsi2")
        return [json.loads(item["body"]) for item in sorted(items, key=codec.event_order)]

    def get_task(self, ref: AgentRef, task_id: str) -> TaskState | None:
        item = self.table.get(AgentKeys(ref.login, ref.slug).key(codec.TASK + task_id))
        task = codec.task_from_item(item) if item else None
        return task if task and task.sort_ts else None

    def list_tasks(self, ref: AgentRef, *, parent: str | None = None, status: str | None = None,
                   limit: int = 50, cursor: str | None = None
                   ) -> tuple[list[TaskState], str | None]:
        agent = AgentKeys(ref.login, ref.slug)
        index, pk = (("gsi1", agent.tasks_pk(parent)) if status is None
                     else ("gsi2", agent.status_pk(parent, status)))
        if cursor:
            sort_ts, task_id = decode_cursor(cursor)
            after = codec.task_sort_key(sort_ts, task_id)
            items = self.table.query(pk, "#sk BETWEEN :low AND :after", index=index, forward=False,
                                page=limit + 2, low=_LOWEST_SORT_TS, after=after)
            items = (item for item in items if item[f"{index}sk"] != after)
        else:
            items = self.table.query(pk, "#sk >= :low", index=index, forward=False, page=limit + 1,
                                low=_LOWEST_SORT_TS)
        page = [codec.task_from_item(item) for item in itertools.islice(items, limit + 1)]
        tasks = page[:limit]
        more = len(page) > limit
        return tasks, (encode_cursor(tasks[-1].sort_ts, tasks[-1].task_id) if more else None)

    def subtask_ids(self, ref: AgentRef, task_ids: list[str]) -> dict[str, list[str]]:
        """One query per parent, run side by side: a page asks for all of its tasks at once."""
        agent = AgentKeys(ref.login, ref.slug)

        def children(parent: str) -> list[str]:
            items = self.table.query(agent.tasks_pk(parent), index="gsi1", projection="sk")
            return [item["sk"][len(codec.TASK):] for item in items]

        if not task_ids:
            return {}
        with ThreadPoolExecutor(max_workers=min(8, len(task_ids))) as pool:
            return dict(zip(task_ids, pool.map(children, task_ids), strict=True))


# ---- the write of one batch -----------------------------------------------------------------


@dataclass
class _Plan:
    """One transaction: its events' Puts come first, so cancellation reason i < len(events)
    is about events[i]."""

    events: list[CleanEvent]
    actions: list[dict[str, Any]]
    fold: BatchFold


@dataclass
class _BatchWrite:
    """The fresh events of one batch, written unit by unit on the task states read so far.
    `bodies` holds each event's JSON; `seqs` numbers the events in batch order (see
    `codec.event_item`); they expire `retention_days` after their time (`codec.event_expiry`)."""

    store: DynamoIngest
    agent: AgentKeys
    states: dict[str, TaskState]
    bodies: dict[str, str]
    seqs: dict[str, int]
    retention_days: int
    accepted: list[CleanEvent] = field(default_factory=list)
    finished: list[tuple[str, bool]] = field(default_factory=list)

    def commit(self, unit: list[CleanEvent]) -> None:
        for attempt in range(MAX_ATTEMPTS):
            plan = self._plan(unit)
            try:
                self.store.table.transact(plan.actions)
            except ClientError as exc:
                if code(exc) != "TransactionCanceledException":
                    raise
                unit = self._after_cancel(exc, plan, attempt)
                if not unit:
                    return
                continue
            moves = [m for m in plan.fold.reassign
                     if (held := self.states.get(m.old)) is not None and held.run_id == m.old]
            self._applied(plan)
            move_runs(self.store.table, self.agent, moves)
            return
        raise busy()

    def _plan(self, unit: list[CleanEvent]) -> _Plan:
        table, agent = self.store.table.name, self.agent
        fold = fold_batch(self.states, unit)
        updates = [codec.task_update(agent, self.states.get(task_id), task)
                   for task_id, task in fold.tasks.items()]
        updates += [codec.child_cost_update(agent, parent, fold.child_costs.get(parent, 0.0),
                                            fold.child_evidence.get(parent),
                                            run_holder=parent in fold.unknown_parents)
                    for parent in _untouched_parents(fold)]
        updates += codec.run_updates(agent, [delta for _, delta in fold.runs], fold.evidence)
        puts = [self.store.table.put_action(codec.event_item(
            agent, e, self.bodies[e.id], self.seqs[e.id],
            codec.event_expiry(agent, e.ts, self.retention_days))) for e in unit]
        return _Plan(unit, puts + [{"Update": u.params(table)} for u in updates], fold)

    def _after_cancel(self, exc: ClientError, plan: _Plan, attempt: int) -> list[CleanEvent]:
        """The unit left to write: without the events a concurrent sender stored first, and
        folded again on fresh task states if anything else got in the way."""
        reasons = cancellation_reasons(exc)
        if any(code not in _RETRYABLE | {"None", "ConditionalCheckFailed"} for code in reasons):
            raise exc
        stored = {e.id for e, code in zip(plan.events, reasons, strict=False)
                  if code == "ConditionalCheckFailed"}
        unit = [e for e in plan.events if e.id not in stored]
        if unit:
            task_ids = _task_ids(unit) | parent_ids(unit)
            for task_id in task_ids:
                self.states.pop(task_id, None)
            self.states |= self.store.load_tasks(self.agent, task_ids)
            pause(attempt)
        return unit

    def _applied(self, plan: _Plan) -> None:
        """Keep the states in step with what was just written, for the units still to come."""
        for task_id, task in plan.fold.tasks.items():
            before = self.states.get(task_id)
            self.states[task_id] = replace(task, version=(before.version if before else 0) + 1)
        fold = plan.fold
        for parent in _untouched_parents(fold):
            before = self.states.get(parent) or TaskState(task_id=parent)
            self.states[parent] = replace(
                before, child_cost_usd=before.child_cost_usd + fold.child_costs.get(parent, 0.0),
                evidence=add_usage(before.evidence, fold.child_evidence.get(parent)),
                run_id=parent if parent in fold.unknown_parents else before.run_id,
                version=before.version + 1)
        self.accepted += plan.events
        self.finished += plan.fold.finished


def _untouched_parents(fold: BatchFold) -> set[str]:
    """Parents the batch writes without folding: owed cost or evidence, or holding a run."""
    return fold.child_costs.keys() | fold.child_evidence.keys() | fold.unknown_parents


def _units(events: list[CleanEvent], bodies: dict[str, str]) -> Iterator[list[CleanEvent]]:
    """The events in transactions DynamoDB accepts: whole tasks together where they fit, one
    task's events split in order where it alone is too big. Costs are counted generously: a
    task's item can be as large as its events, and it may add a parent, a day and the agent."""
    pieces = [piece for group in group_by_task(events).values()
              for piece in _pieces(group, bodies, overhead=3)]
    pieces += _pieces([e for e in events if not _is_task_event(e)], bodies, overhead=0)
    unit: list[CleanEvent] = []
    items = size = 0
    for piece, piece_items, piece_size in pieces:
        if unit and (items + piece_items > MAX_TRANSACTION_ITEMS - 1
                     or size + piece_size > MAX_TRANSACTION_BYTES):
            yield unit
            unit, items, size = [], 0, 0
        unit += piece
        items += piece_items
        size += piece_size
    if unit:
        yield unit


def _is_task_event(event: CleanEvent) -> bool:
    """What `folding.group_by_task` folds: the other events are only stored."""
    return event.task_id is not None and event.kind.startswith("task.")


def _task_ids(events: Iterable[CleanEvent]) -> set[str]:
    return {e.task_id for e in events if e.task_id is not None and _is_task_event(e)}


def _pieces(events: list[CleanEvent], bodies: dict[str, str], overhead: int
            ) -> Iterator[tuple[list[CleanEvent], int, int]]:
    """Runs of `events` that fit one transaction: (events, items, estimated bytes)."""
    piece: list[CleanEvent] = []
    size = 0
    for event in events:
        event_size = 2 * (len(bodies[event.id].encode()) + 200)
        if piece and (len(piece) + overhead >= MAX_TRANSACTION_ITEMS - 1
                      or size + event_size > MAX_TRANSACTION_BYTES):
            yield piece, len(piece) + overhead, size
            piece, size = [], 0
        piece.append(event)
        size += event_size
    if piece:
        yield piece, len(piece) + overhead, size
