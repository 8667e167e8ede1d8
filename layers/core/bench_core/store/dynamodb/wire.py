"""DynamoDB's answers to the reads `Table` makes, decoded from their JSON straight to Python values.

botocore parses an answer against the service model, attribute by attribute, and boto3's
`TypeDeserializer` then walks it again: for the thousand items of a run's Query that is four
fifths of the read's time (tests/perf/runs.py). Here the body is parsed once, by orjson (twice
pydantic-core's speed on these bodies, which hold only strings, maps and lists: DynamoDB sends
numbers as strings), and each AttributeValue becomes its value in one step, in botocore's
`before-parse` hook (the one its own S3 handlers use to adjust an answer): the items are taken
out of the body and handed back through `customized_response_dict`, so botocore parses only
what is left (keys to read on, unprocessed keys, capacity). The values are what
`codec.values.plain` gives (numbers as `Decimal`, sets as sets), except that binaries are `bytes`.

Only reads made `inside` this module's context are decoded here, so a client shared with other
code answers that code as boto3 always does. Errors (status >= 300) are left to botocore. An
answer the hook did not decode (a botocore that stopped emitting `before-parse`) is decoded
after the fact by `plain_answer`, the slow way (`codec.values.plain`), rather than handed on
in the wire form; never silently, though: every test's store fails a read this module did not
decode (`tests/aws/moto_table.py`), and the deployment's read routes are held to it
(`tests/aws/test_dynamodb_migration.py`).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from decimal import Decimal
from typing import Any

import orjson

from .codec.values import plain

_ACTIVE: ContextVar[bool] = ContextVar("bench_dynamodb_plain_reads", default=False)
ITEMS = {"GetItem": "Item", "Query": "Items", "Scan": "Items", "BatchGetItem": "Responses"}
"""Where each read's answer holds its items."""
DECODED = "BenchPlainItems"
"""Marks an answer whose items `decode` turned into plain values."""


def _value(av: dict[str, Any]) -> Any:
    (kind, raw), = av.items()
    if kind == "S":
        return raw
    if kind == "N":
        return Decimal(raw)
    if kind == "M":
        return item(raw)
    if kind == "L":
        return [_value(v) for v in raw]
    if kind == "SS":
        return set(raw)
    if kind == "NS":
        return {Decimal(n) for n in raw}
    if kind == "B":
        return base64.b64decode(raw)
    if kind == "BS":
        return {base64.b64decode(b) for b in raw}
    if kind == "BOOL":
        return raw
    if kind == "NULL":
        return None
    raise ValueError(f"unknown DynamoDB attribute type {kind!r}")


def item(attributes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """An item's attributes (AttributeValues as JSON values) as Python values. Strings and
    numbers, nearly all there are, are taken without a call."""
    return {name: av["S"] if "S" in av else Decimal(av["N"]) if "N" in av else _value(av)
            for name, av in attributes.items()}


def decode(operation_model: Any, response_dict: dict[str, Any],
           customized_response_dict: dict[str, Any], **_: Any) -> None:
    """botocore's `before-parse` handler (see the module docstring)."""
    field = ITEMS.get(operation_model.name)
    if field is None or not _ACTIVE.get() or response_dict["status_code"] >= 300:
        return
    body = orjson.loads(response_dict["body"])
    found = body.pop(field, None)
    customized_response_dict[DECODED] = True
    if found is not None:
        customized_response_dict[field] = _each(field, found, item)
        response_dict["body"] = orjson.dumps(body)


def plain_answer(operation: str, response: dict[str, Any]) -> dict[str, Any]:
    """`response` (to read `operation`, made `inside`) with plain items, however it came."""
    field = ITEMS[operation]
    if not response.pop(DECODED, False) and response.get(field) is not None:
        response[field] = _each(field, response[field], plain)
    return response


def _each(field: str, found: Any, decode_item: Callable[[dict[str, Any]], dict[str, Any]]
          ) -> Any:
    """`found` (an answer's `field`) with `decode_item` applied to every item it holds."""
    if field == "Responses":
        return {table: [decode_item(i) for i in items] for table, items in found.items()}
    if field == "Items":
        return [decode_item(i) for i in found]
    return decode_item(found)


def install(client: Any) -> None:
    """Decode `client`'s reads here when they are made `inside` (registering twice is a no-op)."""
    client.meta.events.register("before-parse.dynamodb", decode, unique_id="bench-plain-reads")


@contextmanager
def inside() -> Iterator[None]:
    """Reads made meanwhile, in this thread or task, answer with plain items."""
    token = _ACTIVE.set(True)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
