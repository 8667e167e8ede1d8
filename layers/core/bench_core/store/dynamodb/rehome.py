"""Items an older layout left under an agent's own partition key, moved where they now live
(`codec.keys`) by whoever is about to write them, so that a write never lands beside an old copy
(`layout.py`: while the table's migration is under way; the migration moves the rest)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from .client import MAX_ATTEMPTS, Table, busy, code
from .codec.keys import AGENT, TASK, AgentKeys, legacy_key
from .codec.values import to_item


def is_legacy(item: dict[str, Any]) -> bool:
    """Whether `item` (as read) is an agent's task, chunk, page or claim still where an older
    layout put it."""
    return item["pk"].startswith(AGENT) and legacy_key(_home(item)) is not None


def _home(item: dict[str, Any]) -> dict[str, Any]:
    login, slug = item["pk"][len(AGENT):].split("#", 1)
    return AgentKeys(login, slug).key(item["sk"])


def move_home(table: Table, item: dict[str, Any]) -> bool:
    """Move `item` (as read, from where an older layout put it) to where it now lives: a task
    by one transaction guarded by the `version` read (a concurrent write of the old item
    cancels it); anything else (sealed: chunks, pages, claims) copied, then the old one
    deleted. False if the task changed or moved meanwhile: read it again."""
    home = _home(item)
    stored = {**to_item({k: v for k, v in item.items() if k not in ("pk", "sk")}), **home}
    old = to_item({"pk": item["pk"], "sk": item["sk"]})
    if not item["sk"].startswith(TASK):
        table.put(stored)
        table.delete(old)
        return True
    version = item.get("version")
    guard: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(#v)",
                             "ExpressionAttributeNames": {"#v": "version"}}
    if version is not None:
        guard |= {"ConditionExpression": "#v = :v",
                  "ExpressionAttributeValues": to_item({":v": version})}
    try:
        table.transact([table.put_action(stored),
                        {"Delete": {"TableName": table.name, "Key": old, **guard}}])
    except ClientError as exc:
        if code(exc) != "TransactionCanceledException":
            raise
        return False
    return True


def at_home(table: Table, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`items` as read (strongly consistent), those an older layout left moved where they now
    live first; where a concurrent write won, as that write left them."""
    out = []
    for found in items:
        item: dict[str, Any] | None = found
        for _ in range(MAX_ATTEMPTS):
            if item is None or not is_legacy(item):
                break
            if move_home(table, item):
                item = {**item, "pk": _home(item)["pk"]["S"]}
                break
            item = table.get(_home(item))  # where it is now (`client.Table` looks in both)
        else:
            raise busy()
        if item is not None:
            out.append(item)
    return out
