"""A span's entry in the `spans` index: what the run page draws of it, and nothing else.

Every task below a run's root carries `spk` = `RUN#{A}#{run_id}` and `ssk` =
`{sort_ts}#{task_id}` (a run's spans in start order, as `domain.runs.span_key` orders them) and
`row`, one JSON text: `[status, parent_task_id, name, started_at, ended_at, duration_ms,
cost_usd]`. The index projects only `row` (and `moved_at`, which a run holder keeps for a
while after a move, `runs._stragglers`), so a Query of a run's spans reads some 300 bytes a
span, whatever its content: DynamoDB bills a Query by the index entries it reads, and the run
page of 1,000 spans reads 37 RRU of them (tests/aws/test_dynamodb_run_page_cost.py), where the
ALL-projected `runs` index read every span's content (820 RRU for 6 KB a span). Content is
read by key, and only what is shown: the selected span on the page, a page of spans for the
JSON (`runs.DynamoRuns.run_spans` with `content`).

Status comes first so that a filter can pick the failed spans out of the text alone
(`begins_with(row, '["failed"')`), as `run_counts` does. Writing the row costs one write unit
per fold that changes it (a span's start and its end), none for a fold that changes only
content (a log), where an ALL entry was rewritten whole on every write of its item.

Tasks written before this layout carry `gsi3pk`/`gsi3sk` instead (the `runs` index, ALL); reads
take those from `runs` until the table's migration rewrites them (`migration.py`), and a later
deployment drops `runs` (CloudFormation adds or drops one index per update).
"""

from __future__ import annotations

from typing import Any

from pydantic_core import from_json

from ....domain.field_limits import dumps
from ....domain.models import TaskState
from .keys import TASK, AgentKeys, task_sort_key
from .values import number

FAILED_ROW = '["failed"'
"""How the row of a failed span begins."""
SPAN_ATTRIBUTES = ("sk", "ssk", "row", "moved_at")
"""What a read of the `spans` index fetches: the task's key, its place and its row."""


def span_keys(agent: AgentKeys, task: TaskState) -> dict[str, Any]:
    """The `spans` index attributes of a task below a run's root (a root is read by its key
    and takes no entry), and None for the `runs` index keys that older code wrote."""
    keys: dict[str, Any] = {"gsi3pk": None, "gsi3sk": None}
    if task.run_id is None or task.parent_task_id is None:
        return {**keys, "spk": None, "ssk": None, "row": None}
    return {**keys, "spk": agent.run_pk(task.run_id),
            "ssk": task_sort_key(task.sort_ts, task.task_id), "row": span_row(task)}


def span_row(task: TaskState) -> str:
    """The row's JSON text; numbers rounded as the task's own are (`values.number`)."""
    return dumps([task.status, task.parent_task_id, task.name, task.started_at, task.ended_at,
                  _rounded(task.duration_ms), _rounded(task.cost_usd)])


def _rounded(value: float | None) -> float | None:
    return None if value is None else float(number(value))


def task_from_span(item: dict[str, Any], run_id: str) -> TaskState:
    """The task of a `spans` entry, with what its row holds: no content, no eval, no
    evidence."""
    status, parent, name, started, ended, duration, cost = from_json(item["row"])
    return TaskState(task_id=item["sk"][len(TASK):], parent_task_id=parent, name=name,
                     status=status, started_at=started, ended_at=ended, duration_ms=duration,
                     cost_usd=cost, run_id=run_id)
