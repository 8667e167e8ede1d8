"""A DynamoStore on moto's in-process AWS, on a table built from the deployed definition."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import boto3
from bench_core.store.dynamodb.store import DynamoStore
from bench_core.store.dynamodb.table import create_table_kwargs
from moto import mock_aws
from moto.core.botocore_stubber import BotocoreStubber

TABLE_NAME = "bench-test"
DUMMY_AWS_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                 "AWS_REGION": "us-east-1"}
_ONE_REQUEST_AT_A_TIME = threading.RLock()


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


@contextmanager
def dynamo_store(**options: Any) -> Iterator[DynamoStore]:
    """A fresh table in a fresh mock, with dummy credentials that can reach no real account;
    the environment is restored afterwards. `options` go to the `DynamoStore`."""
    with mock.patch.dict(os.environ, DUMMY_AWS_ENV), \
            mock.patch.object(BotocoreStubber, "process_request",
                              _serialized(BotocoreStubber.process_request)), \
            mock_aws():
        os.environ.pop("AWS_PROFILE", None)
        boto3.client("dynamodb").create_table(
            **create_table_kwargs(TABLE_NAME, table_properties()))
        store = DynamoStore(TABLE_NAME, **options)
        try:
            yield store
        finally:
            store.close()


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
