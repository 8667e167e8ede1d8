"""The DynamoDB adapter's own decoding of read answers (`store.dynamodb.wire`): the values boto3
would give, on every attribute type, through a real botocore client on moto; only for the
adapter's reads, never for other code sharing the client."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.store.dynamodb import wire
from bench_core.store.dynamodb.client import Table
from bench_core.store.dynamodb.codec.values import to_item
from bench_core.store.dynamodb.store import DynamoStore
from boto3.dynamodb.types import Binary, TypeDeserializer
from botocore.exceptions import ClientError

from tests.aws.moto_table import dynamo_store
from tests.factories import clean, task_events

EVERY_TYPE: dict[str, Any] = {
    "pk": {"S": "THING#1"}, "sk": {"S": "META"},
    "text": {"S": "héllo \"quoted\" \\ back"}, "empty": {"S": ""},
    "int": {"N": "42"}, "negative": {"N": "-7.25"}, "exact": {"N": "0.000000000001"},
    "big": {"N": "123456789012345678901234567890"},
    "yes": {"BOOL": True}, "no": {"BOOL": False}, "nothing": {"NULL": True},
    "blob": {"B": base64.b64encode(b"\x00\xffbytes").decode()},
    "texts": {"SS": ["a", "b"]}, "numbers": {"NS": ["1", "2.5"]},
    "blobs": {"BS": [base64.b64encode(b"x").decode(), base64.b64encode(b"\x01").decode()]},
    "list": {"L": [{"S": "a"}, {"N": "1"}, {"L": [{"NULL": True}]}, {"M": {"k": {"BOOL": True}}}]},
    "map": {"M": {"inner": {"M": {"n": {"N": "3"}, "s": {"SS": ["z"]}}}, "b": {"B": "AA=="}}},
}


def as_boto3(value: Any) -> Any:
    """boto3's values with its `Binary` wrappers as bytes (what `wire` gives)."""
    if isinstance(value, Binary):
        return bytes(value)
    if isinstance(value, dict):
        return {k: as_boto3(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_boto3(v) for v in value]
    if isinstance(value, set):
        return {as_boto3(v) for v in value}
    return value


def parsed(av: dict[str, Any]) -> dict[str, Any]:
    """An AttributeValue as botocore hands it over (binaries as bytes, not base64 text)."""
    (kind, raw), = av.items()
    if kind == "B":
        return {"B": base64.b64decode(raw)}
    if kind == "BS":
        return {"BS": [base64.b64decode(b) for b in raw]}
    if kind == "L":
        return {"L": [parsed(v) for v in raw]}
    if kind == "M":
        return {"M": {k: parsed(v) for k, v in raw.items()}}
    return av


def test_every_attribute_type_decodes_to_what_boto3_gives() -> None:
    """The wire form (base64 text for binaries) against boto3's deserializer of the parsed form
    (bytes), attribute by attribute."""
    reference = {name: as_boto3(TypeDeserializer().deserialize(parsed(av)))
                 for name, av in EVERY_TYPE.items()}
    decoded = wire.item(EVERY_TYPE)
    assert decoded == reference
    assert isinstance(decoded["int"], Decimal) and decoded["blob"] == b"\x00\xffbytes"
    assert decoded["map"]["inner"]["n"] == Decimal(3)


def test_an_unknown_attribute_type_is_an_error_not_a_guess() -> None:
    with pytest.raises(ValueError, match="unknown DynamoDB attribute type 'X'"):
        wire.item({"odd": {"X": "1"}})


def test_the_adapter_reads_plain_values_while_the_same_client_answers_others_as_boto3_does(
) -> None:
    with dynamo_store() as store:
        client, table = store.client, Table(store.table_name, store.client)
        client.put_item(TableName=store.table_name,
                        Item={name: parsed(av) for name, av in EVERY_TYPE.items()})
        key = {"pk": EVERY_TYPE["pk"], "sk": EVERY_TYPE["sk"]}
        expected = wire.item(EVERY_TYPE)
        assert table.get(key) == expected
        assert table.batch_get([key]) == [expected]
        assert list(table.query("THING#1")) == [expected]
        raw = client.get_item(TableName=store.table_name, Key=key)["Item"]
        assert raw["int"] == {"N": "42"} and raw["blob"] == {"B": b"\x00\xffbytes"}
        assert client.query(TableName=store.table_name, KeyConditionExpression="pk = :p",
                            ExpressionAttributeValues={":p": {"S": "THING#1"}}
                            )["Items"] == [raw]


def test_a_query_read_in_pages_keeps_its_keys_to_read_on_and_a_projection() -> None:
    """The answer's items go through `wire`, the rest (LastEvaluatedKey) through botocore."""
    with dynamo_store() as store:
        table = store.table
        table.write_all([to_item({"pk": "P", "sk": f"S{i}", "n": i, "other": "x"})
                         for i in range(7)])
        pages: list[int] = []
        store.client.meta.events.register(
            "after-call.dynamodb.Query",
            lambda parsed, **_: pages.append(len(parsed["Items"])))
        items = list(table.query("P", page=3, projection=("sk", "n")))
        assert [item["n"] for item in items] == list(range(7))
        assert all(set(item) == {"sk", "n"} for item in items)
        assert pages == [3, 3, 1]


def test_errors_are_botocores_as_ever() -> None:
    with dynamo_store() as store:
        missing = Table("no-such-table", store.client)
        with pytest.raises(ClientError) as raised:
            missing.get(to_item({"pk": "a", "sk": "b"}))
        assert raised.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_an_answer_the_hook_did_not_decode_is_still_read_plain() -> None:
    """Were botocore to stop emitting `before-parse`, reads would be slower, not wrong."""
    with dynamo_store(slow_reads=True) as store:
        client = store.client
        client.put_item(TableName=store.table_name,
                        Item={name: parsed(av) for name, av in EVERY_TYPE.items()})
        table = Table(store.table_name, client)
        client.meta.events.unregister("before-parse.dynamodb", unique_id="bench-plain-reads")
        key = {"pk": EVERY_TYPE["pk"], "sk": EVERY_TYPE["sk"]}
        expected = wire.item(EVERY_TYPE)
        item = table.get(key)
        assert item is not None and isinstance(item["blob"], Binary)  # boto3's way, not ours
        assert as_boto3(item) == expected
        assert [as_boto3(i) for i in table.batch_get([key])] == [expected]
        assert [as_boto3(i) for i in table.query("THING#1")] == [expected]


def without_the_hook(store: DynamoStore, _: pytest.MonkeyPatch) -> None:
    store.client.meta.events.unregister("before-parse.dynamodb", unique_id="bench-plain-reads")


def outside_the_context(_: DynamoStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "inside", contextlib.nullcontext)


@pytest.mark.parametrize("bypass", [without_the_hook, outside_the_context])
def test_a_read_the_fast_path_did_not_decode_fails_the_test_that_made_it(
        bypass: Callable[[DynamoStore, pytest.MonkeyPatch], None],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's store holds every read to the fast path (`moto_table.dynamo_store`): the
    GetItem, Query and BatchGetItem of a run's read, the agent's, the lists'. The slow fallback
    would answer them alike, and nothing else would notice."""
    ref = AgentRef("alice", "agent-1")
    for read in (lambda s: s.agents.get_agent(ref), lambda s: s.agents.list_agents("alice"),
                 lambda s: s.runs.run_head(ref, "root")):
        with pytest.raises(AssertionError, match="reads the fast path did not decode"), dynamo_store() as store:
            store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(task_events("root")))
            bypass(store, monkeypatch)
            read(store)
        monkeypatch.undo()
