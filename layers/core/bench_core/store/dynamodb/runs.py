"""Runs on DynamoDB (`bench_core.domain.runs`; SQLite's side is `sqlite_runs`).

- Every task item carries `run_id` and the `gsi3` keys `gsi3pk` = `RUN#{A}#{run_id}`, `gsi3sk` =
  `{sort_ts}#{task_id}`: all spans of a run are one Query of `gsi3` (paged by DynamoDB at 1 MB),
  never a Scan and never a GetItem per span.
- A parent not stored yet that subtasks record as their run is a placeholder whose `run_id` is
  its own id (`codec.child_cost_update`); when it arrives with a parent of its own, the tasks
  under it move to its run (`_move_runs`: one Query of its old run, one conditional update per
  task moved, each bumping `version` so a concurrent fold of that task is redone).
- Tasks written before runs existed have no `run_id`: the first read of their run gives the
  tree its run id and log entries (`_migrate_run`), from then on it is one Query.
- The runs list reads the roots newest first (`gsi1`, or `gsi2` for one status) and filters
  them here, looking at no more than `SCAN_LIMIT` roots per page: a page may hold fewer runs
  than asked, with a cursor to read on.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from ...domain.models import AgentRef, TaskState
from ...domain.runs import Reassign, RunFilter, append_log
from .. import decode_cursor, encode_cursor
from . import codec
from .client import ConditionFailed, Table
from .codec import AgentKeys, Update

SCAN_LIMIT = 1000
"""Roots the runs list examines per page at most."""
_LOWEST = "0"
"""Every real sort key starts with a digit (placeholders start with `#`)."""


def move_runs(table: Table, agent: AgentKeys, moves: list[Reassign]) -> None:
    """After a batch's transaction: the tasks recorded under a run that turned out to have a
    parent (`runs.Reassign`) move to its run, each guarded by the run it had."""
    for move in moves:
        for item in table.query(agent.run_pk(move.old), index="gsi3", projection="sk, gsi3sk"):
            update = Update(agent.key(item["sk"]),
                            set={"run_id": move.new, "gsi3pk": agent.run_pk(move.new)},
                            add={"version": 1}, condition="#run_id = :old",
                            condition_values={":old": move.old})
            with contextlib.suppress(ConditionFailed):  # moved already (the index lags)
                table.update(codec.expiring(update, agent))


class DynamoRuns:
    """Reading runs on `table`: one Query of `gsi3` per run, the roots newest first for the
    list."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def run_tasks(self, ref: AgentRef, run_id: str, *, content: bool = True) -> list[TaskState]:
        """Whole items whatever `content` says: a Query reads (and bills) them whole anyway."""
        agent = AgentKeys(ref.login, ref.slug)
        root = self.table.get(agent.key(codec.TASK + run_id))
        if root is None:
            return []
        if "run_id" not in root:
            self._migrate_run(agent, root)
        items = self.table.query(agent.run_pk(run_id), "#sk >= :low", index="gsi3", low=_LOWEST)
        return [codec.task_from_item(item) for item in items]

    def _migrate_run(self, agent: AgentKeys, root: dict[str, Any]) -> None:
        """Give a run stored before runs existed its run id and its tasks' log entries: walk
        its tree through the subtask listings, then mark the root last (a crash midway only
        means the next read walks again)."""
        run_id = root["sk"][len(codec.TASK):]
        level = [run_id]
        tree: list[dict[str, Any]] = []
        seen = {run_id}
        while level:
            found = []
            for parent in level:
                for item in self.table.query(agent.tasks_pk(parent), index="gsi1"):
                    task_id = item["sk"][len(codec.TASK):]
                    if task_id not in seen:
                        seen.add(task_id)
                        found.append(task_id)
                        tree.append(item)
            level = found
        for item in [*tree, root]:
            task = codec.task_from_item(item)
            logs: list[dict[str, Any]] = []
            for event in sorted(self.table.query(agent.task_events_pk(task.task_id), index="gsi2"),
                                key=codec.event_order):
                body = json.loads(event["body"])
                if body.get("kind") == "task.log":
                    append_log(logs, body.get("ts", ""), body.get("data"))
            task.run_id = run_id
            self.table.update(codec.expiring(Update(
                agent.key(item["sk"]), set={**codec.run_keys(agent, task),
                                            "logs": codec.dumps(logs)}), agent))

    def list_runs(self, ref: AgentRef, where: RunFilter, *, limit: int = 50,
                  cursor: str | None = None) -> tuple[list[TaskState], str | None]:
        agent = AgentKeys(ref.login, ref.slug)
        index, pk = (("gsi1", agent.tasks_pk(None)) if where.status is None
                     else ("gsi2", agent.status_pk(None, where.status)))
        if cursor:
            after = codec.task_sort_key(*decode_cursor(cursor))
            items = self.table.query(pk, "#sk BETWEEN :low AND :after", index=index, forward=False,
                                page=min(SCAN_LIMIT, 4 * limit), low=_LOWEST, after=after)
            items = (item for item in items if item[f"{index}sk"] != after)
        else:
            items = self.table.query(pk, "#sk >= :low", index=index, forward=False,
                                page=min(SCAN_LIMIT, 4 * limit), low=_LOWEST)
        kept: list[TaskState] = []
        last: TaskState | None = None
        for examined, item in enumerate(items):
            if len(kept) == limit or examined == SCAN_LIMIT:
                assert last is not None
                return kept, encode_cursor(last.sort_ts, last.task_id)
            last = codec.task_from_item(item)
            if where.keeps(last):
                kept.append(last)
        return kept, None
