"""A span's entry in the `spans` index: what the run page draws of it, and nothing else.

Every task below a run's root carries `spk` = `RUN#{A}#{run_id}` and `ssk` =
`{sort_ts}#{task_id}` (a run's spans in start order, as `domain.runs.span_key` orders them) and
`row`, one JSON text: `[status, parent_task_id, name, started, ended, duration_ms, cost_usd,
recorded, model, evidence]`, its times in milliseconds after the time in `ssk` (its start, or
its end if it has none; null where unknown; the ISO text itself for a time not to the
millisecond), `recorded` what orders siblings that start in the same millisecond
(`TaskState.recorded`, its two times kept the same way: `[first, last, place]`), `model` the
model it called (`TaskState.model`), `evidence` its evidence's cost, tokens in and out and
calls (what its tree row shows), each left out at the end where unknown. The index projects only
`row` (and `moved_at`, which a run holder keeps for a while after a move, `runs._stragglers`),
so a Query of a run's spans reads some 250 bytes a span (its keys, its row and DynamoDB's 100
bytes an entry), whatever its content: DynamoDB bills a Query by the entries it reads (4 KB a
read unit, half that eventually consistent), so the run page of 1,000 spans reads some 30 RRU
of them (tests/aws/test_dynamodb_run_page_cost.py), where the ALL-projected `runs` index read
every span's content (820 RRU at 6 KB a span). Content is read by key, and only what is shown:
the selected span on the page, a page of spans for the JSON (`runs.DynamoRuns.run_spans` with
`content`).

Status comes first so that a filter can pick the failed spans out of the text alone
(`begins_with(row, '["failed"')`), as `run_counts` does. Writing the row costs one write unit
per fold that changes it (a span's start and its end), none for a fold that changes only
content (a log), where an ALL entry was rewritten whole on every write of its item.

Tasks written before this layout carry `gsi3pk`/`gsi3sk` instead (the `runs` index, ALL); reads
take those from `runs` until the table's migration rewrites them (`migration.py`), and a later
deployment drops `runs` (CloudFormation adds or drops one index per update).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic_core import from_json

from ....domain.field_limits import dumps
from ....domain.models import TaskState, Usage, iso
from .keys import AgentKeys, task_sort_key
from .values import number

FAILED_ROW = '["failed"'
"""How the row of a failed span begins."""
SPAN_ATTRIBUTES = ("sk", "ssk", "row", "moved_at")
"""What a read of the `spans` index fetches: the task's key, its place and its row."""
_MS = timedelta(milliseconds=1)


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
    origin = _moment(task.sort_ts)
    row = [task.status, task.parent_task_id, task.name, _after(task.started_at, origin),
           _after(task.ended_at, origin), _rounded(task.duration_ms), _rounded(task.cost_usd)]
    extra = [None if task.recorded is None else _recorded_after(task.recorded, origin),
             task.model, _evidence_row(task.evidence)]
    while extra and extra[-1] is None:
        extra.pop()
    return dumps([*row, *extra])


def _evidence_row(usage: Usage | None) -> list[Any] | None:
    """What a span's row keeps of its evidence, what its tree row shows: cost, tokens in and
    out, calls (some 20 bytes)."""
    if usage is None:
        return None
    cost = None if usage.cost_usd is None else _rounded(usage.cost_usd)
    return [cost, usage.input_tokens, usage.output_tokens, usage.calls]


def _evidence_of(kept: list[Any] | None) -> Usage | None:
    if not kept:
        return None
    cost, input_tokens, output_tokens, calls = kept
    return Usage(cost_usd=cost, input_tokens=input_tokens, output_tokens=output_tokens,
                 calls=calls)


def _recorded_after(recorded: str, origin: datetime | None) -> list[Any] | str:
    """`recorded` (`folding.recorded_at`: two times and a place) as the row keeps it: its
    times after `origin` as `_after` writes them, some 15 bytes where the text takes 56."""
    parts = recorded.split("#")
    if len(parts) != 3 or not parts[2].isdigit():
        return recorded
    return [_after(parts[0], origin), _after(parts[1], origin), int(parts[2])]


def _recorded_at(kept: list[Any] | str, origin: datetime | None) -> str:
    """The `recorded` text `_recorded_after` kept."""
    if isinstance(kept, str):
        return kept
    first, last, place = kept
    return f"{_at(first, origin)}#{_at(last, origin)}#{place:06d}"


def _moment(ts: str) -> datetime | None:
    return datetime.fromisoformat(ts) if ts else None


def _after(ts: str | None, origin: datetime | None) -> int | str | None:
    """`ts` as whole milliseconds after `origin`, where that gives it back exactly."""
    if ts is None or origin is None:
        return ts
    ms = round((datetime.fromisoformat(ts) - origin) / _MS)
    return ms if iso(origin + ms * _MS) == ts else ts


def _rounded(value: float | None) -> float | None:
    return None if value is None else float(number(value))


def task_from_span(item: dict[str, Any], run_id: str) -> TaskState:
    """The task of a `spans` entry, with what its row holds: no content, no eval, of its
    evidence what its tree row shows."""
    status, parent, name, started, ended, duration, cost, *extra = from_json(item["row"])
    recorded, model, evidence = [*extra, None, None, None][:3]
    sort_ts, task_id = item["ssk"].split("#", 1)
    origin = _moment(sort_ts)
    return TaskState(task_id=task_id, parent_task_id=parent, name=name, status=status,
                     started_at=_at(started, origin), ended_at=_at(ended, origin),
                     duration_ms=duration, cost_usd=cost, run_id=run_id,
                     recorded=None if recorded is None else _recorded_at(recorded, origin),
                     model=model, evidence=_evidence_of(evidence))


def _at(after: int | str | None, origin: datetime | None) -> str | None:
    """The time `_after` wrote."""
    if isinstance(after, int) and origin is not None:
        return iso(origin + after * _MS)
    return after if isinstance(after, str) else None
