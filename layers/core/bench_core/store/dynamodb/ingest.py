"""Ingest and tasks on DynamoDB: a batch's events, the tasks and day counters they fold into,
and their reads (the meaning of a batch is `bench_core.domain.folding`; SQLite's adapter makes
the same writes atomic with one lock).

Items (pk, sk [index keys]; `A` is `{login}#{slug}`, `P` one of the agent's partitions
`PART#{A}#{n}`, picked by a hash of the task's id, the page's key or the event's id:
`codec.keys`, which says why):

- task:           P, TASK#{task_id}  [a root: tasks: TASKS#{A}#ROOT, {sort_ts}#{task_id};
                  tstatus: TSTATUS#{A}#ROOT#{status}, {sort_ts}#{task_id}; below a root:
                  spans: RUN#{A}#{run_id}, {sort_ts}#{task_id} (`codec.spans`)]; `task` and
                  `content` hold its folded fields as JSON (`codec.tasks.task_fields`);
                  `seen` holds a `codec.tasks.digest` of its newest events, `pages` the pages
                  they are on (`codec.tasks.TaskLedger`)
- pack:           P, PACK#{trace_id}#{hash}  [spans: RUN#{A}#{run_id}, its first span's key]:
                  the spans of one trace a batch starts and ends that hand nothing up, on
                  one item instead of one each (`codec.packs`, `_packs`; read by `packs.py`)
- task chunks:    P, TASKX#{task_id}#S{n} and #P{n}: the older digests and page keys,
                  sealed, so a task item stays a few KB whatever its history
- event page:     P, B#{newest ts}#{unique}   events (JSON: [ts, seq, task, id, body])
- event claim:    P, EV#{event_id}   (an event of no task, claimed by its id)
- day counters:   AGENT#{A}, DAY#{yyyy-mm-dd}#{n}

The agent's counters (`runs`, `successes`, `failures`, `cost_usd_total`, `dropped_events`),
its latency histogram (one number per bucket, `h0`..`h89`), its newest runs and its event
window are on one of its counter shards (`codec.agents`: why), picked per batch, changed by
atomic `ADD`s and conditional SETs inside the batch's own transaction, so concurrent batches
never lose an update and a batch counts once. The agent item itself (`META`) is read with its
shards (one Query) and written only when a batch changes its details or its rank is due
(`leaderboard.py`). A parent known only from its subtasks is a placeholder task item without
index keys.

What one batch costs is what it writes, so it writes little (`tests/perf/dynamodb_cost.py`
counts it): its events go onto a few pages (one item per 300 KB, not one per event), and
duplicates are found by the tasks' own conditional writes, not by reading every event id.

- Events of a task (every event with a `task_id`): the task's item keeps the digests of the
  events it holds, and of a long task the rest are in its chunks (read with it, one
  BatchGetItem of 1 RRU per 448 older events), so the consistent read of the batch's tasks
  (needed to fold them anyway) tells which events are new. The new ones go onto pages first, then one TransactWriteItems
  (100 items, 4 MB; normally one per batch) writes each task as an Update conditional on the
  `version` it was folded from, adding its new digests and pages, with the run counters (and
  the batch's `dropped`) as ADDs. A concurrent sender of the same events moves the version:
  the transaction is cancelled, the tasks read again, and the events it stored are
  duplicates. A batch that needs several transactions splits between tasks (or within a huge
  task); each part folds on the state the previous one left, and a retried batch finds the
  stored parts as duplicates. Retries are few and jittered; past them the caller gets 429 and
  resends safely. A subtask whose fold touches no other item (`_alone`: no run finished,
  nothing handed to its parent, no evidence the agent counts, no move) is not in the
  transaction but written before it, an Update conditional on its own `version` (a write unit
  where a transaction bills two): its events count nowhere else, so a crash in between leaves
  them known to it and the resent batch writes the rest; a concurrent writer of it fails the
  condition and the unit is read again.
- A write that would crowd a task's item past what it holds itself (`codec.tasks.SEEN_INLINE`
  digests, `PAGES_INLINE` page keys; a task's events go at most `SEEN_INLINE` to a
  transaction) first moves them into new chunks, in a transaction of its own conditional on
  the task's `version` and chunk counts (`codec.tasks.spill`): a concurrent writer of the task
  cancels one of the two, and every digest stays either on the item or in a chunk it counts.
  So a write of a long task pays for a few KB of item, not for its history (a batch after
  10,000 one-event batches: `tests/aws/test_dynamodb_task_bounds.py`).
- A page is written before its transaction: a crash in between leaves events on a page that
  no task lists, and the resent batch (still new to every task) folds them once. Readers take
  each event id once, so an event on two pages (two senders, one of whom lost) shows once.
- Events of no task count nowhere but in the answer: they are paged, then each is claimed by a
  Put of `EV#{id}` conditional on its absence (a crash in between pages them again).
- `first_event_at`/`last_event_at` are moved only outward on the batch's counter shard, by
  conditional SETs (in its transaction; a batch with nothing new for a task, by one write).
- The agent's newest run and newest failure (`latest_run`, `latest_failure`: maps of a
  `models.RunRef`) move only forward: set by the transaction's update of the counter shard
  (the one adding the run counters) where they replace what the shard held when last read,
  under the condition that it holds none newer; a concurrent batch that recorded a newer one
  cancels the transaction, which is retried on the shard read again. Reads take the newest
  of the shards' (`codec.agents.merged`).

Reads use the base table for one item, one agent's days and pages (strongly consistent) and
the task indexes for listings (eventually consistent, like every GSI; KEYS_ONLY, the page's
tasks are then read by key; a task's subtasks from its run's `spans`). Nothing scans.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import itertools
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from botocore.exceptions import ClientError

from ...domain.field_limits import dumps, within_task_limit
from ...domain.folding import (
    BatchFold,
    fold_batch,
    group_by_task,
    newest_runs,
    owe_session,
    owing_parents,
)
from ...domain.models import (
    AgentMeta,
    AgentRef,
    CleanEvent,
    IngestOutcome,
    IngestWrite,
    TaskState,
    add_usage,
    iso,
)
from ...domain.pricing import is_evidence
from ...domain.runs import Reassign, parent_ids
from ...domain.timeseries import BucketKey, batch_buckets
from ...ports.store import decode_cursor, encode_cursor, one_by_one
from .agents import counting_user, live_agent, raise_unless_agent_exists
from .client import MAX_ATTEMPTS, ConditionFailed, Table, busy, cancellation_reasons, code, pause
from .codec.agents import (
    COUNTERS,
    agent_upsert,
    changes_details,
    counter_key,
    days_from_items,
    pick_shard,
    record_newest_runs,
    record_window,
    run_updates,
)
from .codec.keys import DAY, EVENT, PAGE, TASK, AgentKeys, expiring, task_sort_key, temporary
from .codec.packs import (
    PACK_BYTES,
    PACK_SPANS,
    PackedSpan,
    pack_item,
    pack_size,
    packable,
    packs_of,
    spans_of,
    task_items,
    unique_spans,
    unpacked,
)
from .codec.pages import StoredEvent, event_expiry, page_entry, page_events, page_item, page_max_ts
from .codec.sessions import session_run_items, session_updates
from .codec.spans import SPAN_ATTRIBUTES
from .codec.tasks import (
    SEEN_INLINE,
    TaskLedger,
    as_stored,
    child_cost_update,
    chunk_task_id,
    digest,
    seen_chunk_keys,
    spill,
    task_from_item,
    task_ledger,
    task_seen,
    task_update,
)
from .codec.values import Update, to_item
from .codec.versions import version_run_updates
from .content import ContentReader
from .layout import SPANS
from .leaderboard import DynamoLeaderboard, read_agent
from .packs import read_tasks, trace_packs
from .rehome import at_home
from .timeseries import series_keys, series_updates

MAX_TRANSACTION_ITEMS = 100
MAX_TRANSACTION_BYTES = 3_000_000
"""Below DynamoDB's 4 MB per transaction, leaving room for keys and attribute names."""
MAX_PAGE_BYTES = 32_000
"""A page's events, past which a batch's next events go on a new page: below DynamoDB's 400 KB
per item, and small, as a task's content is read from its pages (`content.py`: a page of 32 KB
is 4 read units eventually consistent). Writing costs the same whatever the size (a unit a
KB)."""
_RETRYABLE = frozenset({"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded",
                        "RequestLimitExceeded"})
