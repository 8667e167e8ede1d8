"""Reading tasks by id where some may be packed (`codec.packs`, which says why): a task's own
item first (`TASK#`), and for an id of a trace's span not found so, its trace's packs (one
Query of their prefix, or one read by key where a `spans` entry named the pack)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .client import Table
from .codec.keys import TASK, AgentKeys
from .codec.packs import pack_prefix, packs_of, task_items


def read_tasks(table: Table, agent: AgentKeys, task_ids: Iterable[str], *,
               consistent: bool = True, projection: Iterable[str] = (),
               packs: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The task items of `task_ids` that exist, in that order: own items (one BatchGetItem),
    then packed spans for the ids left (`packs`: the pack of an id where it is known, read by
    key; else its trace's packs, one Query a trace)."""
    ids = list(dict.fromkeys(task_ids))
    if not ids:
        return []
    if len(ids) == 1 and not projection:  # a GetItem, as for any one item
        own = [item] if (item := table.get(agent.key(TASK + ids[0]),
                                           consistent=consistent)) else []
    else:
        own = table.get_all([agent.key(TASK + task_id) for task_id in ids],
                            consistent=consistent, projection=projection)
    found = {item["sk"][len(TASK):]: item for item in own}
    missing = [task_id for task_id in ids if task_id not in found]
    if missing:
        found |= packed(table, agent, missing, consistent=consistent, packs=packs or {})
    return [found[task_id] for task_id in ids if task_id in found]


def packed(table: Table, agent: AgentKeys, task_ids: list[str], *, consistent: bool = True,
           packs: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """The packed spans among `task_ids`, by id, as task items (`codec.packs.task_items`)."""
    wanted = set(task_ids)
    known = {task_id: sk for task_id, sk in (packs or {}).items() if task_id in wanted}
    items = table.batch_get([agent.key(sk) for sk in set(known.values())],
                            consistent=consistent) if known else []
    for trace in packs_of(wanted - known.keys()):
        items += trace_packs(table, agent, trace, consistent=consistent)
    return {task_id: task for item in items for task in task_items(item)
            if (task_id := task["sk"][len(TASK):]) in wanted}


def trace_packs(table: Table, agent: AgentKeys, trace: str, *, consistent: bool = True
                ) -> list[dict[str, Any]]:
    """Every pack of `trace`: one Query of its prefix in the partition they share."""
    prefix = pack_prefix(trace)
    params = table.query_params(agent.pk_of(prefix), "begins_with(#sk, :prefix)", prefix=prefix)
    params["ConsistentRead"] = consistent
    return list(table.pages(params))
