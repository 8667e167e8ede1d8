"""A DynamoStore on moto's in-process AWS, on a table built from the deployed definition."""

from __future__ import annotations

import copy
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any
from unittest import mock

import boto3
from bench_core.store.dynamodb import wire
from bench_core.store.dynamodb.store import DynamoStore
from bench_core.store.dynamodb.table import create_table_kwargs
from moto import mock_aws
from moto.core.botocore_stubber import BotocoreStubber
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models.table import Table as MotoTable

TABLE_NAME = "bench-test"
DUMMY_AWS_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                 "AWS_REGION": "us-east-1"}
_ONE_REQUEST_AT_A_TIME = threading.RLock()


@functools.cache
def aws_session() -> boto3.Session:
    """One boto3 session, with the dummy credentials, for every mocked client of the process.
    `mock_aws` gives boto3 a fresh default session each time it starts, and a fresh session
    loads botocore's endpoint and service descriptions again (0.2 s or more per table); clients
    made from this one share what it loaded. moto answers them all the same: it hooks every
    botocore session."""
    return boto3.Session(aws_access_key_id=DUMMY_AWS_ENV["AWS_ACCESS_KEY_ID"],
                         aws_secret_access_key=DUMMY_AWS_ENV["AWS_SECRET_ACCESS_KEY"],
                         aws_session_token=DUMMY_AWS_ENV["AWS_SESSION_TOKEN"],
                         region_name=DUMMY_AWS_ENV["AWS_REGION"])


def table_properties() -> dict[str, Any]:
    """The CloudFormation `Properties` of the table the tests create, read from template.yaml:
    the tests run on the table that is deployed (tests/aws/test_template.py checks that it
    equals the store's TABLE_PROPERTIES)."""
    from tests.aws.cfn import table_properties as deployed_table_properties

    return deployed_table_properties()


def _serialized(process: Callable[..., Any]) -> Callable[..., Any]:
    """moto's backend is not thread-safe (a cancelled transaction restores a copy of the whole
    table taken before it began, erasing what other threads wrote meanwhile). DynamoDB applies
    each request atomically; serving one request at a time makes moto do the same."""

    def locked(self: BotocoreStubber, *args: Any, **kwargs: Any) -> Any:
        with _ONE_REQUEST_AT_A_TIME:
            return process(self, *args, **kwargs)

    return locked


class _TableSnapshots:
    """moto's `copy` module as its DynamoDB backend sees it during one TransactWriteItems.
    moto snapshots a table (to restore it if the transaction is cancelled) once for each item
    of the transaction, all before the first is applied, so all alike: here the table is copied
    once and that copy serves them all. A 25-item transaction on a table of a few hundred items
    took a second of deep copies; now it takes a 25th of that."""

    def __init__(self) -> None:
        self._taken: dict[int, MotoTable] = {}

    def deepcopy(self, value: Any, memo: dict[int, Any] | None = None) -> Any:
        if not isinstance(value, MotoTable):
            return copy.deepcopy(value, memo)
        if id(value) not in self._taken:
            self._taken[id(value)] = copy.deepcopy(value, memo)
        return self._taken[id(value)]


def _snapshot_once(transact: Callable[..., Any]) -> Callable[..., Any]:
    def once(self: Any, transact_items: list[dict[str, Any]]) -> Any:
        with mock.patch.object(dynamodb_models, "copy", _TableSnapshots()):
            return transact(self, transact_items)

    return once


@contextmanager
def dynamo_store(*, slow_reads: bool = False, **options: Any) -> Iterator[DynamoStore]:
    """A fresh table in a fresh mock, with dummy credentials that can reach no real account;
    the environment is restored afterwards. `options` go to the `DynamoStore`, whose client is
    its own (made from the process's `aws_session`, closed after the block); meanwhile
    `boto3.client` (a handler's SSM, Step Functions, ... clients) makes them from that session
    too.

    Every read the store makes must be decoded by its fast path (`wire`): one that is not (the
    hook no longer registered, a read made outside `wire.inside`) fails the block as it ends,
    so the contract suite, which calls every method of every concern, holds each read to it.
    `slow_reads` allows them (a test of the slow fallback itself)."""
    with mock.patch.dict(os.environ, DUMMY_AWS_ENV), \
            mock.patch.object(BotocoreStubber, "process_request",
                              _serialized(BotocoreStubber.process_request)), \
            mock.patch.object(dynamodb_models.DynamoDBBackend, "transact_write_items",
                              _snapshot_once(dynamodb_models.DynamoDBBackend.transact_write_items)), \
            mock_aws(), \
            mock.patch.object(boto3, "DEFAULT_SESSION", aws_session()):
        os.environ.pop("AWS_PROFILE", None)
        client = aws_session().client("dynamodb")
        client.create_table(**create_table_kwargs(TABLE_NAME, table_properties()))
        store = DynamoStore.open(TABLE_NAME, client=client, **options)
        slow: list[str] = []
        client.meta.events.register("after-call.dynamodb", _noting_slow_reads(slow),
                                    unique_id="slow-reads")
        try:
            yield store
        finally:
            store.close()
            client.close()
        assert slow_reads or not slow, f"reads the fast path did not decode: {slow}"


def _noting_slow_reads(slow: list[str]) -> Callable[..., None]:
    """An `after-call` handler noting each read the store made whose answer `wire` did not
    decode. Reads the test makes itself on the store's client are its own business."""

    def note(model: Any, parsed: dict[str, Any], **_: Any) -> None:
        if model.name in wire.ITEMS and wire.DECODED not in parsed and "Error" not in parsed \
                and _made_by_bench_core(sys._getframe(1)):
            slow.append(model.name)

    return note


def _made_by_bench_core(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("bench_core."):
            return True
        frame = frame.f_back
    return False


WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
"""DynamoDB's write operations."""


@contextmanager
def requests_made(client: Any) -> Iterator[list[str]]:
    """The operations asked of `client` meanwhile, by name, in order."""
    made: list[str] = []

    def note(model: Any, **_: Any) -> None:
        made.append(model.name)

    client.meta.events.register("provide-client-params.dynamodb", note, unique_id="requests-made")
    try:
        yield made
    finally:
        client.meta.events.unregister("provide-client-params.dynamodb", unique_id="requests-made")
