"""What every item is made of: numbers, JSON texts, expiry attributes and update expressions.

- Numbers: DynamoDB keeps exact decimals of at most 38 digits, so floats are rounded to 12
  decimal places (far below any cost or duration that matters) and clamped to +-1e15; sums made
  by `ADD` then never lose precision and never carry binary float noise.
- Arbitrary JSON (inputs, outputs, metadata, cost breakdowns, event bodies) is stored as JSON
  text: no Decimal conversion, no empty-set or nesting limits, and reads give back exactly what
  SQLite gives.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from pydantic_core import from_json

_MAX_NUMBER = 1e15
_SERIALIZER = TypeSerializer()
_DESERIALIZER = TypeDeserializer()


def number(x: float) -> Decimal:
    """A float or int as a DynamoDB number (see the module docstring for why it is rounded)."""
    if isinstance(x, int) and not isinstance(x, bool):
        return Decimal(x)
    text = f"{max(-_MAX_NUMBER, min(_MAX_NUMBER, float(x))):.12f}".rstrip("0").rstrip(".")
    return Decimal(text)


def av(value: Any) -> dict[str, Any]:
    """A Python value as an AttributeValue (boto3 refuses floats; they become `number`s)."""
    item: dict[str, Any] = _SERIALIZER.serialize(number(value) if isinstance(value, float) else value)
    return item


def to_item(attrs: dict[str, Any]) -> dict[str, Any]:
    return {name: av(value) for name, value in attrs.items()}


def plain(item: dict[str, Any]) -> dict[str, Any]:
    """An item's AttributeValues as Python values (numbers come back as Decimal)."""
    return {name: _DESERIALIZER.deserialize(value) for name, value in item.items()}


def loads(text: str | None) -> Any:
    """JSON text `dumps` wrote, as values (pydantic-core's parser: three times `json.loads`'
    speed, which a run of a thousand task items notices)."""
    return None if text is None else from_json(text)


def optional_float(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


def ttl(until: str) -> dict[str, Any]:
    """The expiry attributes of an item that lives until the ISO instant `until`: `expires_at`
    (epoch seconds, the table's TTL attribute, so DynamoDB deletes it for free) and `until`
    (the same instant, compared exactly on every read: TTL deletion can lag by a day or two,
    so an expired item must never count as live)."""
    epoch = math.ceil(datetime.fromisoformat(until.replace("Z", "+00:00")).timestamp())
    return {"until": until, "expires_at": epoch}


@dataclass
class Update:
    """One UpdateItem built field by field. Every attribute name goes through a `#name`
    placeholder, since many of Bench's (name, status, input, day) are DynamoDB reserved words;
    a `condition` names attributes the same way and its values by the `:names` it uses."""

    key: dict[str, Any]
    set: dict[str, Any] = field(default_factory=dict)
    set_if_absent: dict[str, Any] = field(default_factory=dict)
    add: dict[str, Any] = field(default_factory=dict)
    remove: list[str] = field(default_factory=list)
    condition: str | None = None
    condition_values: dict[str, Any] = field(default_factory=dict)

    def params(self, table: str) -> dict[str, Any]:
        """The arguments of `UpdateItem`, or of an `Update` inside `TransactWriteItems`."""
        names: dict[str, str] = {}
        values: dict[str, Any] = {}

        def name(attr: str) -> str:
            names[f"#{attr}"] = attr
            return f"#{attr}"

        def value(v: Any) -> str:
            placeholder = f":v{len(values)}"
            values[placeholder] = av(v)
            return placeholder

        sets = [f"{name(k)} = {value(v)}" for k, v in self.set.items()]
        sets += [f"{name(k)} = if_not_exists({name(k)}, {value(v)})"
                 for k, v in self.set_if_absent.items()]
        clauses = [("SET", sets), ("ADD", [f"{name(k)} {value(v)}" for k, v in self.add.items()]),
                   ("REMOVE", [name(k) for k in self.remove])]
        out: dict[str, Any] = {
            "TableName": table, "Key": self.key,
            "UpdateExpression": " ".join(f"{verb} {', '.join(parts)}"
                                         for verb, parts in clauses if parts)}
        if self.condition:
            for attr in re.findall(r"#(\w+)", self.condition):
                name(attr)
            values.update({k: av(v) for k, v in self.condition_values.items()})
            out["ConditionExpression"] = self.condition
        out["ExpressionAttributeNames"] = names
        if values:
            out["ExpressionAttributeValues"] = values
        return out


def set_or_remove(update: Update, fields: dict[str, Any]) -> Update:
    """`update` setting each of `fields` that has a value and removing each that is None."""
    update.set.update({k: v for k, v in fields.items() if v is not None})
    update.remove.extend(k for k, v in fields.items() if v is None)
    return update
