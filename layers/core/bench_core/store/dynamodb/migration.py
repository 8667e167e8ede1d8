"""The table's migration: what an older layout or a race left in the table, put right in one pass,
so that reads never write. Until it has run, reads take such items as they are (`runs.py`,
`codec/tasks.py`); it changes where the answers come from, never what they are.

What it puts right, each counted in its `MigrationReport`:

- `runs`: a run stored before runs existed (its tasks have no `run_id`): every task of its tree
  gets the run's id and `runs` index keys, and one that kept no log entries those of its stored
  events (`runs.unmigrated_run`);
- `tasks`: every task item rewritten (`codec.tasks.task_rewrite`), those of such runs and those
  written with one attribute per field (`codec.tasks.TASK_FIELDS`) or with `runs` index keys
  (version 3: a span's entry is now its row in `spans`, `codec.spans`; roots were indexed
  once too);
- `chunked`: task items holding more event digests or page keys than a task item now keeps
  (`codec.tasks.TaskLedger`; they grew with every batch, up to DynamoDB's 400 KB), their
  older ones moved into chunks;
- `moved`: tasks a move of their run missed (`ingest.move_runs`; reads see them for
  `runs.SETTLED` only), moved; the marks of moves older than that removed;
- `spread` (version 4): an agent's tasks, chunks, pages and claims moved from its own
  partition key to the partitions `codec.keys` spreads them over (`rehome.move_home`); until
  a pass has got through, reads look in both places and writes move a task first
  (`layout.py`), and each task is moved before the steps above look at it;
- `series` (version 5): a version's bucket items over time folded into the agent's
  (`timeseries.merge_version_bucket`); until a pass has got through, a read of a version's
  counters reads both.

It is a paged Scan of the table, eventually consistent: every write is conditional on the
version it read, and one whose condition fails reads the item again, so it is safe while
batches come in (a batch that folds an old item rewrites it in the new layout itself).
Idempotent: a second pass finds nothing to write. Resumable: after each page it records where it
is on the table's migration item (`MARKER`), and a pass stopped by its deadline goes on from
there; once a pass is through, the item records `VERSION` and a later call costs one GetItem.
Its cost is DynamoDB's own count of the capacity units its requests consumed.

Who runs it: the stack, on every deployment that changes the code (`Custom::TableMigration` in
template.yaml, `lambdas/table_migration.py`), so `sam deploy` alone is enough; and
`bench-server migrate` (and `serve` on start) for a table used from one machine.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from ...domain.models import TaskState, iso
from ...domain.runs import MAX_ANCESTRY
from .client import MAX_ATTEMPTS, ConditionFailed, Table, code
from .codec.keys import PART, TASK, AgentKeys
from .codec.tasks import TASK_FIELDS, spill, task_from_item, task_ledger, task_rewrite
from .codec.values import Update
from .ingest import move_task, run_members, started_task
from .layout import MARKER, VERSION
from .rehome import at_home, is_legacy
from .runs import SETTLED, stored_logs, unmigrated_run
from .timeseries import SERIES, SERIES_PK, merge_version_bucket

_METER: ContextVar[MigrationReport | None] = ContextVar("bench_dynamodb_migration", default=None)
_READS = {"GetItem", "Query", "Scan", "BatchGetItem"}


@dataclass
class MigrationReport:
    """What one call did: items scanned, runs and tasks written, stragglers moved, and the
    capacity units all its requests consumed. `done`: the table is at `VERSION`."""

    version: int = VERSION
    done: bool = False
    scanned: int = 0
    runs: int = 0
    tasks: int = 0
    chunked: int = 0
    moved: int = 0
    spread: int = 0
    series: int = 0
    read_units: float = 0.0
    write_units: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def migrate(table: Table, *, deadline: float | None = None, page: int | None = None
            ) -> MigrationReport:
    """Migrate `table` a Scan page (1 MB, or `page` items) at a time until it is through or
    `time.monotonic()` passes `deadline` (then a later call goes on where this one stopped)."""
    report = MigrationReport()
    with _metered(table, report):
        marker = table.get(MARKER) or {}
        if int(marker.get("done", 0)) >= VERSION:
            report.done = True
            return report
        resume = marker.get("resume") if marker.get("version") == VERSION else None
        step = _Pass(table, report)
        for answer in table.scan(json.loads(resume) if resume else None, page=page):
            for item in answer["Items"]:
                step.item(item)
            report.scanned += len(answer["Items"])
            last = answer.get("LastEvaluatedKey")
            _record(table, last)
            if last is None:
                report.done = True
            elif deadline is not None and time.monotonic() > deadline:
                break
    return report


def _record(table: Table, last: dict[str, Any] | None) -> None:
    """Where the pass is: on after `last`, or (None) through."""
    update = Update(MARKER, set={"version": VERSION, "updated_at": iso(table.clock.now())})
    if last is None:
        update.set["done"] = VERSION
        update.remove.append("resume")
        table.layout.settle()
    else:
        update.set["resume"] = json.dumps(last)
    table.update(update)


class _Pass:
    """One pass's work on the items the Scan gives, remembering what it wrote already (the
    Scan's copy of an item it rewrote as part of a run is stale)."""

    def __init__(self, table: Table, report: MigrationReport) -> None:
        self.table = table
        self.report = report
        self.written: set[tuple[str, str]] = set()

    def item(self, item: dict[str, Any]) -> None:
        if is_legacy(item):
            moved = at_home(self.table, [item])
            self.report.spread += 1
            if not moved:
                return
            item = moved[0]
        if item["pk"].startswith(SERIES_PK) and item["sk"].startswith(SERIES):
            self.report.series += merge_version_bucket(self.table, item)
            return
        if not item["pk"].startswith(PART) or not item["sk"].startswith(TASK):
            return
        if (item["pk"], item["sk"]) in self.written:
            return
        agent = _agent_of(item["pk"])
        task = task_from_item(item)
        if "moved_at" in item:
            self._settle(agent, agent.key(item["sk"]))
        if item.get("run_id") is None and task.sort_ts:
            self._run(agent, self._root(agent, task))
        elif _old_layout(item):
            self._rewrite(agent, task)
        self._chunk(agent, item)

    def _root(self, agent: AgentKeys, task: TaskState) -> TaskState:
        """The run `task` is read as part of: its topmost stored ancestor (`reads.runs.find_run`)."""
        for _ in range(MAX_ANCESTRY):
            if task.parent_task_id is None:
                break
            parent = started_task(self.table.get(agent.key(TASK + task.parent_task_id)))
            if parent is None:
                break
            task = parent
        return task

    def _run(self, agent: AgentKeys, root: TaskState) -> None:
        """Store the run of `root` as reads take it (`runs.unmigrated_run`), root last: until
        then its reads walk the tree, so a pass stopped midway leaves it read as before."""
        if (agent.pk_of(TASK + root.task_id), TASK + root.task_id) in self.written:
            return
        tree = unmigrated_run(self.table, agent, root)
        if root.run_id is None:
            root.logs = stored_logs(self.table, agent, root.task_id)
        root.run_id = root.task_id
        for task in [*tree, root]:
            self._rewrite(agent, task)
        self.report.runs += 1

    def _rewrite(self, agent: AgentKeys, task: TaskState) -> None:
        """Write `task` as this code writes it, guarded by the version it was read at; if a
        batch wrote it meanwhile, read it again and go on from what is stored."""
        run_id = task.run_id
        for _ in range(MAX_ATTEMPTS):
            try:
                self.table.update(task_rewrite(agent, task))
            except ConditionFailed:
                item = self.table.get(agent.key(TASK + task.task_id))
                if item is None:
                    return
                if is_legacy(item):  # not moved yet (a task of the run this one is part of)
                    at_home(self.table, [item])
                    continue
                task = task_from_item(item)
                if task.run_id is None:  # as it was, but for what the batch added
                    task.logs = stored_logs(self.table, agent, task.task_id)
                    task.run_id = run_id
                elif not _old_layout(item):  # the batch rewrote it
                    return
                continue
            self.written.add((agent.pk_of(TASK + task.task_id), TASK + task.task_id))
            self.report.tasks += 1
            return
        raise RuntimeError(f"task {agent.name}/{task.task_id} kept changing: migrate again")

    def _chunk(self, agent: AgentKeys, item: dict[str, Any]) -> None:
        """Move what a task item holds of its events past `TaskLedger`'s bounds into chunks, a
        transaction at a time, each conditional on the version read (a batch that wrote the
        item meanwhile makes it read again)."""
        task_id = item["sk"][len(TASK):]
        chunked = False
        for _ in range(MAX_ATTEMPTS * 10):
            ledger = task_ledger(item)
            seen, pages = ledger.crowded()
            if not (seen or pages):
                self.report.chunked += chunked
                return
            chunks, update, _after = spill(agent, task_id, int(item.get("version", 0)), ledger,
                                           seen=seen, pages=pages, most=90)
            try:
                self.table.transact([*map(self.table.put_action, chunks),
                                     self.table.update_action(update)])
                chunked = True
            except ClientError as exc:
                if code(exc) != "TransactionCanceledException":
                    raise
            item = self.table.get(agent.key(item["sk"])) or {}
            if not item:
                return
        raise RuntimeError(f"task {agent.name}/{task_id} kept changing: migrate again")

    def _settle(self, agent: AgentKeys, key: dict[str, Any]) -> None:
        """Move the tasks still recorded under the run that the task of `key` was, before
        it moved into its parent's (`ingest.move_runs`); forget the move once it is
        `SETTLED`."""
        holder = self.table.get(key)
        if holder is None or "moved_at" not in holder or holder.get("run_id") is None:
            return
        old, new = holder["sk"][len(TASK):], holder["run_id"]
        for index, late in run_members(self.table, agent, old):
            self.report.moved += move_task(self.table, agent, late["sk"], old, new, index)
        if self.table.clock.now() - datetime.fromisoformat(holder["moved_at"]) > SETTLED:
            with contextlib.suppress(ConditionFailed):  # moved again since: the next pass looks
                self.table.update(Update(key, remove=["moved_at"], condition="#moved_at = :seen",
                                         condition_values={":seen": holder["moved_at"]}))


