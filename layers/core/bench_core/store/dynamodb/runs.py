"""Runs on DynamoDB (`bench_core.domain.runs`; SQLite's side is `sqlite_runs`).

- Every task item carries `run_id`, and every span below a root the `runs` index keys
  `gsi3pk` = `RUN#{A}#{run_id}`, `gsi3sk` = `{sort_ts}#{task_id}`: a run is its root (read by
  key, its id is the run's) and its spans in start order in `runs` (the index projects ALL),
  read a page at a time: one Query from a key on (`#sk > :after`), `Limit` the page, never a
  Scan nor a read per span. What the header counts is one Query of the partition that
  returns only the failed spans' keys (`run_counts`).
- A parent not stored yet that subtasks record as their run is a placeholder whose `run_id` is
  its own id (`codec.tasks.child_cost_update`); when it arrives with a parent of its own, the tasks
  under it move to its run (`ingest.move_runs`: one Query of its old run, one conditional update per
  task moved, each bumping `version` so a concurrent fold of that task is redone). A task
  written meanwhile under the old run may be missed (the index lags the table): the moved
  task keeps `moved_at`, and a read of its new run within `SETTLED` of the move reads such
  stragglers from the old run too (`_stragglers`); the table's migration moves them for good
  (`migration.py`).
- Tasks written before runs existed have no `run_id`: a read of their run walks its tree
  through the subtask listings and takes the log entries from the stored events
  (`unmigrated_run`), until the table's migration stores the tree so; from then on it is one
  Query.
- Reads never write: whatever an old layout or a race left behind is read as it is, and put
  right by the migration (`migration.py`), which the deployment runs.
- The runs list reads the roots newest first (`tasks`, or `tstatus` for one status; KEYS_ONLY
  indexes, so the roots are then read by key) and filters them here, reading by key only as
  many roots as the page still lacks (a page of N unfiltered runs reads N items; a filter
  reads on, what it skips included) and one index key more to know whether the list goes on;
  it looks at no more than `SCAN_LIMIT` roots per page: a page may hold fewer runs than asked,
  with a cursor to read on.
"""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from typing import Any

from ...domain.models import AgentRef, TaskState, iso
from ...domain.runs import RunFilter, append_log, span_key
from ...ports.store import RunCounts, RunHead, decode_cursor, encode_cursor
from .agents import live_agent
from .client import Table
from .codec.keys import META, TASK, AgentKeys, task_sort_key
from .codec.tasks import task_attributes, task_from_item
from .codec.values import to_item
from .evals import INSIGHTS, insights_from_item
from .ingest import read_task_events, started_task

SCAN_LIMIT = 1000
"""Roots the runs list examines per page at most."""
SETTLED = timedelta(minutes=15)
"""How long after a move its index entries may still show tasks under the old run: far beyond
DynamoDB's index lag, which is normally under a second. Reads look for stragglers that long."""
_LOWEST = "0"
"""Every real sort key starts with a digit (placeholders start with `#`)."""


