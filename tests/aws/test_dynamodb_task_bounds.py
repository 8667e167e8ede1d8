"""DynamoDB task items stay small whatever a task's history: what they record of older events
(digests, page keys) moves to sealed chunks (`codec.tasks.TaskLedger`), a resent batch is still
recognised, also by concurrent senders, and a write to a long task costs what a small item costs.

Sizes are measured on moto's items by DynamoDB's sizing rules (`tests/perf/dynamodb_cost.py`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from bench_core.domain.models import AgentMeta, AgentRef, CleanEvent
from bench_core.store.dynamodb.codec.keys import AgentKeys
from bench_core.store.dynamodb.codec.tasks import PAGES_INLINE, SEEN_INLINE
from bench_core.store.dynamodb.migration import MARKER, migrate
from bench_core.store.dynamodb.store import DynamoStore

from tests.aws.moto_table import TABLE_NAME, dynamo_store
from tests.factories import clean, ev, prose
from tests.perf.dynamodb_cost import Meter, item_size

REF = AgentRef("alice", "long")
META = AgentMeta(slug=REF.slug)
BOUND = 64 * 1024
BATCHES = PAGES_INLINE + 12
"""Batches of `PER_BATCH` events: more pages than a task item holds, and more digests."""
PER_BATCH = 10


@pytest.fixture
def store() -> Iterator[DynamoStore]:
    with dynamo_store() as store:
        yield store


def task_item(store: DynamoStore, task_id: str = "t") -> dict[str, Any]:
    key = AgentKeys(REF.login, REF.slug).key(f"TASK#{task_id}")
    item: dict[str, Any] = store.client.get_item(TableName=TABLE_NAME, Key=key)["Item"]
    return item


def long_task(store: DynamoStore) -> list[list[CleanEvent]]:
    """A task started, then `BATCHES` batches of its logs; the batches."""
    store.ingest.ingest(REF.login, META, clean([ev("task.start", "t", name="long")]))
    batches = [clean([ev("task.log", "t", data={"label": "tick", "n": b * PER_BATCH + i})
                      for i in range(PER_BATCH)]) for b in range(BATCHES)]
    for events in batches:
        assert store.ingest.ingest(REF.login, META, events).accepted == PER_BATCH
    return batches


def test_a_long_task_item_stays_small_and_still_knows_every_event(store: DynamoStore) -> None:
    batches = long_task(store)
    item = task_item(store)
    assert int(item["seen_chunks"]["N"]) >= 1 and int(item["page_chunks"]["N"]) >= 1
    assert len(item.get("seen", {}).get("BS", [])) <= SEEN_INLINE
    assert len(item.get("pages", {}).get("SS", [])) <= PAGES_INLINE
    assert item_size(item) < BOUND
    for events in (batches[0], batches[len(batches) // 2], batches[-1]):
        again = store.ingest.ingest(REF.login, META, events)
        assert (again.accepted, again.duplicates) == (0, PER_BATCH)
    ids = [e["id"] for e in store.ingest.task_events(REF, "t")]
    assert ids[1:] == [e.id for events in batches for e in events]


def test_a_resent_batch_counts_once_under_concurrent_senders(store: DynamoStore) -> None:
    long_task(store)
    resent = [clean([ev("task.log", "t", data={"n": -b - 1}) for _ in range(3)])
              for b in range(4)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(lambda events: store.ingest.ingest(REF.login, META, events),
                                 [events for events in resent for _ in range(2)]))
    assert sum(o.accepted for o in outcomes) == 12
    ids = [e["id"] for e in store.ingest.task_events(REF, "t")]
    assert len(ids) == len(set(ids)) == 1 + BATCHES * PER_BATCH + 12
    assert item_size(task_item(store)) < BOUND


def test_a_batch_to_a_long_task_costs_what_a_small_item_costs(store: DynamoStore) -> None:
    """Before the chunks every write paid for every digest and page key the task had kept:
    a 3-event batch after 6,000 one-event batches cost 802 WRU."""
    long_task(store)
    meter = Meter(TABLE_NAME, boto3.client("dynamodb"))
    meter.attach(store.client)
    three = clean([ev("task.log", "t", data={"n": -1}), ev("task.log", "t", data={"n": -2}),
                   ev("task.end", "t", status="success", output="done")])
    assert store.ingest.ingest(REF.login, META, three).accepted == 3
    task_units = meter.by_kind["agent TASK"][0]
    assert task_units <= 2 * (item_size(task_item(store)) // 1024 + 1) + 16, meter.by_kind
    assert meter.wru <= 60, meter.by_kind


def test_the_migration_brings_an_item_grown_by_the_old_layout_under_the_bound(
        store: DynamoStore) -> None:
    """Before the chunks a task item kept every digest and page key: 6,000 one-event batches
    made it some 400 KB. Reads take such an item as it is; the migration moves the excess."""
    batches = long_task(store)
    item = task_item(store)
    old = [hashlib.sha256(f"old-{n}".encode()).digest()[:8] for n in range(6_000)]
    gone = [f"B#2026-01-01T00:00:00.000Z#{n:032x}" for n in range(2_000)]  # pages expired
    item["seen"] = {"BS": [*item.get("seen", {}).get("BS", []), *old]}
    item["pages"] = {"SS": [*item.get("pages", {}).get("SS", []), *gone]}
    store.client.put_item(TableName=TABLE_NAME, Item=item)
    assert item_size(task_item(store)) > 150_000
    events = [e["id"] for e in store.ingest.task_events(REF, "t")]
    report = migrate(store.table)
    assert report.chunked == 1
    assert item_size(task_item(store)) < BOUND
    assert [e["id"] for e in store.ingest.task_events(REF, "t")] == events
    assert store.ingest.ingest(REF.login, META, batches[0]).accepted == 0
    assert store.ingest.ingest(REF.login, META,
                               clean([ev("task.log", "t", id="old-17", data={})])).accepted == 0
    store.table.delete(MARKER)
    assert migrate(store.table).chunked == 0


def test_a_task_with_the_most_content_it_may_hold_keeps_a_small_item(store: DynamoStore) -> None:
    """A task's content is in its events alone (`store/dynamodb/content.py`): input, output and
    metadata near the field limit (30 KB each) and logs up to theirs, some 200 KB folded, leave
    its item a few KB, and reads give all of it back as the batches sent it."""
    big = prose(1, 30_000)
    start = ev("task.start", "t", name="long", input={"q": big})
    logs = [ev("task.log", "t", data={"label": "step", "text": prose(n, 4000)})
            for n in range(40)]
    end = ev("task.end", "t", status="success", output={"a": prose(2, 30_000)},
             data={"m": prose(3, 30_000)}, duration_ms=5)
    for events in ([start], logs[:20], logs[20:], [end]):
        store.ingest.ingest(REF.login, META, clean(events))
    item = task_item(store)
    assert "content" not in item and item_size(item) < 4 * 1024
    task = store.ingest.get_task(REF, "t")
    assert task is not None and task.input == {"q": big}
    assert task.output == {"a": prose(2, 30_000)} and task.metadata == {
        "m": prose(3, 30_000)}
    assert [log.get("data", {}).get("text") for log in task.logs if "data" in log][:3] == [
        prose(n, 4000) for n in range(3)]
    assert sum(len(json.dumps(log)) for log in task.logs) > 32 * 1024