_LOWEST_SORT_TS = "0"
"""Every real sort_ts starts with a digit; keys below it belong to tasks seen only in logs."""


class DynamoIngest:
    """Batches and tasks, on `table`; `ranks` re-ranks an agent a batch changed. Events expire
    `retention_days` after their time (0: never; `retention.py`); an account's first batches
    make at most `max_agents` agents (`agents.counting_user`); a task read shows the content
    `content` folds from its events."""

    def __init__(self, table: Table, ranks: DynamoLeaderboard, retention_days: int,
                 max_agents: int, content: ContentReader) -> None:
        self.table = table
        self.content = content
        self.ranks = ranks
        self.retention_days = retention_days
        self.max_agents = max_agents

    def ingest_many(self, writes: Sequence[IngestWrite]) -> list[IngestOutcome | Exception]:
        return one_by_one(self, writes)

    def ingest(self, login: str, meta: AgentMeta, events: list[CleanEvent],
               dropped: int = 0) -> IngestOutcome:
        agent = AgentKeys(login, meta.slug)
        firsts: dict[str, CleanEvent] = {}
        for event in events:
            firsts.setdefault(event.id, event)
        tracked = [e for e in firsts.values() if e.task_id is not None]
        states, seen, ledgers, packs = self.load_tasks(
            agent, {e.task_id for e in tracked if e.task_id} | parent_ids(tracked))
        fresh = [e for e in tracked if digest(e.id) not in seen.get(e.task_id or "", ())]
        _within_limit(fresh, seen)
        bodies = {e.id: e.body_json or dumps(e.body) for e in firsts.values()}
        arrival = time.time_ns()
        seqs = {event_id: arrival + i for i, event_id in enumerate(firsts)}
        untracked = [e for e in firsts.values() if e.task_id is None]
        now = iso(self.table.clock.now())
        item, shards, renamed = self._agent(agent, meta, now)
        agent = temporary(agent, item)
        claimed = (self._store_untracked(agent, untracked, bodies, seqs) if untracked else [])
        shard = pick_shard()
        write = _BatchWrite(self, agent, states, seen, ledgers, packs, bodies, seqs,
                            self.retention_days, dropped if fresh else 0, shard,
                            next((s for s in shards if s["sk"] == f"{COUNTERS}{shard}"), {}),
                            [e.ts for e in [*(tracked if fresh else ()), *claimed]],
                            version=meta.version)
        # `dropped` counts once, with the first write that stores an event (a replay reported
        # them already): the first transaction, or here when no task has anything new
        if not fresh:
            write.touch(dropped if claimed or not events else 0)
        for unit in _units(fresh, bodies):
            write.commit(unit)
        accepted = len(write.accepted) + len(claimed)
        ref = AgentRef(login, meta.slug)
        if renamed:
            self.ranks.refresh(ref)
        elif accepted:
            self.ranks.refresh_if_due(ref, item, [*shards, *write.added])
        return IngestOutcome(accepted=accepted, duplicates=len(events) - accepted,
                             finished=write.finished, agent=live_agent(item, now, shards))

    def _agent(self, agent: AgentKeys, meta: AgentMeta, now: str
               ) -> tuple[dict[str, Any], list[dict[str, Any]], bool]:
        """The agent item and its counter shards as they are (one Query), the agent made first
        if it is new; and whether the batch changed its details. `META` is written only then:
        a batch's counts and event window go to a counter shard (`codec.agents`)."""
        update = agent_upsert(agent, meta, now, 0)
        for _ in range(2):
            item, shards = read_agent(self.table, agent)
            if item is not None:
                if not changes_details(item, meta):
                    return item, shards, False
                with contextlib.suppress(ConditionFailed):  # deleted meanwhile: made again
                    return (self.table.update(replace(update, condition="attribute_exists(#pk)"),
                                              returns="ALL_NEW"), shards, True)
            elif self._create(agent, update, now):
                return read_agent(self.table, agent)[0] or {}, [], True
        raise busy()  # created and gone again at once: not something a real agent does

    def _store_untracked(self, agent: AgentKeys, events: list[CleanEvent],
                         bodies: dict[str, str], seqs: dict[str, int]) -> list[CleanEvent]:
        """Events of no task: paged, then each claimed by a Put of its id conditional on its
        absence; the ones claimed now are new. (A crash in between pages them twice, which
        readers take once.) The agent exists by now, so one refused (`TooManyAgents`) leaves
        no claim behind."""
        write_pages(self.table, agent, events, bodies, seqs, self.retention_days)

        def new(event: CleanEvent) -> bool:
            expires = event_expiry(agent, event.ts, self.retention_days)
            item = agent.key(EVENT + event.id)
            return self.table.put_if_absent(
                item if expires is None else {**item, **to_item({"expires_at": expires})})

        with ThreadPoolExecutor(max_workers=min(8, len(events))) as pool:
            return [e for e, fresh in zip(events, pool.map(new, events), strict=True) if fresh]

    def _create(self, agent: AgentKeys, update: Update, now: str) -> bool:
        """Make the agent by `update` in one transaction with its user's agent count
        (`agents.counting_user`): `TooManyAgents` past the account's limit, before anything
        of the agent is written; False if it exists (made meanwhile by another batch)."""
        created = replace(update, condition="attribute_not_exists(#pk)")
        try:
            self.table.transact([
                self.table.update_action(counting_user(self.table, agent.login, now,
                                                       self.max_agents)),
                self.table.update_action(created)])
        except ClientError as exc:
            raise_unless_agent_exists(exc, agent.login, self.max_agents)
            return False
        return True

    def load_tasks(self, agent: AgentKeys, task_ids: Iterable[str]
                   ) -> tuple[dict[str, TaskState], dict[str, set[bytes]], dict[str, TaskLedger],
                              dict[str, dict[str, Any]]]:
        """The stored tasks (strongly consistent), the digests of every event each folded (its
        own and its chunks': one more BatchGetItem, only for a task with a long history),
        what each item records of its events itself, and the packs read (`codec.packs`: a
        span of a trace with no item of its own is looked for in its trace's packs, one Query
        a trace). A task an older layout left where it was is moved first (`rehome.py`), as
        every write goes where it now lives."""
        wanted = set(task_ids)
        items = at_home(self.table,
                        self.table.batch_get([agent.key(TASK + task_id) for task_id in wanted]))
        missing = wanted - {item["sk"][len(TASK):] for item in items}
        packs = {pack["sk"]: pack for trace in packs_of(missing)
                 for pack in trace_packs(self.table, agent, trace)}
        items += [task for pack in packs.values() for task in task_items(pack)
                  if task["sk"][len(TASK):] in missing]
        states = {item["sk"][len(TASK):]: task_from_item(item) for item in items}
        ledgers = {item["sk"][len(TASK):]: task_ledger(item) for item in items}
        seen = {task_id: set(ledger.seen) for task_id, ledger in ledgers.items()}
        chunks = [key for task_id, ledger in ledgers.items()
                  for key in seen_chunk_keys(agent, task_id, ledger)]
        for chunk in self.table.batch_get(chunks) if chunks else ():
            seen[chunk_task_id(chunk["sk"])] |= task_seen(chunk)
        return states, seen, ledgers, packs

    # ---- reads: events and days -----------------------------------------------------------

    def recent_events(self, ref: AgentRef, limit: int) -> list[dict[str, Any]]:
        """Newest first, by time then arrival. Pages are read newest first (by their newest
        event) until the `limit`-th newest event so far is newer than anything left."""
        if limit <= 0:
            return []
        kept: dict[str, StoredEvent] = {}
        since = self._retained_since()
        for item in self._pages_newest_first(AgentKeys(ref.login, ref.slug)):
            if page_max_ts(item["sk"]) < since:
                break
            if len(kept) >= limit:
                kth = heapq.nlargest(limit, kept.values(), key=lambda e: e.order)[-1]
                if kth.ts > page_max_ts(item["sk"]):
                    break
            _keep_first(kept, (e for e in page_events(item) if e.ts >= since))
        newest = heapq.nlargest(limit, kept.values(), key=lambda e: e.order)
        return [e.body for e in newest]

    def _pages_newest_first(self, agent: AgentKeys) -> Iterator[dict[str, Any]]:
        """The agent's pages, newest first across its partitions (and where an older layout
        kept them, while they may still be there): a Query of each, merged as they are read."""
        partitions = agent.partitions()
        if self.table.layout.moving(self.table):
            partitions.append(agent.pk)
        queries = [self.table.query(pk, "begins_with(#sk, :prefix)", forward=False, page=4,
                                    prefix=PAGE) for pk in partitions]
        return heapq.merge(*queries, key=lambda item: item["sk"], reverse=True)

    def task_events(self, ref: AgentRef, task_id: str) -> list[dict[str, Any]]:
        since = self._retained_since()
        return [body for body in read_task_events(self.content, AgentKeys(ref.login, ref.slug),
                                                  task_id) if body.get("ts", since) >= since]

    def _retained_since(self) -> str:
        """The time of the oldest event the retention keeps showing: a task's events stay as
        long as it does, the only copy of its content (`content.py`), but are shown as long
        as the retention keeps events (`retention.py`)."""
        if self.retention_days <= 0:
            return ""
        return iso(self.table.clock.now() - timedelta(days=self.retention_days))

    def daily(self, ref: AgentRef, since_day: str) -> list[dict[str, Any]]:
        items = self.table.query(AgentKeys(ref.login, ref.slug).pk,
                                 "#sk BETWEEN :since AND :end",
                                 since=DAY + since_day, end="DAY$")
        return days_from_items(items)

    # ---- tasks ----------------------------------------------------------------------------

    def get_task(self, ref: AgentRef, task_id: str, *, consistent: bool = True
                 ) -> TaskState | None:
        agent = AgentKeys(ref.login, ref.slug)
        item = next(iter(read_tasks(self.table, agent, [task_id], consistent=consistent)), None)
        if started_task(item) is None:
            return None
        return self.content.with_content(agent, [item or {}])[0]

    def list_tasks(self, ref: AgentRef, *, parent: str | None = None, status: str | None = None,
                   limit: int = 50, cursor: str | None = None
                   ) -> tuple[list[TaskState], str | None]:
        agent = AgentKeys(ref.login, ref.slug)
        after = None if cursor is None else task_sort_key(*decode_cursor(cursor))
        if parent is None:
            index, pk = (("tstatus", agent.status_pk(None, status)) if status
                         else ("tasks", agent.tasks_pk(None)))
            entries = self._listing(pk, index, after, page=limit + 2)
        else:
            entries = (entry for entry in self._subtask_entries(agent, parent, after)
                       if status is None or entry.status == status)
        keys = list(itertools.islice(entries, limit + 1))
        tasks = self._tasks(agent, [entry.sk for entry in keys[:limit]],
                            {e.sk[len(TASK):]: e.pack for e in keys[:limit] if e.pack})
        return tasks, (encode_cursor(tasks[-1].sort_ts, tasks[-1].task_id)
                       if len(keys) > limit and tasks else None)

    def _listing(self, pk: str, index: str, after: str | None, page: int | None = None
                 ) -> Iterator[_Entry]:
        """A listing of `index` (`tasks` or `tstatus`), newest first, below `after`."""
        sort = {"tasks": "tlsk", "tstatus": "tssk"}[index]
        items = self._newest(pk, index, after, page=page)
        return (_Entry(item[sort], item["sk"]) for item in items if item[sort] != after)

    def _newest(self, pk: str, index: str, after: str | None, *, page: int | None = None,
                projection: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
        """A partition of `index` newest first, up to `after` (which the caller drops), above
        the keys of tasks seen only in logs."""
        if after is None:
            return self.table.query(pk, "#sk >= :low", index=index, forward=False, page=page,
                                    projection=projection, low=_LOWEST_SORT_TS)
        return self.table.query(pk, "#sk BETWEEN :low AND :after", index=index, forward=False,
                                page=page, projection=projection, low=_LOWEST_SORT_TS,
                                after=after)

    def _subtask_entries(self, agent: AgentKeys, parent: str, after: str | None
                         ) -> Iterator[_Entry]:
        """`parent`'s subtasks newest first, below `after`: the spans of its run whose rows
        name it as their parent (a subtask shares its parent's run, or is recorded under its
        parent's id while the parent is unknown), and, while the table's migration may not
        have given every subtask its row (`layout.SPANS`) or where `parent` was stored before
        runs existed, those older code listed under it in `tasks`. (Subtasks older code
        wrote keep that entry, which nothing else reads, until their next write takes it
        out.)"""
        item = next(iter(read_tasks(self.table, agent, [parent], consistent=False)), None)
        run = (item or {}).get("run_id") or parent
        rows = self._newest(agent.run_pk(run), "spans", None, projection=SPAN_ATTRIBUTES)
        # a pack's entry is at its first span's place: its spans are sorted in, all read
        spans = sorted(((entry, span) for row in rows for entry, span in spans_of(row, run)
                        if span.parent_task_id == parent
                        and (after is None or entry["ssk"] < after)),
                       key=lambda found: found[0]["ssk"], reverse=True)
        entries = (_Entry(entry["ssk"], entry["sk"], span.status, entry.get("pack"))
                   for entry, span in unique_spans(spans))
        unmigrated = item is not None and item.get("run_id") is None  # stored before runs
        if not unmigrated and not self.table.layout.before(self.table, SPANS):
            return entries
        listed = (_Entry(entry.sort, entry.sk, None) for entry in
                  self._listing(agent.tasks_pk(parent), "tasks", after))
        return _newest_once(entries, listed, self._status_of(agent))

    def _status_of(self, agent: AgentKeys) -> Callable[[str], str]:
        def status(sk: str) -> str:
            return task_from_item(self.table.get(agent.key(sk), consistent=False) or {}).status
        return status

    def _tasks(self, agent: AgentKeys, sks: list[str], packs: dict[str, str] | None = None
               ) -> list[TaskState]:
        """The tasks of an index page, in its order, read by key (eventually consistent, as
        the index was; a packed one from the pack its entry names)."""
        items = read_tasks(self.table, agent, [sk[len(TASK):] for sk in sks], consistent=False,
                           packs=packs)
        return self.content.with_content(agent, items)

    def subtask_ids(self, ref: AgentRef, task_ids: list[str]) -> dict[str, list[str]]:
        """Each task's subtasks, oldest first: one Query of each task's run's spans, run side
        by side (a page asks for all of its tasks at once)."""
        agent = AgentKeys(ref.login, ref.slug)

        def children(parent: str) -> list[str]:
            entries = sorted(self._subtask_entries(agent, parent, None), key=lambda e: e.sort)
            return [entry.sk[len(TASK):] for entry in entries]

        if not task_ids:
            return {}
        with ThreadPoolExecutor(max_workers=min(8, len(task_ids))) as pool:
            return dict(zip(task_ids, pool.map(children, task_ids), strict=True))


@dataclass(frozen=True)
class _Entry:
    """A listed task: its sort key (`{sort_ts}#{task_id}`), item key, and status if known."""

    sort: str
    sk: str
    status: str | None = None
    pack: str | None = None
    """The pack holding it (`codec.packs`), if it has no item of its own."""


def _newest_once(spans: Iterator[_Entry], listed: Iterator[_Entry],
                 status_of: Callable[[str], str]) -> Iterator[_Entry]:
    """Two listings of one task's subtasks, newest first, merged, each subtask once; one
    found only in the older listing gets its status from its item."""
    seen: set[str] = set()
    for entry in heapq.merge(spans, listed, key=lambda e: e.sort, reverse=True):
        if entry.sk in seen:
            continue
        seen.add(entry.sk)
        yield entry if entry.status is not None else replace(entry, status=status_of(entry.sk))


def started_task(item: dict[str, Any] | None) -> TaskState | None:
    """The task of its item, unless it is none yet: a placeholder its subtasks made, which has
    no start nor end."""
    task = task_from_item(item) if item else None
    return task if task and task.sort_ts else None


def move_runs(table: Table, agent: AgentKeys, moves: list[Reassign]) -> None:
    """After a batch's transaction: the tasks recorded under a run that turned out to have a
    parent (`runs.Reassign`) move to its run, each guarded by the run it had. The index this
    reads lags the table, so a task written under the old run by a concurrent batch can be
    missed: the old run's task keeps `moved_at`, reads of its new run read such stragglers
    from the old run for a while (`runs.SETTLED`), and the table's migration moves them
    (`migration.py`)."""
    for move in moves:
        for index, item in run_members(table, agent, move.old):
            move_task(table, agent, item["sk"], move.old, move.new, index)
        table.update(expiring(Update(agent.key(TASK + move.old),
                                     set={"moved_at": iso(table.clock.now())}), agent))


RUN_INDEXES = {"spans": "spk", "runs": "gsi3pk"}
"""The indexes a run's spans are in, by their partition key: `spans`, and `runs` for tasks
written before it that the table's migration has not rewritten yet (`codec.spans`)."""


def run_members(table: Table, agent: AgentKeys, run_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The keys of the tasks recorded under `run_id`, with the index each was found in."""
    for index in RUN_INDEXES:
        for item in table.query(agent.run_pk(run_id), index=index, projection=("sk",)):
            yield index, item


def move_task(table: Table, agent: AgentKeys, sk: str, old: str, new: str,
              index: str = "spans") -> bool:
    """Task `sk` (in `index`) moves from run `old` to run `new`; False if it was not under
    `old` any more."""
    update = Update(agent.key(sk), set={"run_id": new, RUN_INDEXES[index]: agent.run_pk(new)},
                    add={"version": 1}, condition="#run_id = :old",
                    condition_values={":old": old})
    try:
        table.update(expiring(update, agent))
    except ConditionFailed:  # moved already (the index lags)
        return False
    return True


def read_task_events(content: ContentReader, agent: AgentKeys, task_id: str
                     ) -> list[dict[str, Any]]:
    """The events of one task in time, then arrival, order: from the pages its item and its
    chunks list (`codec.tasks.TaskLedger`)."""
    task = next(iter(read_tasks(content.table, agent, [task_id])), None)
    if task is None:
        return []
    events = content.task_events(agent, {task_id: task})[task_id]
    return [e.body for e in sorted(events, key=lambda e: e.order)]


def _keep_first(kept: dict[str, StoredEvent], events: Iterable[StoredEvent]) -> None:
    """Each event id once: the copy that arrived first."""
    for event in events:
        if event.id not in kept or event.seq < kept[event.id].seq:
            kept[event.id] = event


# ---- the write of one batch -----------------------------------------------------------------


@dataclass
class _Plan:
    events: list[CleanEvent]
    pages: dict[str, str]
    """The page of each event."""
    actions: list[dict[str, Any]]
    fold: BatchFold
    recorded: dict[str, Any]
    """The newest runs and event window it records on the counter shard (`record_newest_runs`,
    `record_window`)."""
    added: dict[str, Any]
    """What it ADDs to the counter shard."""
    alone: dict[str, Update] = field(default_factory=dict)
    """The writes of the tasks whose fold touches nothing but themselves (`_alone`), by task:
    each guarded by its own version, written before the transaction, not in it."""
    packs: list[tuple[dict[str, Any], list[str]]] = field(default_factory=list)
    """Packs of such tasks (`codec.packs`), each with its spans' ids: written with them, each
    Put only if absent."""
    left: set[str] = field(default_factory=set)
    """The packed spans it writes an item of their own (`_leave`), their packs written again
    without them in its transaction."""
    repacked: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    """Those packs as they will be (None: deleted), by key."""


@dataclass
class _BatchWrite:
    """The new events of one batch, written unit by unit on the task states read so far.
    `seen` holds each task's event digests; `bodies` each event's JSON; `seqs` numbers the
    events in batch order; they expire `retention_days` after their time
    (`event_expiry`)."""

    store: DynamoIngest
    agent: AgentKeys
    states: dict[str, TaskState]
    seen: dict[str, set[bytes]]
    ledgers: dict[str, TaskLedger]
    """What each stored task's item holds of its events itself (`codec.tasks.TaskLedger`)."""
    packs: dict[str, dict[str, Any]]
    """The packs read, by key (`codec.packs`), as last read or written."""
    bodies: dict[str, str]
    seqs: dict[str, int]
    retention_days: int
    dropped: int
    """Counted with the first part that stores an event: a replay reported them already."""
    shard: int
    """The agent's counter shard this batch adds to (`codec.agents`)."""
    shard_item: dict[str, Any]
    """The shard as last read (or as left by the parts written since): the newest runs and the
    event window it holds."""
    times: list[str]
    """The times of the batch's events when any is new: the event window they widen (all of
    them, as a task written alone before a crash has its events no longer new to the resent
    batch; widening by an event already counted changes nothing)."""
    accepted: list[CleanEvent] = field(default_factory=list)
    finished: list[tuple[str, bool]] = field(default_factory=list)
    added: list[dict[str, Any]] = field(default_factory=list)
    """What each write added to the shard, as a shard of its own (for the rank refresh)."""
    version: str | None = None
    """The agent's version the batch was sent by: the runs it first records carry it."""

    def touch(self, dropped: int) -> None:
        """A batch with nothing new for a task: its `dropped` and event window on the shard, by
        one write outside any transaction (again on the shard read anew if a concurrent batch
        widened it further)."""
        for attempt in range(MAX_ATTEMPTS):
            update = expiring(Update(counter_key(self.agent, self.shard)), self.agent)
            if dropped:
                update.add["dropped_events"] = dropped
            sets = record_window(update, self.times, self.shard_item)
            if not update.add and not sets:
                return
            try:
                self.store.table.update(update)
            except ConditionFailed:
                self.shard_item = self.store.table.get(counter_key(self.agent, self.shard)) or {}
                pause(attempt)
                continue
            self.added.append({**update.add, **sets})
            return
        raise busy()

    def commit(self, unit: list[CleanEvent]) -> None:
        # a task's events are the only copy of its content (`content.py`): kept with the task
        pages = write_pages(self.store.table, self.agent, unit, self.bodies, self.seqs, 0)
        for attempt in range(MAX_ATTEMPTS):
            if not self._make_room(unit, pages):
                unit = self._reread(unit, set(), attempt)
                if not unit:
                    return
                continue
            plan = self._plan(unit, pages)
            # before the transaction, as the pages: a failed one is sent again (`codec.sessions`)
            self.store.table.write_all(session_run_items(self.agent,
                                                         [delta for _, delta in plan.fold.runs]))
            written = self._write_alone(plan)
            # a concurrent writer changed one: read again
            if written != plan.alone.keys() | {t for _, ids in plan.packs for t in ids}:
                unit = self._reread([e for e in unit if e.task_id not in written], set(), attempt)
                if not unit:
                    return
                continue
            try:
                if plan.actions:
                    self.store.table.transact(plan.actions)
            except ClientError as exc:
                if code(exc) != "TransactionCanceledException":
                    raise
                unit = self._after_cancel(exc, plan, attempt)
                if not unit:
                    return
                continue
            moves = _moves(plan.fold, self.states)
            self._applied(plan)
            move_runs(self.store.table, self.agent, moves)
            return
        raise busy()

    def _write_alone(self, plan: _Plan) -> set[str]:
        """The writes of the plan's tasks alone, before its transaction (one UpdateItem each, a
        write unit where the transaction bills two); the tasks written (not those a concurrent
        writer changed meanwhile), kept as written."""
        writes: list[tuple[list[str], Callable[[], bool]]] = [
            ([task_id], functools.partial(self._updated, update))
            for task_id, update in plan.alone.items()]
        writes += [(ids, functools.partial(self.store.table.put_if_absent, to_item(pack)))
                   for pack, ids in plan.packs]
        if not writes:
            return set()
        with ThreadPoolExecutor(max_workers=min(8, len(writes))) as pool:
            done = list(pool.map(lambda write: write[1](), writes))
        written = {task_id for (ids, _), ok in zip(writes, done, strict=True) if ok
                   for task_id in ids}
        self._kept(plan, written)
        for pack, ids in plan.packs:
            if ids[0] in written:  # read back as it is stored: version 0, in its pack
                self.packs[pack["sk"]] = pack
                for task_id in ids:
                    self.states[task_id] = replace(self.states[task_id], version=0)
                    self.ledgers[task_id].packed = pack["sk"]
        return written

    def _updated(self, update: Update) -> bool:
        try:
            self.store.table.update(update)
        except ConditionFailed:
            return False
        return True

    def _plan(self, unit: list[CleanEvent], pages: dict[str, str]) -> _Plan:
        agent = self.agent
        fold = fold_batch(self.states, unit, self.version)
        new_seen: dict[str, set[bytes]] = {}
        on_pages: dict[str, set[str]] = {}
        for event in unit:
            if event.task_id is not None:
                on_pages.setdefault(event.task_id, set()).add(pages[event.id])
                new_seen.setdefault(event.task_id, set()).add(digest(event.id))
        paged = {task_id: set(keys) for task_id, keys in on_pages.items()}
        packed = {task_id: ledger for task_id, ledger in self.ledgers.items() if ledger.packed}
        writes = {task_id: (_leave(agent, task, packed[task_id], new_seen.get(task_id, set()),
                                   on_pages.pop(task_id, set())) if task_id in packed
                            else task_update(agent, self.states.get(task_id), task,
                                             new_seen.get(task_id, set()),
                                             on_pages.pop(task_id, set())))
                  for task_id, task in fold.tasks.items()}
        alone = {task_id: writes.pop(task_id)
                 for task_id in _alone(fold, self.states, unit) - packed.keys()}
        packs = _packs(agent, fold, self.states, alone.keys(), new_seen, paged)
        for _, ids in packs:
            for task_id in ids:
                del alone[task_id]
        updates = list(writes.values())
        owed = _untouched_parents(fold) | on_pages.keys()
        for task_id in owed:
            owes = child_cost_update(agent, task_id, fold.child_costs.get(task_id, 0.0),
                                     fold.child_evidence.get(task_id),
                                     on_pages.get(task_id), new_seen.get(task_id),
                                     run_holder=task_id in fold.unknown_parents,
                                     session=fold.child_sessions.get(task_id))
            if task_id in packed:  # it leaves its pack, the ADDs on its item written whole
                owes = _joined(_leave(agent, self.states[task_id], packed[task_id], set(),
                                      set()), owes)
            updates.append(owes)
        updates += run_updates(agent, [delta for _, delta in fold.runs], fold.evidence,
                               self.shard)
        updates += version_run_updates(agent, [delta for _, delta in fold.runs], self.shard)
        updates += series_updates(agent, batch_buckets(
            [fold.tasks[task_id] for task_id, _ in fold.runs], unit), self.shard)
        updates += session_updates(agent, [delta for _, delta in fold.runs])
        key = counter_key(agent, self.shard)
        on_shard = next((u for u in updates if u.key == key), None) or expiring(Update(key), agent)
        if self.dropped:
            on_shard.add["dropped_events"] = self.dropped
        recorded = record_newest_runs(on_shard, newest_runs(fold), self.shard_item)
        recorded |= record_window(on_shard, self.times, self.shard_item)
        if (on_shard.add or recorded) and on_shard not in updates:
            updates.append(on_shard)
        actions = [self.store.table.update_action(u) for u in updates]
        left = (fold.tasks.keys() | owed) & packed.keys()
        repacked: dict[str, dict[str, Any] | None] = {}
        actions += self._repacked({packed[task_id].packed or "" for task_id in left}, left,
                                  repacked)
        return _Plan(unit, pages, actions, fold, recorded, dict(on_shard.add), alone, packs,
                     left, repacked)

    def _repacked(self, keys: set[str], left: set[str],
                  repacked: dict[str, dict[str, Any] | None]) -> list[dict[str, Any]]:
        """The transaction's writes of the packs that spans `left`: each written again without
        them (deleted once empty), guarded by the rows it was read with; `repacked` gets
        each as it will be."""
        actions: list[dict[str, Any]] = []
        for sk in sorted(keys):
            pack = self.packs[sk]
            spans = unpacked(pack, left)
            guard = {"ConditionExpression": "#row = :row",
                     "ExpressionAttributeNames": {"#row": "row"},
                     "ExpressionAttributeValues": to_item({":row": pack["row"]})}
            table = self.store.table
            repacked[sk] = pack_item(self.agent, spans, sk) if spans else None
            if repacked[sk] is not None:
                actions.append({"Put": {"TableName": table.name,
                                        "Item": to_item(repacked[sk] or {}), **guard}})
            else:
                actions.append({"Delete": {"TableName": table.name, "Key": self.agent.key(sk),
                                           **guard}})
        return actions

    def _make_room(self, unit: list[CleanEvent], pages: dict[str, str]) -> bool:
        """Before `unit` is written: move what a task's item records of its events into chunks
        (`codec.tasks.spill`) where the unit would crowd it, in transactions of their own; False
        if one found its task changed (read it again)."""
        added: dict[str, tuple[int, set[str]]] = {}
        for event in unit:
            if event.task_id is not None:
                count, on_pages = added.get(event.task_id, (0, set()))
                added[event.task_id] = (count + 1, on_pages | {pages[event.id]})
        spills: list[tuple[str, list[dict[str, Any]], TaskLedger]] = []
        for task_id, (count, on_pages) in added.items():
            ledger, state = self.ledgers.get(task_id), self.states.get(task_id)
            if ledger is None or state is None or ledger.packed:  # a pack is never crowded
                continue
            seen, paged = ledger.crowded(count, len(on_pages - ledger.pages))
            seen, paged = seen and bool(ledger.seen), paged and bool(ledger.pages)
            if seen or paged:
                items, update, after = spill(self.agent, task_id, state.version, ledger,
                                             seen=seen, pages=paged)
                table = self.store.table
                spills.append((task_id, [*map(table.put_action, items),
                                         table.update_action(update)], after))
        group: list[tuple[str, list[dict[str, Any]], TaskLedger]] = []
        for n, one in enumerate(spills):
            group.append(one)
            if n + 1 < len(spills) and sum(len(a) for _, a, _ in group) + len(spills[n + 1][1]) \
                    <= MAX_TRANSACTION_ITEMS:
                continue
            try:
                self.store.table.transact([a for _, actions, _ in group for a in actions])
            except ClientError as exc:
                _raise_unless_contended(exc)
                return False
            self.ledgers |= {task_id: after for task_id, _, after in group}
            group = []
        return True

    def _after_cancel(self, exc: ClientError, plan: _Plan, attempt: int) -> list[CleanEvent]:
        """The unit left to write, folded again on fresh task states: without the events a
        concurrent sender folded first (their pages stay, and readers take them once)."""
        _raise_unless_contended(exc)
        if plan.recorded:  # perhaps a concurrent batch recorded a newer run or a wider window
            self.shard_item = self.store.table.get(counter_key(self.agent, self.shard)) or {}
        return self._reread(plan.events, _untouched_parents(plan.fold), attempt)

    def _reread(self, events: list[CleanEvent], parents: set[str], attempt: int
                ) -> list[CleanEvent]:
        """The `events` left to write once their tasks (and `parents`) are read again."""
        task_ids = {e.task_id for e in events if e.task_id is not None}
        task_ids |= parents | parent_ids(events)
        for task_id in task_ids:
            self.states.pop(task_id, None)
            self.seen.pop(task_id, None)
            self.ledgers.pop(task_id, None)
        states, seen, ledgers, packs = self.store.load_tasks(self.agent, task_ids)
        self.states |= states
        self.seen |= seen
        self.ledgers |= ledgers
        self.packs |= packs
        unit = [e for e in events if digest(e.id) not in self.seen.get(e.task_id or "", ())]
        if unit:
            pause(attempt)
        return unit

    def _applied(self, plan: _Plan) -> None:
        """Keep the states in step with what the transaction just wrote, for the units still to
        come (the tasks alone are kept as they are written)."""
        self._kept(plan, plan.fold.tasks.keys() - plan.alone.keys()
                   - {t for _, ids in plan.packs for t in ids})
        for task_id in plan.left:  # an item of its own now
            self.ledgers[task_id].packed = None
        for sk, pack in plan.repacked.items():
            if pack is None:
                self.packs.pop(sk, None)
            else:
                self.packs[sk] = pack
        fold = plan.fold
        touched = _untouched_parents(fold)
        touched |= {e.task_id for e in plan.events
                    if e.task_id is not None and e.task_id not in fold.tasks}
        for task_id in touched:
            before = self.states.get(task_id) or TaskState(task_id=task_id)
            self.states[task_id] = replace(
                owe_session(before, fold.child_sessions.get(task_id)),
                child_cost_usd=before.child_cost_usd + fold.child_costs.get(task_id, 0.0),
                evidence=add_usage(before.evidence, fold.child_evidence.get(task_id)),
                run_id=task_id if task_id in fold.unknown_parents else before.run_id,
                version=before.version + 1)
        self._kept_events(plan, [e for e in plan.events if e.task_id not in fold.tasks])
        self.shard_item = {**self.shard_item, **plan.recorded}
        self.added.append({**plan.added, **plan.recorded})
        self.dropped = 0

    def _kept(self, plan: _Plan, task_ids: Iterable[str]) -> None:
        """The folded tasks `task_ids` as written, with their events."""
        kept = set(task_ids)
        for task_id in kept:
            before = self.states.get(task_id)
            self.states[task_id] = replace(as_stored(before, plan.fold.tasks[task_id]),
                                           version=(before.version if before else 0) + 1)
        self._kept_events(plan, [e for e in plan.events if e.task_id in kept])
        self.finished += [done for done in plan.fold.finished if done[0] in kept]

    def _kept_events(self, plan: _Plan, events: list[CleanEvent]) -> None:
        for event in events:
            self.seen.setdefault(event.task_id or "", set()).add(digest(event.id))
            if event.task_id is not None:
                ledger = self.ledgers.setdefault(event.task_id, TaskLedger())
                ledger.seen.add(digest(event.id))
                ledger.pages.add(plan.pages[event.id])
        self.accepted += events


def _raise_unless_contended(exc: ClientError) -> None:
    """`exc` unless it is a transaction cancelled by a concurrent write (or throttling)."""
    if code(exc) != "TransactionCanceledException" or any(
            reason not in _RETRYABLE | {"None", "ConditionalCheckFailed"}
            for reason in cancellation_reasons(exc)):
        raise exc


def _within_limit(fresh: list[CleanEvent], seen: dict[str, set[bytes]]) -> None:
    """Refuse the batch before anything of it is written if it takes a task past
    `field_limits.MAX_TASK_EVENTS` (its digests count what it holds)."""
    counts: dict[str, int] = {}
    for event in fresh:
        if event.task_id is not None:
            counts[event.task_id] = counts.get(event.task_id, len(seen.get(event.task_id, ()))) + 1
    within_task_limit(counts)


def _alone(fold: BatchFold, states: dict[str, TaskState], unit: list[CleanEvent]) -> set[str]:
    """The subtasks whose fold touches no other item (no run finished, nothing handed to a
    parent, cost, evidence or session, nor taken from a child, no evidence counted for the
    agent, no move between runs), when the unit writes something else (its transaction then
    carries the batch's `dropped` and event window). Written before the transaction, each
    guarded by its own version, they need no atomicity with it: a crash in between leaves
    their events old to them, which nothing else counted, and the rest new."""
    tied = {task_id for task_id, _ in fold.runs} | owing_parents(fold) | fold.unknown_parents
    tied |= {e.task_id for e in unit if e.kind == "task.log" and is_evidence(e.body.get("data"))
             and e.task_id is not None}
    for move in _moves(fold, states):
        tied |= {move.old, move.new}
    for task_id, after in fold.tasks.items():
        before = states.get(task_id)
        if after.parent_task_id is None or after.parent_task_id in fold.unknown_parents or (
                before is not None and (before.parent_task_id, before.run_id)
                != (after.parent_task_id, after.run_id)):
            tied.add(task_id)
        elif after.finished and (before is None or not before.finished) and (
                after.cost_usd or after.evidence is not None
                or after.session_id is not None or after.user_id is not None):
            tied |= {task_id, after.parent_task_id}  # handed to its parent
    return fold.tasks.keys() - tied if tied else set()


def _packs(agent: AgentKeys, fold: BatchFold, states: dict[str, TaskState], alone: Iterable[str],
           seen: dict[str, set[bytes]], paged: dict[str, set[str]]
           ) -> list[tuple[dict[str, Any], list[str]]]:
    """Packs (`codec.packs`) of the tasks written alone that the unit starts and ends, two or
    more of one trace and run, whose run's root is known (so no move takes them elsewhere),
    within `PACK_SPANS` and `PACK_BYTES`; each with its spans' ids."""
    groups: dict[tuple[str, str], list[PackedSpan]] = {}
    for task_id in sorted(alone):
        task = fold.tasks[task_id]
        root = fold.tasks.get(task.run_id or "") or states.get(task.run_id or "")
        if task_id in states or not task.finished or not packable(task) or root is None \
                or not root.sort_ts or root.parent_task_id is not None:
            continue
        groups.setdefault((task_id[:task_id.index("-")], root.task_id), []).append(
            (as_stored(None, task), seen.get(task_id, set()), paged.get(task_id, set())))
    packs = []
    for spans in groups.values():
        part: list[PackedSpan] = []
        for span in [*spans, None]:
            if span is not None and (not part or len(part) < PACK_SPANS
                                     and pack_size(pack_item(agent, [*part, span])) <= PACK_BYTES):
                part.append(span)
                continue
            if len(part) > 1:
                packs.append((pack_item(agent, part), [task.task_id for task, _, _ in part]))
            part = [] if span is None else [span]
    return packs


def _leave(agent: AgentKeys, task: TaskState, ledger: TaskLedger, seen: set[bytes],
           pages: set[str]) -> Update:
    """The item of its own of a packed span written again (`task`), with what its pack held
    of its events and what is new; its pack is written again without it in the same
    transaction (`_BatchWrite._repacked`)."""
    return task_update(agent, None, task, ledger.seen | seen, ledger.pages | pages)


def _joined(item: Update, adds: Update) -> Update:
    """`item` (`_leave`) with the ADDs a subtask hands its task (`child_cost_update`)."""
    for name, value in adds.add.items():
        if name in ("seen", "pages") and name in item.add:
            item.add[name] = item.add[name] | value
        elif name != "version":
            item.add[name] = value
    item.set_if_absent |= adds.set_if_absent
    return item


def _moves(fold: BatchFold, states: dict[str, TaskState]) -> list[Reassign]:
    """The runs the batch moves that hold stored tasks (a run stored under a task that turned
    out to have a parent)."""
    return [m for m in fold.reassign
            if (held := states.get(m.old)) is not None and held.run_id == m.old]


def _untouched_parents(fold: BatchFold) -> set[str]:
    """Parents the batch writes without folding: owed cost or evidence, or holding a run."""
    return owing_parents(fold) | fold.unknown_parents


def write_pages(table: Table, agent: AgentKeys, events: list[CleanEvent], bodies: dict[str, str],
                seqs: dict[str, int], retention_days: int) -> dict[str, str]:
    """Put `events` on pages (each expiring with its newest event); the page of each event."""
    items: list[dict[str, Any]] = []
    where: dict[str, str] = {}
    for page in _paged(events, bodies):
        sk = f"{PAGE}{max(e.ts for e in page)}#{uuid.uuid4().hex}"
        expiry = [event_expiry(agent, e.ts, retention_days) for e in page]
        items.append(page_item(
            agent, sk, [page_entry(e, bodies[e.id], seqs[e.id]) for e in page],
            None if None in expiry else max(t for t in expiry if t is not None)))
        where |= dict.fromkeys((e.id for e in page), sk)
    table.write_all(items)
    return where


def _units(events: list[CleanEvent], bodies: dict[str, str]) -> Iterator[list[CleanEvent]]:
    """The events in transactions DynamoDB accepts: whole tasks together where they fit, one
    task's events split in order where it alone is too big. Costs are counted generously: a
    task's item can be as large as its events, and it may add a parent and a day (a run: a day,
    its version's item, `codec.versions`, and its session's counters, `codec.sessions`, but no
    parent); an event no task folds may add a placeholder for its task; the buckets over time
    the unit adds to are counted apart, once each (`timeseries.series_keys`)."""
    pieces = [piece for group in group_by_task(events).values()
              for piece in _pieces(group, bodies, fixed=3 + _may_be_root(group), each=0,
                                   most=SEEN_INLINE)]
    pieces += _pieces([e for e in events if not _is_task_event(e)], bodies, fixed=0, each=1,
                      most=MAX_TRANSACTION_ITEMS)
    unit: list[CleanEvent] = []
    items = size = 0
    buckets: set[BucketKey] = set()
    for piece, piece_items, piece_size in pieces:
        keys = series_keys(piece)
        if unit and (items + piece_items + len(buckets | keys) > MAX_TRANSACTION_ITEMS - 1
                     or size + piece_size > MAX_TRANSACTION_BYTES):
            yield unit
            unit, items, size, buckets = [], 0, 0, set()
        unit += piece
        items += piece_items
        size += piece_size
        buckets |= keys
    if unit:
        yield unit


def _paged(events: list[CleanEvent], bodies: dict[str, str]) -> Iterator[list[CleanEvent]]:
    """`events` in runs that fit one page item."""
    page: list[CleanEvent] = []
    size = 0
    for event in events:
        event_size = len(bodies[event.id].encode()) + 200
        if page and size + event_size > MAX_PAGE_BYTES:
            yield page
            page, size = [], 0
        page.append(event)
        size += event_size
    if page:
        yield page


def _may_be_root(group: list[CleanEvent]) -> bool:
    """Whether a task's events may finish a run (none names a parent)."""
    return not any(event.body.get("parent_task_id") for event in group)


def _is_task_event(event: CleanEvent) -> bool:
    """What `folding.group_by_task` folds: the other events are only stored."""
    return event.task_id is not None and event.kind.startswith("task.")


def _pieces(events: list[CleanEvent], bodies: dict[str, str], fixed: int, each: int, most: int
            ) -> Iterator[tuple[list[CleanEvent], int, int]]:
    """Runs of at most `most` `events` that fit one transaction: (events, items, estimated
    bytes), a run taking `fixed` items plus `each` per event. A task's run stops at the digests
    its item holds (`SEEN_INLINE`), so one write never crowds it past them."""
    piece: list[CleanEvent] = []
    size = 0
    for event in events:
        event_size = len(bodies[event.id].encode()) + 200
        if piece and (fixed + each * (len(piece) + 1) > MAX_TRANSACTION_ITEMS - 1
                      or size + event_size > MAX_TRANSACTION_BYTES or len(piece) >= most):
            yield piece, fixed + each * len(piece), size
            piece, size = [], 0
        piece.append(event)
        size += event_size
    if piece:
        yield piece, fixed + each * len(piece), size