def _agent_of(pk: str) -> AgentKeys:
    """The agent of one of its partitions (`codec.keys`)."""
    login, slug = pk[len(PART):].rsplit("#", 1)[0].split("#", 1)
    return AgentKeys(login, slug)


def _old_layout(item: dict[str, Any]) -> bool:
    """A task item with one attribute per field, or in the `runs` index."""
    per_field = "task" not in item and any(name in item for name in TASK_FIELDS)
    return per_field or "gsi3pk" in item


@contextmanager
def _metered(table: Table, report: MigrationReport) -> Iterator[None]:
    """The capacity units of the requests made meanwhile, in this thread, added to `report`."""
    events = table.client.meta.events
    events.register("provide-client-params.dynamodb", _ask_capacity, unique_id="bench-migration-ask")
    events.register("after-call.dynamodb", _count_capacity, unique_id="bench-migration-count")
    token = _METER.set(report)
    try:
        yield
    finally:
        _METER.reset(token)


def _ask_capacity(params: dict[str, Any], **_: Any) -> None:
    if _METER.get() is not None:
        params["ReturnConsumedCapacity"] = "TOTAL"


def _count_capacity(parsed: dict[str, Any], model: Any, **_: Any) -> None:
    report = _METER.get()
    if report is None:
        return
    used = parsed.get("ConsumedCapacity") or []
    units = sum(c.get("CapacityUnits", 0.0) for c in (used if isinstance(used, list) else [used]))
    if model.name in _READS:
        report.read_units += units
    else:
        report.write_units += units
