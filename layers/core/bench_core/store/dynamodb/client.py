"""The table every concern of the DynamoDB adapter writes to: one client, the request shapes
Bench uses (consistent reads, guarded updates, transactions, batches, paged queries) and what
their failures mean. Each concern (`ingest.py`, `agents.py`, ...) is given the same `Table`.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import boto3
from botocore.exceptions import ClientError

from ...clock import SYSTEM_CLOCK, Clock
from ...domain.errors import TooManyRequests
from . import wire
from .codec.keys import legacy_key
from .codec.values import Update, plain, to_item
from .layout import Layout
from .table import TASK_INDEXES

MAX_ATTEMPTS = 8
BACKOFF_SECONDS = 0.01
BATCH_WRITE = 25
BATCH_GET = 100
_METHODS = {"GetItem": "get_item", "Query": "query", "Scan": "scan",
            "BatchGetItem": "batch_get_item"}
INDEX_KEYS = {name: (pk, sk) for name, pk, sk in TASK_INDEXES}
"""Key attributes of the indexes not named `{index}pk`/`{index}sk`."""


class ConditionFailed(Exception):
    """A conditional single-item write whose condition did not hold."""


def code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def cancellation_reasons(exc: ClientError) -> list[str]:
    """Why a cancelled transaction was cancelled, action by action ("None" for the rest)."""
    return [r.get("Code", "None") for r in exc.response.get("CancellationReasons", [])]


def pause(attempt: int) -> None:
    """Full jitter: concurrent writers of one item spread out instead of colliding again."""
    time.sleep(random.uniform(0, BACKOFF_SECONDS * 2 ** attempt))


def busy() -> TooManyRequests:
    return TooManyRequests("too many concurrent writes to this agent; send the batch again",
                           headers={"Retry-After": "1"})


class Table:
    """One DynamoDB table and its (lazily made, thread-safe) low-level boto3 client. While the
    table's migration may still have items to move (`layout.py`), a read by key that misses an
    agent's task, chunk, page or claim where it now lives looks where older code put it."""

    def __init__(self, name: str, client: Any = None, clock: Clock = SYSTEM_CLOCK) -> None:
        """`client`: a boto3 DynamoDB client; by default one is made on first use, for the
        region in the environment, and closed with the table. `clock`: what "now" is for
        every concern on the table (expiries, ranks, moves)."""
        self.name = name
        self.clock = clock
        self._client = client
        self._owns_client = client is None
        self._client_lock = threading.Lock()
        self.layout = Layout()
        if client is not None:
            wire.install(client)

    @property
    def client(self) -> Any:
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    self._client = boto3.client("dynamodb")
                    wire.install(self._client)
        return self._client

    def _read(self, operation: str, **params: Any) -> dict[str, Any]:
        """A GetItem, Query, Scan or BatchGetItem (by its name) whose items come back plain
        (`wire`)."""
        with wire.inside():
            response = getattr(self.client, _METHODS[operation])(**params)
        return wire.plain_answer(operation, response)

    def close(self) -> None:
        if self._owns_client and self._client is not None:
            self._client.close()
            self._client = None

    # ---- single items ----------------------------------------------------------------------

    def get(self, key: dict[str, Any], *, consistent: bool = True) -> dict[str, Any] | None:
        """One item (strongly consistent unless told: half the read units)."""
        item = self._read("GetItem", TableName=self.name, Key=key, ConsistentRead=consistent)
        if not item.get("Item") and (old := self._legacy(key)) is not None:
            item = self._read("GetItem", TableName=self.name, Key=old, ConsistentRead=consistent)
        return item.get("Item") or None

    def _legacy(self, key: dict[str, Any]) -> dict[str, Any] | None:
        """Where an older layout kept the item of `key`, while it may still be there."""
        old = legacy_key(key)
        return old if old is not None and self.layout.moving(self) else None

    def update(self, update: Update, returns: str = "NONE") -> dict[str, Any]:
        """One UpdateItem; `ConditionFailed` if its condition does not hold. A plain write to
        an item inside a running transaction is rejected (and botocore does not retry that),
        which happens to the agent item under load: it is retried here."""
        for attempt in range(MAX_ATTEMPTS):
            try:
                response = self.client.update_item(**update.params(self.name),
                                                   ReturnValues=returns)
                return plain(response.get("Attributes", {}))
            except ClientError as exc:
                if code(exc) == "ConditionalCheckFailedException":
                    raise ConditionFailed from exc
                if code(exc) != "TransactionConflictException":
                    raise
                pause(attempt)
        raise busy()

    def put(self, item: dict[str, Any], condition: str | None = None,
            values: dict[str, Any] | None = None, names: dict[str, str] | None = None) -> bool:
        """One PutItem; False (nothing written) if `condition` does not hold."""
        params: dict[str, Any] = {"TableName": self.name, "Item": item}
        if condition:
            params["ConditionExpression"] = condition
        if values:
            params["ExpressionAttributeValues"] = to_item(values)
        if names:
            params["ExpressionAttributeNames"] = names
        try:
            self.client.put_item(**params)
        except ClientError as exc:
            if code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def put_if_absent(self, item: dict[str, Any]) -> bool:
        old = self._legacy({"pk": item["pk"], "sk": item["sk"]})
        if old is not None and self.get(old) is not None:
            return False
        return self.put(item, "attribute_not_exists(pk)")

    def delete(self, key: dict[str, Any], condition: str | None = None,
               values: dict[str, Any] | None = None) -> bool:
        """One DeleteItem; True if an item was there (and `condition` held)."""
        params: dict[str, Any] = {"TableName": self.name, "Key": key, "ReturnValues": "ALL_OLD"}
        if condition:
            params["ConditionExpression"] = condition
        if values:
            params["ExpressionAttributeValues"] = to_item(values)
        try:
            return "Attributes" in self.client.delete_item(**params)
        except ClientError as exc:
            if code(exc) == "ConditionalCheckFailedException":
                return False
            raise

    # ---- several items ---------------------------------------------------------------------

    def transact(self, actions: list[dict[str, Any]]) -> None:
        """The token makes botocore's own retry of a committed transaction a no-op."""
        self.client.transact_write_items(TransactItems=actions,
                                         ClientRequestToken=uuid.uuid4().hex)

    def put_action(self, item: dict[str, Any]) -> dict[str, Any]:
        """A transaction's Put of a new item (cancelled if the item exists)."""
        return {"Put": {"TableName": self.name, "Item": item,
                        "ConditionExpression": "attribute_not_exists(pk)"}}

    def update_action(self, update: Update) -> dict[str, Any]:
        return {"Update": update.params(self.name)}

    def batch_get(self, keys: list[dict[str, Any]], *, consistent: bool = True,
                  projection: Iterable[str] = ()) -> list[dict[str, Any]]:
        """The items that exist of `keys` (strongly consistent unless told), 100 keys per
        request; `projection`: the only attributes to read (all when empty)."""
        found: list[dict[str, Any]] = []
        names = {f"#a{i}": name for i, name in enumerate(projection)}
        for i in range(0, len(keys), BATCH_GET):
            request: dict[str, Any] = {"Keys": keys[i:i + BATCH_GET],
                                       "ConsistentRead": consistent}
            if names:
                request |= {"ProjectionExpression": ", ".join(names),
                            "ExpressionAttributeNames": names}
            pending = {self.name: request}
            for attempt in range(MAX_ATTEMPTS):
                response = self._read("BatchGetItem", RequestItems=pending)
                found += response["Responses"].get(self.name, [])
                pending = response.get("UnprocessedKeys") or {}
                if not pending:
                    break
                pause(attempt)
            else:
                raise busy()
        if (not self.layout.settled and any(legacy_key(key) is not None for key in keys)
                and self.layout.moving(self)):
            return found + self._moved_out(keys, found, consistent, projection)
        return found

    def _moved_out(self, keys: list[dict[str, Any]], found: list[dict[str, Any]],
                   consistent: bool, projection: Iterable[str]) -> list[dict[str, Any]]:
        """What an older layout kept of the `keys` not `found`."""
        have = {(item["pk"], item["sk"]) for item in found}
        old = [legacy for key in keys if (plain(key)["pk"], plain(key)["sk"]) not in have
               and (legacy := legacy_key(key)) is not None]
        return self.batch_get(old, consistent=consistent, projection=projection) if old else []

    def get_all(self, keys: list[dict[str, Any]], *, consistent: bool = True,
                projection: Iterable[str] = ()) -> list[dict[str, Any]]:
        """The items of `keys` that exist, in the order of `keys` (an index page read by key);
        a `projection` gets the keys too."""
        def key_of(item: dict[str, Any]) -> tuple[Any, Any]:
            return item["pk"], item["sk"]

        if projection:
            projection = {"pk": None, "sk": None, **dict.fromkeys(projection)}
        found = {key_of(item): item for item in self.batch_get(keys, consistent=consistent,
                                                               projection=projection)}
        wanted = [(key_of(plain(key)), key_of(plain(legacy_key(key) or key))) for key in keys]
        return [found.get(key) or found[old] for key, old in wanted
                if key in found or old in found]

    def write_all(self, items: list[dict[str, Any]]) -> None:
        """Put every item (unconditionally), 25 per BatchWriteItem."""
        for i in range(0, len(items), BATCH_WRITE):
            pending = {self.name: [{"PutRequest": {"Item": item}}
                                   for item in items[i:i + BATCH_WRITE]]}
            for attempt in range(MAX_ATTEMPTS):
                pending = (self.client.batch_write_item(RequestItems=pending)
                           .get("UnprocessedItems") or {})
                if not pending:
                    break
                pause(attempt)
            else:
                raise busy()

    def query(self, pk: str, sk: str = "", *, index: str = "", forward: bool = True,
              page: int | None = None, projection: Iterable[str] = (), **bounds: str
              ) -> Iterator[dict[str, Any]]:
        """One partition in sort-key order, fetched page by page as the caller consumes it.
        `sk` is a key condition on `#sk` whose values are `bounds` (`:name` for `name=`);
        `projection`: the only attributes to read (all when empty)."""
        for response in self.answers(self.query_params(
                pk, sk, index=index, forward=forward, page=page, projection=projection,
                **bounds)):
            yield from response["Items"]

    def query_params(self, pk: str, sk: str = "", *, index: str = "", forward: bool = True,
                     page: int | None = None, projection: Iterable[str] = (),
                     **bounds: str) -> dict[str, Any]:
        """The arguments of `query`'s Query, for a caller that adds a filter of its own."""
        pk_name, sk_name = INDEX_KEYS.get(index, (f"{index}pk", f"{index}sk"))
        names = {f"#a{i}": name for i, name in enumerate(projection)}
        params: dict[str, Any] = {
            "ScanIndexForward": forward,
            "KeyConditionExpression": "#pk = :pk" + (f" AND {sk}" if sk else ""),
            "ExpressionAttributeNames": {"#pk": pk_name, **({"#sk": sk_name} if sk else {}),
                                         **names},
            "ExpressionAttributeValues": to_item(
                {":pk": pk, **{f":{k}": v for k, v in bounds.items()}})}
        if index:
            params["IndexName"] = index
        else:
            params["ConsistentRead"] = True
        if page:
            params["Limit"] = page
        if names:
            params["ProjectionExpression"] = ", ".join(names)
        return params

    def pages(self, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The items of a Query (`params` without TableName), page by page."""
        for response in self.answers(params):
            yield from response["Items"]

    def scan(self, start: dict[str, Any] | None = None, *, page: int | None = None
             ) -> Iterator[dict[str, Any]]:
        """The whole table, one answer per page of 1 MB (or `page` items): its `Items`, and its
        `LastEvaluatedKey` but for the last; from `start` (such a key) on. Only the table's
        migration scans (`migration.py`)."""
        params: dict[str, Any] = {} if start is None else {"ExclusiveStartKey": start}
        if page:
            params["Limit"] = page
        return self.answers(params, "Scan")

    def answers(self, params: dict[str, Any], operation: str = "Query"
                ) -> Iterator[dict[str, Any]]:
        """The answers to a Query (or a Scan; `params` without TableName), one per page: its
        items and counts (`Count`, and `ScannedCount` before a filter)."""
        params = {"TableName": self.name, **params}
        while True:
            response = self._read(operation, **params)
            yield response
            if "LastEvaluatedKey" not in response:
                return
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]