class DynamoRuns:
    """Reading runs on `table`: one Query of `runs` per run, the roots newest first for the
    list."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def run_head(self, ref: AgentRef, task_id: str) -> RunHead:
        """One BatchGetItem (strongly consistent, as each GetItem would be) of the agent, the
        task and the insights items."""
        agent = AgentKeys(ref.login, ref.slug)
        found = {item["sk"]: item for item in self.table.batch_get(
            [agent.key(META), agent.key(TASK + task_id), agent.key(INSIGHTS)])}
        return RunHead(live_agent(found.get(META), iso(self.table.clock.now())),
                       started_task(found.get(TASK + task_id)),
                       insights_from_item(found.get(INSIGHTS)))

    def run_spans(self, ref: AgentRef, run: TaskState, *, limit: int,
                  after: tuple[str, str] | None = None, content: bool = True
                  ) -> list[TaskState]:
        """One Query of `runs` from `after` on, `Limit` the page (and one more item, for a
        root indexed before roots were left out), reading only what a task read uses
        (without `content`, not the spans' inputs, outputs, metadata and logs): DynamoDB
        bills the items whole anyway, but sends and we decode only that."""
        agent = AgentKeys(ref.login, ref.slug)
        if run.run_id is None:
            spans = self._unmigrated(agent, run)
            return [s for s in spans if after is None or span_key(s) > after][:limit]
        root = TASK + run.task_id
        pk = agent.run_pk(run.task_id)
        projection = (*task_attributes(content=content), "moved_at")
        if after is None:
            found = self.table.query(pk, "#sk >= :low", index="runs", page=limit + 1,
                                     projection=projection, low=_LOWEST)
        else:
            found = self.table.query(pk, "#sk > :after", index="runs", page=limit + 1,
                                     projection=projection, after=task_sort_key(*after))
        items = list(itertools.islice((i for i in found if i["sk"] != root), limit))
        items += self._stragglers(agent, run.task_id, items, projection)
        spans = sorted((task_from_item(item) for item in items), key=span_key)
        return [s for s in spans if after is None or span_key(s) > after][:limit]

    def run_counts(self, ref: AgentRef, run: TaskState) -> RunCounts:
        """One Query of the run's `runs` partition that counts every span (`ScannedCount`)
        and returns only the keys of the failed ones and of a root indexed before roots were
        left out (which is then not counted): memory stays at a page whatever the run's
        size, though DynamoDB reads (and bills) the partition whole."""
        agent = AgentKeys(ref.login, ref.slug)
        if run.run_id is None:
            tree = self._unmigrated(agent, run)
            failures = [s.task_id for s in tree if s.status == "failed"]
            return RunCounts(len(tree), len(failures), failures[0] if failures else None)
        root = TASK + run.task_id
        params = self.table.query_params(agent.run_pk(run.task_id), "#sk >= :low",
                                         index="runs", projection=("sk",), low=_LOWEST)
        params["FilterExpression"] = ("#key = :root OR contains(#task, :failed) "
                                      "OR #status = :status")  # `status`: an item's old layout
        params["ExpressionAttributeNames"] |= {"#key": "sk", "#task": "task",
                                               "#status": "status"}
        params["ExpressionAttributeValues"] |= to_item(
            {":root": root, ":failed": '"status":"failed"', ":status": "failed"})
        spans = failed = 0
        first: str | None = None
        for answer in self.table.answers(params):
            spans += answer["ScannedCount"]
            for item in answer["Items"]:
                if item["sk"] == root:
                    spans -= 1
                    continue
                failed += 1
                first = first or item["sk"][len(TASK):]
        return RunCounts(spans, failed, first)

    def _stragglers(self, agent: AgentKeys, run_id: str, items: list[dict[str, Any]],
                    projection: tuple[str, ...]) -> list[dict[str, Any]]:
        """Tasks still recorded under a run that moved into this one within `SETTLED`
        (`ingest.move_runs` missed them: a concurrent batch wrote them while the index lagged),
        read from the old run as this run's (the table's migration moves them for good)."""
        found: list[dict[str, Any]] = []
        known = {item["sk"] for item in items}
        now = self.table.clock.now()
        moved = [item for item in items if _recently_moved(item, now)]
        while moved:
            old = moved.pop()["sk"][len(TASK):]
            for item in self.table.query(agent.run_pk(old), index="runs", projection=projection):
                if item["sk"] in known:  # moved meanwhile, and read from this run already
                    continue
                known.add(item["sk"])
                item["run_id"] = run_id
                found.append(item)
                if _recently_moved(item, now):
                    moved.append(item)
        return found

    def _unmigrated(self, agent: AgentKeys, root: TaskState) -> list[TaskState]:
        """The spans of a run stored before runs existed, in start order; `root` comes out with
        its log entries, as the migration stores them (`unmigrated_run`)."""
        root.logs = stored_logs(self.table, agent, root.task_id)
        return sorted(unmigrated_run(self.table, agent, root), key=span_key)

    def list_runs(self, ref: AgentRef, where: RunFilter, *, limit: int = 50,
                  cursor: str | None = None) -> tuple[list[TaskState], str | None]:
        agent = AgentKeys(ref.login, ref.slug)
        index, pk, sort = (("tasks", agent.tasks_pk(None), "tlsk") if where.status is None
                           else ("tstatus", agent.status_pk(None, where.status), "tssk"))
        page = min(SCAN_LIMIT, limit) + 1
        if cursor:
            after = task_sort_key(*decode_cursor(cursor))
            keys = self.table.query(pk, "#sk BETWEEN :low AND :after", index=index,
                                    forward=False, page=page, low=_LOWEST, after=after)
            keys = (item for item in keys if item[sort] != after)
        else:
            keys = self.table.query(pk, "#sk >= :low", index=index, forward=False, page=page,
                                    low=_LOWEST)
        kept: list[TaskState] = []
        last: TaskState | None = None
        examined = 0
        while len(kept) < limit and examined < SCAN_LIMIT:
            wanted = list(itertools.islice(keys, min(limit - len(kept), SCAN_LIMIT - examined)))
            if not wanted:
                return kept, None
            examined += len(wanted)
            for item in self.table.get_all([agent.key(k["sk"]) for k in wanted],
                                           consistent=False):
                last = task_from_item(item)
                if where.keeps(last):
                    kept.append(last)
        if last is None or next(keys, None) is None:
            return kept, None
        return kept, encode_cursor(last.sort_ts, last.task_id)


def _recently_moved(item: dict[str, Any], now: datetime) -> bool:
    """A task moved into another run (`ingest.move_runs`) less than `SETTLED` before `now`."""
    moved = item.get("moved_at")
    return moved is not None and now - datetime.fromisoformat(moved) <= SETTLED


def unmigrated_run(table: Table, agent: AgentKeys, root: TaskState) -> list[TaskState]:
    """Every task below `root`, a run stored before runs existed (its root has no `run_id`),
    found through the subtask listings level by level, each with the run's id; one stored before
    runs existed too (no `run_id`) kept no log entries, which are then taken from its stored
    events. The read of such a run takes it from here, and so does the table's migration,
    which stores it (`migration.py`)."""
    run_id = root.task_id
    level = [run_id]
    tree: list[TaskState] = []
    seen = {run_id}
    while level:
        found = []
        for parent in level:
            keys = [agent.key(item["sk"])
                    for item in table.query(agent.tasks_pk(parent), index="tasks")]
            for item in table.get_all(keys):
                task = task_from_item(item)
                if task.task_id not in seen:
                    seen.add(task.task_id)
                    found.append(task.task_id)
                    tree.append(task)
        level = found
    for task in tree:
        if task.run_id is None:
            task.logs = stored_logs(table, agent, task.task_id)
        task.run_id = run_id
    return tree


def stored_logs(table: Table, agent: AgentKeys, task_id: str) -> list[dict[str, Any]]:
    """A task's log entries from its stored events, as folding keeps them (`append_log`)."""
    logs: list[dict[str, Any]] = []
    for body in read_task_events(table, agent, task_id):
        if body.get("kind") == "task.log":
            append_log(logs, body.get("ts", ""), body.get("data"))
    return logs
